"""A draft opened once: its checkpoint, its config, its trainer format and key layout.

`doctor` used to hand the draft's path to every analysis, and each opened it again (the
safetensors header twice, config.json twice, the target's config and the log twice each). Every
analysis of a command now takes this one value; the calls that take a path open it themselves,
so the public API is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.checkpoint.config import (
    DraftConfig,
    TargetConfig,
    architectures,
    parse_draft_config,
    parse_target_config,
    read_json,
)
from kit.checkpoint.files import Checkpoint, open_checkpoint
from kit.checkpoint.hub import is_remote

if TYPE_CHECKING:
    from kit.checkpoint.formats import FormatGuess

WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth")


def has_weights(path: Path) -> bool:
    """A file, a folder holding tensors (a folder with only config.json is a config), or a Hub
    checkpoint whose tensors are read by range."""
    return path.is_file() or any(any(path.glob(p)) for p in WEIGHT_PATTERNS) or is_remote(path)


def looks_like_draft(ck: Checkpoint) -> bool:
    """A checkpoint with an `fc` (the aux-state projection) is a draft's, whatever its config."""
    return "fc.weight" in ck.tensors or "model.fc.weight" in ck.tensors


def classify_config(raw: dict, path: Path, ck: Checkpoint | None) -> DraftConfig | TargetConfig:
    """A config.json as read: a draft's when it says so (or its checkpoint looks like one),
    else a target's."""
    archs = " ".join(architectures(raw, path))
    is_draft = (
        "transformer_layer_config" in raw
        or "draft_vocab_size" in raw
        or "eagle_config" in raw
        or "eagle" in archs.lower()
        or (ck is not None and looks_like_draft(ck))
    )
    if is_draft:
        return parse_draft_config(raw, path)
    return parse_target_config(raw, path)


@dataclass
class Draft:
    """One draft as read from disk: `checkpoint` is None for a config-only folder; `raw` is its
    config.json as read (None when it has none)."""

    path: Path
    checkpoint: Checkpoint | None
    raw: dict[str, Any] | None
    config_path: Path | None

    @cached_property
    def config(self) -> DraftConfig | TargetConfig | None:
        """The config as inspection reads it: a draft's, or a target's when it is none."""
        if self.raw is None or self.config_path is None:
            return None
        return classify_config(self.raw, self.config_path, self.checkpoint)

    @cached_property
    def draft_config(self) -> DraftConfig:
        """The config read as a draft's, whatever it looks like (the load replay, the trace)."""
        if isinstance(self.config, DraftConfig):
            return self.config
        if self.raw is None:
            return _read_draft_config(self.path)  # raises the one clear error
        return parse_draft_config(self.raw, self.config_path)

    @cached_property
    def format(self) -> FormatGuess:
        from kit.checkpoint.formats import detect_format

        if self.checkpoint is None:
            raise ValueError(f"{self.path}: a config alone has no trainer format to detect")
        cfg = self.config if isinstance(self.config, DraftConfig) else None
        return detect_format(self.checkpoint, cfg)

    @cached_property
    def layout(self) -> str | None:
        from kit.checkpoint.formats import detect_layout

        return detect_layout(self.checkpoint.keys()) if self.checkpoint is not None else None


def _read_draft_config(path: Path) -> DraftConfig:
    from kit.checkpoint.config import load_draft_config

    return load_draft_config(path)


def _config_file(p: Path) -> Path:
    return p / "config.json" if p.is_dir() else p


def open_draft(path: str | Path | Draft, *, weights: bool | None = None) -> Draft:
    """Open a draft once. `weights` True: the path must be a checkpoint (its errors are
    `open_checkpoint`'s); None: a folder holding only config.json opens as a config."""
    if isinstance(path, Draft):
        return path
    p = Path(path)
    ck = open_checkpoint(p) if weights or (weights is None and has_weights(p)) else None
    config_path = ck.config_path if ck is not None else _config_file(p)
    raw = read_json(config_path) if config_path is not None and config_path.is_file() else None
    return Draft(p, ck, raw, config_path if raw is not None else None)
