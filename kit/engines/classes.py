"""Draft classes: the EAGLE-3 draft architectures an engine release registers, and the shape of
draft each one builds.

An engine builds the module its registry holds under the name the draft config's
`architectures` gives (after the engine's own renames); a name it does not hold stops the server
at start-up, with the engine's own message. What a class builds depends on its attention: the
Llama draft's grouped-query attention (`q_proj`, `k_proj`, `v_proj`), the same with per-head
`q_norm` / `k_norm` (vLLM's Qwen3 draft), or DeepSeek's multi-head latent attention (MLA:
`q_a_proj`, `kv_a_proj_with_mqa`, `kv_b_proj` …, sized by `kv_lora_rank`, `qk_rope_head_dim` …).
A draft's shape is read from its config fields and its tensors, never from its name alone, so a
draft registered under the wrong name is told apart from one of the wrong shape, and `kit fix`
writes the class the release registers for the shape it has. Each engine package lists its
classes release by release in its `registry` module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, VersionRange


class Shape(StrEnum):
    """The attention a draft class builds, which decides every layer tensor's name."""

    LLAMA = "llama"  # grouped-query attention: q_proj, k_proj, v_proj, o_proj
    QWEN3 = "qwen3"  # the same with per-head q_norm / k_norm
    MLA = "mla"  # multi-head latent attention: q_a_proj, kv_a_proj_with_mqa, kv_b_proj …
    MOE = "moe"  # grouped-query attention with a mixture-of-experts MLP: router, experts

    @property
    def words(self) -> str:
        return {
            Shape.LLAMA: "Llama-style (grouped-query attention)",
            Shape.QWEN3: "Qwen3-style (grouped-query attention with q_norm / k_norm)",
            Shape.MLA: "MLA (DeepSeek multi-head latent attention)",
            Shape.MOE: "mixture-of-experts (a routed MLP)",
        }[self]


@dataclass(frozen=True)
class DraftClass:
    """One registered draft architecture: its name, what it builds, the releases that hold it,
    and where."""

    name: str
    shape: Shape
    versions: VersionRange
    source: str


# A config field set (non-null) only by MLA configs, and the checkpoint names only MLA layers have.
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
MLA_KEYS = (".q_a_proj.", ".kv_a_proj_with_mqa.", ".kv_b_proj.", ".q_b_proj.")
QWEN3_KEYS = (".q_norm.", ".k_norm.")
MOE_KEYS = (".mlp.experts.", ".mlp.router.", ".mlp.gate.weight")


def shape_evidence(cfg: DraftConfig, keys: Iterable[str] = ()) -> tuple[Shape, list[str]]:
    """The draft's shape and what says so: MLA when its config sets `kv_lora_rank` or its
    tensors are MLA projections; mixture-of-experts when its MLP has a router and experts (a
    config's expert counts say nothing: SpecForge writes them into dense drafts too); Qwen3 when
    its layers carry `q_norm` / `k_norm`; Llama otherwise (a config's model_type says nothing
    either: SpecForge's Llama drafts for Qwen3 targets are written as qwen3)."""
    layer = cfg.raw.get("transformer_layer_config", cfg.raw)
    layer = layer if isinstance(layer, dict) else {}
    keys = list(keys)
    fields = [f"{f}: {layer[f]}" for f in MLA_FIELDS if layer.get(f) is not None]
    mla_keys = [k for k in keys if any(m in f".{k}" for m in MLA_KEYS)]
    if layer.get("kv_lora_rank") is not None or mla_keys:
        return Shape.MLA, [*fields, *mla_keys[:3]]
    moe_keys = [k for k in keys if any(m in f".{k}" for m in MOE_KEYS)]
    if moe_keys:
        return Shape.MOE, moe_keys[:3]
    qk_norms = [k for k in keys if any(m in f".{k}" for m in QWEN3_KEYS)]
    if qk_norms:
        return Shape.QWEN3, qk_norms[:2]
    return Shape.LLAMA, []


def shape_of(cfg: DraftConfig, keys: Iterable[str] = ()) -> Shape:
    return shape_evidence(cfg, keys)[0]


def registered(classes: Sequence[DraftClass], release: EngineRelease) -> dict[str, DraftClass]:
    """The classes this release holds, by name."""
    return {c.name: c for c in classes if release in c.versions}


def class_for(
    classes: Sequence[DraftClass], shape: Shape, release: EngineRelease
) -> DraftClass | None:
    """The first class (in the table's order of preference) this release holds for `shape`."""
    return next((c for c in classes if c.shape is shape and release in c.versions), None)


def first_release_for(
    classes: Sequence[DraftClass], shape: Shape, releases: Sequence[EngineRelease]
) -> EngineRelease | None:
    """The oldest of `releases` that registers a class for `shape`."""
    return next((r for r in releases if class_for(classes, shape, r) is not None), None)
