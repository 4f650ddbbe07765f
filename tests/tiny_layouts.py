"""Tiny draft checkpoints written as real safetensors files, for the engine-replay tests.

Dimensions are the bundled speculators sample's (hidden 32, heads 4/2 × 8, intermediate 64,
vocab 64, draft vocab 16), so shapes agree with every config built here.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.load.replay import simulate_load

DATA = Path(__file__).resolve().parent.parent / "data"

LAYER = {
    "self_attn.q_proj.weight": (32, 64),
    "self_attn.k_proj.weight": (16, 64),
    "self_attn.v_proj.weight": (16, 64),
    "self_attn.o_proj.weight": (32, 32),
    "mlp.gate_proj.weight": (64, 32),
    "mlp.up_proj.weight": (64, 32),
    "mlp.down_proj.weight": (32, 64),
    "input_layernorm.weight": (32,),
    "hidden_norm.weight": (32,),
    "post_attention_layernorm.weight": (32,),
}
# SpecForge / ModelOpt style flat LlamaConfig of the same dimensions
FLAT = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "intermediate_size": 64,
    "vocab_size": 64,
    "draft_vocab_size": 16,
    "num_hidden_layers": 1,
    "tie_word_embeddings": False,
}


def write(folder: Path, keys: dict[str, tuple[int, ...]], config: dict) -> Path:
    """A checkpoint with exactly these keys and shapes (d2t identity, t2d all true)."""
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name, shape in keys.items():
        if name == "d2t":
            tensors[name] = torch.zeros(shape, dtype=torch.int64)
        elif name == "t2d":
            tensors[name] = torch.ones(shape, dtype=torch.bool)
        else:
            tensors[name] = torch.randn(shape).to(torch.bfloat16)
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def sim(folder: Path, engine: str):
    """The load replay of the checkpoint in `folder` under one engine release."""
    return simulate_load(open_checkpoint(folder), load_draft_config(folder), engine)


def speculators_multilayer(
    folder: Path, layers: int = 2, aux_ids: tuple[int, ...] = (2, 8, 16, 29)
) -> Path:
    """A speculators-trainer draft with `layers` decoder layers and len(aux_ids) aux states:
    layer 0 has hidden_norm, later layers are plain decoder layers (in-dim H, no hidden_norm)."""
    from kit.checkpoint.formats import speculators_config

    layer_cfg = {
        k.lower(): v for k, v in FLAT.items() if k not in ("architectures", "draft_vocab_size")
    }
    layer_cfg |= {"num_hidden_layers": layers, "rms_norm_eps": 1e-6}
    keys: dict[str, tuple[int, ...]] = {}
    for i in range(layers):
        for name, shape in LAYER.items():
            if i and name == "hidden_norm.weight":
                continue
            if i and name.startswith("self_attn.") and name != "self_attn.o_proj.weight":
                shape = (shape[0], 32)  # later layers attend over H, not 2H
            keys[f"layers.{i}.{name}"] = shape
    keys |= {"fc.weight": (32, 32 * len(aux_ids)), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    keys |= {"embed_tokens.weight": (64, 32), "d2t": (16,), "t2d": (64,)}
    config = speculators_config(
        layer_cfg,
        draft_vocab_size=16,
        aux_layer_ids=list(aux_ids),
        speculative_tokens=3,
        verifier={"architectures": ["LlamaForCausalLM"], "name_or_path": "tiny-target"},
    )
    return write(folder, keys, config)
