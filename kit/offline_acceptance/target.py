"""The target model of an offline run: which device(s) it runs on, and what memory it took.

A small target runs on the CPU in float32 (the default, and what the tests pin). A larger one
runs on a GPU in its own dtype (`device="cuda"`), and one that fits on no single device is
spread over every visible one by accelerate (`device_map="auto"`); transformers reads sharded
safetensors checkpoints (`model.safetensors.index.json`) either way. The draft runs on `device`
and takes the target's hidden states wherever its layers left them.
"""

from __future__ import annotations

import resource
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

import torch

from kit.checkpoint.files import folder_state
from kit.errors import KitError


class DeviceMap(StrEnum):
    """accelerate's placements for a target spread over several devices."""

    AUTO = "auto"
    BALANCED = "balanced"
    BALANCED_LOW_0 = "balanced_low_0"
    SEQUENTIAL = "sequential"


def check_device(device: str) -> None:
    """A device torch can name and this machine has, or one clear error."""
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise KitError(f"unknown device {device!r}; use cpu or cuda") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise KitError(f"device {device!r}: this torch build sees no CUDA device; use cpu")


# Targets loaded in this process, while something still holds them: a notebook re-run, or
# `doctor` beside an offline matrix, gets the model it already has (and with it the target's
# cached continuations, measure.continued) instead of a second copy. Weak, so a dropped target
# is freed as before; keyed by the folder's files as they are on disk, so a retrained target
# written to the same folder is loaded anew.
_LOADED: weakref.WeakValueDictionary[tuple, Any] = weakref.WeakValueDictionary()


def load_target(
    target_dir: str | Path, device: str = "cpu", device_map: DeviceMap | str | None = None
):
    """A transformers causal LM in eval mode: float32 on CPU, its own dtype on a GPU, or spread
    over every visible device (`device_map`, needs accelerate). The same folder, unchanged,
    asked for again while the first model is alive, is that model."""
    check_device(device)
    p = Path(target_dir)
    if not (p / "config.json").is_file():
        raise KitError("not a transformers model folder (no config.json)", p)
    key = (folder_state(p), device, None if device_map is None else str(DeviceMap(device_map)))
    model = _LOADED.get(key)
    if model is None:
        model = _LOADED[key] = _from_pretrained(p, device, device_map)
    return model


def _from_pretrained(p: Path, device: str, device_map: DeviceMap | str | None):
    from transformers import AutoModelForCausalLM

    placement: dict[str, Any] = {}
    if device_map is not None:
        placement["device_map"] = str(DeviceMap(device_map))
    on_cpu = device == "cpu" and (device_map is None or not torch.cuda.is_available())
    try:
        with _bar_on_terminal_only():
            model = AutoModelForCausalLM.from_pretrained(
                p, dtype=torch.float32 if on_cpu else "auto", **placement
            )
    except (OSError, ValueError) as e:
        raise KitError(f"cannot load the target: {str(e).splitlines()[0]}", p) from None
    if device_map is None:
        model = model.to(device)
    return model.eval()


@contextmanager
def _bar_on_terminal_only() -> Iterator[None]:
    """transformers' weight-loading bar, on a terminal only: in a pipe or a CI log its
    carriage-return updates would pile up on one line."""
    from transformers.utils import logging as hf_logging

    quiet = not sys.stderr.isatty() and hf_logging.is_progress_bar_enabled()
    if quiet:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if quiet:
            hf_logging.enable_progress_bar()


def input_device(target) -> torch.device:
    """Where the target takes its input ids: its embedding's device (the first of a map)."""
    return target.get_input_embeddings().weight.device


def reset_peak_memory() -> None:
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            torch.cuda.reset_peak_memory_stats(i)


def peak_memory() -> dict[str, float]:
    """Peak resident memory of this process (MB) and, per GPU, peak allocated by torch (MB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"cpu_peak_rss_mb": round(rss / (1024 if sys.platform != "darwin" else 1024**2), 1)}
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            out[f"cuda:{i}_peak_mb"] = round(torch.cuda.max_memory_allocated(i) / 2**20, 1)
    return out
