"""The draft's rotary embedding as the engines build it from its config (kit/tracing/rotary.py).

Checked against transformers' own RoPE initialisers, which vLLM's and SGLang's rotary layers
follow (vLLM 0.32.0 `rotary_embedding/yarn_scaling_rope.py`, `llama3_rope.py`); the real engine
pins the YaRN figure on ModelOpt's export in tests_engine (engine and kit count the same verify
steps only with it)."""

from __future__ import annotations

import json

import pytest
import torch
from tiny_layouts import DATA
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from kit.checkpoint.config import load_draft_config, parse_draft_config
from kit.errors import KitError
from kit.tracing.rotary import rotary

MODELOPT = DATA / "samples" / "modelopt-0.47.0"
SPECFORGE = DATA / "samples" / "specforge-0.2.0-sglang"


def test_modelopt_injected_yarn_is_transformers_yarn():
    """ModelOpt's export-time YaRN (factor 32 over 2048): the interpolated low frequencies and
    the attention factor 0.1·ln 32 + 1, as transformers computes them."""
    cfg = load_draft_config(MODELOPT)
    hf = LlamaConfig(**json.loads((MODELOPT / "config.json").read_text()))
    inv, factor = ROPE_INIT_FUNCTIONS["yarn"](hf, "cpu")
    got = rotary(cfg, cfg.head_dim)
    assert got.kind == "yarn"
    assert torch.allclose(got.inv_freq, inv.float(), rtol=1e-6)
    assert got.mscale == pytest.approx(factor) == pytest.approx(1.3465735902799727)
    plain = rotary(load_draft_config(SPECFORGE), cfg.head_dim)
    assert not torch.allclose(got.inv_freq, plain.inv_freq)  # the scaling changes something


def test_llama3_scaling_is_transformers_llama3():
    raw = json.loads((SPECFORGE / "config.json").read_text())
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}  # fmt: skip
    raw.update(rope_scaling=scaling, rope_parameters={**scaling, "rope_theta": 10000.0})
    hf = LlamaConfig(**raw)
    inv, _ = ROPE_INIT_FUNCTIONS["llama3"](hf, "cpu")
    got = rotary(parse_draft_config(raw), 32)
    assert got.kind == "llama3" and got.mscale == 1.0
    assert torch.allclose(got.inv_freq, inv.float(), rtol=1e-6)


def test_plain_rope_rotates_without_scale():
    got = rotary(load_draft_config(SPECFORGE), 32)
    x = torch.randn(1, 5, 2, 32)
    pos = torch.arange(5)
    out = got(x, pos)
    assert got.kind == "default" and got.mscale == 1.0
    assert torch.allclose(out.norm(dim=-1), x.norm(dim=-1), atol=1e-5)  # a pure rotation
    assert torch.equal(out[:, 0], x[:, 0])  # position 0 is not rotated


def test_a_kind_the_kit_does_not_model_is_named():
    raw = json.loads((SPECFORGE / "config.json").read_text())
    raw["rope_scaling"] = {"rope_type": "longrope", "factor": 4.0}
    with pytest.raises(KitError, match="'longrope' is not modelled"):
        rotary(parse_draft_config(raw), 32)
