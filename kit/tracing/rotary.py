"""The draft's rotary embedding as the engines build it from its config: plain RoPE, or the
scaling the config names.

A draft config may carry a `rope_scaling` (transformers 4) or scaled `rope_parameters`
(transformers 5) of its own, and the engines apply it to the draft's attention: ModelOpt writes
YaRN into every export trained with plain RoPE (nvidia-modelopt 0.47.0
`torch/speculative/config.py:380-381`, `torch/export/plugins/hf_spec_export.py:213-218`), and a
draft that copies a Llama 3.1 target's config carries its `llama3` scaling. Both vLLM and SGLang
build the draft layer's rotary from the config (vLLM 0.32.0
`model_executor/layers/rotary_embedding/__init__.py:243-281`; SGLang 0.5.23
`srt/layers/rotary_embedding/factory.py:311-335`), with the same YaRN: frequencies interpolated
by `factor` below the correction range and kept above it, and `cos` / `sin` scaled by
`mscale = 0.1·ln(factor) + 1` (vLLM `rotary_embedding/yarn_scaling_rope.py:35-85`,
`common.py:34-76`; SGLang `rotary_embedding/yarn.py:91-160`), so queries and keys each carry the
attention factor. Kinds no draft config of a trainer was seen to write are refused by name rather
than run as plain RoPE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from kit.checkpoint.config import DraftConfig, read_rope
from kit.errors import KitError

PLAIN = ("default", "mrope")  # mrope with one position per token is plain RoPE


@dataclass(frozen=True)
class Rotary:
    """Inverse frequencies and the cos / sin scale of one head width."""

    inv_freq: torch.Tensor  # [hd / 2]
    mscale: float
    kind: str

    def __call__(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Neox-style rotation of the last dim of `x` [..., T, heads, hd]."""
        hd = x.shape[-1]
        inv = self.inv_freq.to(x.device)
        ang = positions.to(torch.float32)[..., :, None] * inv  # [..., T, hd/2]
        cos = (ang.cos() * self.mscale)[..., None, :]
        sin = (ang.sin() * self.mscale)[..., None, :]
        x1, x2 = x[..., : hd // 2].float(), x[..., hd // 2 :].float()
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).to(x.dtype)


def rotary(cfg: DraftConfig, head_dim: int) -> Rotary:
    """The rotary embedding the engines build for this draft config's attention."""
    layer = cfg.raw.get("transformer_layer_config", cfg.raw)
    scaling = read_rope(layer if isinstance(layer, dict) else cfg.raw).scaling
    theta = cfg.rope_theta
    base = 1.0 / theta ** (_halves(head_dim) / head_dim)
    kind = str((scaling or {}).get("rope_type") or "default")
    if scaling is None or kind in PLAIN:
        return Rotary(base, 1.0, "default")
    if kind == "yarn":
        return _yarn(scaling, theta, head_dim)
    if kind == "linear":
        return Rotary(base / float(scaling["factor"]), 1.0, kind)
    if kind == "llama3":
        return Rotary(_llama3(base, scaling), 1.0, kind)
    raise KitError(
        f"the draft's rope scaling {kind!r} is not modelled by the kit's reference draft "
        "(plain, linear, llama3 and yarn are)",
        cfg.path,
    )


def _halves(hd: int) -> torch.Tensor:
    """0, 2, 4 … hd-2 on the CPU, also inside a meta-device build (a meta tensor here would run
    torch's Python meta kernels, which import sympy)."""
    return torch.arange(0, hd, 2, dtype=torch.float32, device="cpu")


def _yarn(s: dict[str, Any], theta: float, hd: int) -> Rotary:
    factor = float(s["factor"])
    original = float(s.get("original_max_position_embeddings", 2048))
    fast, slow = float(s.get("beta_fast", 32)), float(s.get("beta_slow", 1))

    def dim(rotations: float) -> float:
        return hd * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = dim(fast), dim(slow)
    if s.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, hd - 1)
    if low == high:
        high += 0.001
    ramp = ((_halves(hd) / 2 - low) / (high - low)).clamp(0, 1)
    keep = 1 - ramp  # 1: extrapolate (the trained frequency), 0: interpolate by `factor`
    pos = theta ** (_halves(hd) / hd)
    inv = (1.0 / (factor * pos)) * (1 - keep) + (1.0 / pos) * keep
    return Rotary(inv, _mscale(s, factor), "yarn")


def _mscale(s: dict[str, Any], factor: float) -> float:
    """YaRN's attention factor: given (vLLM's `attention_factor`, SGLang's `attn_factor`), or
    from `mscale` / `mscale_all_dim`, else 0.1·ln(factor) + 1."""

    def get(m: float) -> float:
        return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0

    if s.get("attention_factor") is not None:
        return float(s["attention_factor"])
    if s.get("mscale") and s.get("mscale_all_dim"):
        value = get(float(s["mscale"])) / get(float(s["mscale_all_dim"]))
    else:
        value = get(1.0)
    return value * float(s.get("attn_factor", 1.0))


def _llama3(inv: torch.Tensor, s: dict[str, Any]) -> torch.Tensor:
    """Llama 3.1's frequency-dependent scaling (vLLM `rotary_embedding/llama3_rope.py`)."""
    factor, low_f, high_f = (float(s[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
    original = float(s["original_max_position_embeddings"])
    low_wavelen, high_wavelen = original / low_f, original / high_f
    wavelen = 2 * math.pi / inv
    smooth = (original / wavelen - low_f) / (high_f - low_f) if high_f != low_f else 0
    mid = (1 - smooth) * inv / factor + smooth * inv
    return torch.where(
        wavelen < high_wavelen, inv, torch.where(wavelen > low_wavelen, inv / factor, mid)
    )
