"""The bundled incident as the team held it: configs, launch line, logs and the draft checkpoint.

The draft checkpoint is the one their trainer wrote: the `speculators` 0.9.0 layout (decoder layer
as `layers.0.*`, the verifier's `embed_tokens` copied in, `fc` over three aux states, a reduced
vocabulary with `d2t` / `t2d`) at Kimi-K2.5's real dimensions (hidden 7168, vocab 163840, draft
vocab 32000): 4.3 GB declared. It is written on first use, header first and sparse
(`kit.checkpoint.sparse`): every key, dtype and shape is real; the values are seeded stand-ins for
the trained ones, present where the kit's sampled statistics read (so the weights look trained,
as the team's did) and zero elsewhere. Nothing in it tells the kit which fault the incident had:
the verdict has to come from the key names, the configs, the launch line and the logs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.sparse import Sparse, write_sparse
from kit.errors import KitError
from kit.report.notebook import ROOT

INCIDENT = ROOT / "data" / "incident"
DRAFT = INCIDENT / "kimi-k2.5" / "draft"
TARGET_CONFIG = INCIDENT / "kimi-k2.5" / "target"
LAUNCH = INCIDENT / "launch.sh"
LOGS = tuple(INCIDENT / "logs" / f"{n}.log" for n in ("before", "after-rename", "after-both-fixes"))
BASELINE_LOG = INCIDENT / "logs" / "baseline-no-spec.log"
WEIGHTS = "model.safetensors"
SEED = 20260302  # the day of the incident's first log


def draft_checkpoint(folder: Path = DRAFT) -> Path:
    """The team's draft folder, its `model.safetensors` written first if it is not there yet
    (well under a second: a few MB of values in a sparse file)."""
    weights = folder / WEIGHTS
    if not weights.is_file():
        try:
            write_sparse(weights, _tensors(folder), _Fill(SEED), {"format": "pt"})
        except OSError as e:
            raise KitError(
                f"cannot write the incident draft checkpoint: {e.strerror}", weights
            ) from None
    return folder


def _tensors(folder: Path) -> dict[str, Sparse | np.ndarray]:
    """Every tensor the speculators 0.9.0 trainer saves for this config, at its shape."""
    cfg = load_draft_config(folder)
    h, heads, kv, hd = (
        cfg.hidden_size,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        cfg.head_dim,
    )
    inter, vocab, dvocab = cfg.intermediate_size, cfg.vocab_size, cfg.draft_vocab_size
    aux = len(cfg.aux_layer_ids or (0, 0, 0))

    def bf16(*shape: int) -> Sparse:
        return Sparse("BF16", shape)

    layer = {
        "hidden_norm.weight": bf16(h),
        "input_layernorm.weight": bf16(h),
        "post_attention_layernorm.weight": bf16(h),
        "self_attn.q_proj.weight": bf16(heads * hd, 2 * h),
        "self_attn.k_proj.weight": bf16(kv * hd, 2 * h),
        "self_attn.v_proj.weight": bf16(kv * hd, 2 * h),
        "self_attn.o_proj.weight": bf16(h, heads * hd),
        "mlp.gate_proj.weight": bf16(inter, h),
        "mlp.up_proj.weight": bf16(inter, h),
        "mlp.down_proj.weight": bf16(h, inter),
    }
    kept = np.sort(np.random.default_rng(SEED).choice(vocab, dvocab, replace=False))
    t2d = np.zeros(vocab, dtype=np.bool_)
    t2d[kept] = True
    return {
        "embed_tokens.weight": bf16(vocab, h),
        "fc.weight": bf16(h, aux * h),
        **{f"layers.0.{name}": t for name, t in layer.items()},
        "lm_head.weight": bf16(dvocab, h),
        "norm.weight": bf16(h),
        "d2t": (kept - np.arange(dvocab)).astype(np.int64),
        "t2d": t2d,
    }


class _Fill:
    """Values like a trained draft's: norm weights spread around 1, linear weights heavy-tailed
    (Student-t, 4 degrees of freedom) rather than a fresh init's Gaussian; seeded per tensor."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.drawn: dict[str, np.random.Generator] = {}

    def __call__(self, name: str, count: int) -> np.ndarray:
        if name not in self.drawn:
            key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")
            self.drawn[name] = np.random.default_rng([self.seed, key])
        rng = self.drawn[name]
        if "norm" in name:
            return (1.0 + 0.08 * rng.standard_t(4, count)).astype(np.float32)
        return (0.018 * rng.standard_t(4, count) + 0.0005).astype(np.float32)
