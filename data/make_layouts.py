"""Write one tiny draft checkpoint + config.json per trainer layout into data/layouts/<name>/.

Each mirrors what its trainer really writes (docs/conventions.md#trainers-checkpoint-layouts): key
names, which tensors are present (embed_tokens, d2t, t2d), dtypes, file kind and config
spelling. Dimensions follow the speculators sample (hidden 32, vocab 64, draft vocab 16) so the
repo stays small. Values are seeded and heavy-tailed so they do not look like a fresh init.
Running it twice gives byte-identical files.

    python data/make_layouts.py [OUT_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from kit.checkpoint import formats

H, HEADS, KV, HEAD_DIM, INTER = 32, 4, 2, 8, 64
VOCAB, DRAFT_VOCAB, N_AUX = 64, 16, 3
OUT = Path(__file__).resolve().parent / "layouts"

_LLAMA = {
    "attention_bias": False,
    "head_dim": HEAD_DIM,
    "hidden_act": "silu",
    "hidden_size": H,
    "initializer_range": 0.02,
    "intermediate_size": INTER,
    "max_position_embeddings": 128,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": False,
    "vocab_size": VOCAB,
}
# transformers 4 spelling (SpecForge, EAGLE, older ModelOpt) and transformers 5 spelling
_TF4 = {"rope_theta": 500000.0, "torch_dtype": "bfloat16", "transformers_version": "4.53.0"}
_TF5 = {
    "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
    "dtype": "bfloat16",
    "transformers_version": "5.19.0",
}
# ModelOpt hf_spec_configs.py eagle_config (aux ids in "output of layer k" convention)
_MODELOPT_EAGLE = {
    "eagle_aux_hidden_state_layer_ids": [1, 15, 28],
    "use_aux_hidden_state": True,
    "use_input_layernorm_in_first_layer": True,
    "use_last_layernorm": True,
    "use_mtp_layernorm": False,
    "next_layer_regular": True,
    "parallel_draft_step": 1,
    "parallel_draft_heads_num_layers": 1,
}


def decoder_layer(prefix: str, first: bool, modelopt: bool = False) -> dict[str, tuple[int, ...]]:
    """Shapes of one draft decoder layer; the first takes [embeds; hidden] (2H) and has hidden_norm."""
    d_in = 2 * H if first else H
    shapes = {
        "self_attn.q_proj.weight": (HEADS * HEAD_DIM, d_in),
        "self_attn.k_proj.weight": (KV * HEAD_DIM, d_in),
        "self_attn.v_proj.weight": (KV * HEAD_DIM, d_in),
        "self_attn.o_proj.weight": (H, HEADS * HEAD_DIM),
        "mlp.gate_proj.weight": (INTER, H),
        "mlp.up_proj.weight": (INTER, H),
        "mlp.down_proj.weight": (H, INTER),
        "post_attention_layernorm.weight": (H,),
    }
    if first or not modelopt:  # ModelOpt: input_layernorm only in layer 0
        shapes["input_layernorm.weight"] = (H,)
    if first:
        shapes["hidden_norm.weight"] = (H,)
    return {f"{prefix}{k}": v for k, v in shapes.items()}


def head(embed: bool) -> dict[str, tuple[int, ...]]:
    shapes = {"fc.weight": (H, N_AUX * H), "norm.weight": (H,), "lm_head.weight": (DRAFT_VOCAB, H)}
    if embed:
        shapes["embed_tokens.weight"] = (VOCAB, H)
    return shapes


def values(shapes: dict[str, tuple[int, ...]], dtype: torch.dtype, seed: int) -> dict:
    """Seeded, trained-looking values: norms near 1, heavy-tailed (product of normals) weights."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name in sorted(shapes):
        shape = shapes[name]
        if len(shape) == 1:
            t = 1.0 + 0.1 * torch.randn(shape, generator=g)
        else:
            t = 0.03 * torch.randn(shape, generator=g) * torch.randn(shape, generator=g)
        out[name] = t.to(dtype).contiguous()
    return out


def vocab_maps(seed: int, t2d: bool = True, identity: bool = False) -> dict[str, torch.Tensor]:
    """d2t as offsets (target = i + d2t[i]) over sorted target ids; t2d the matching mask."""
    if identity:
        ids = torch.arange(DRAFT_VOCAB)
    else:
        g = torch.Generator().manual_seed(seed)
        ids = torch.randperm(VOCAB, generator=g)[:DRAFT_VOCAB].sort().values
    maps = {"d2t": (ids - torch.arange(DRAFT_VOCAB)).to(torch.int64)}
    if t2d:
        mask = torch.zeros(VOCAB, dtype=torch.bool)
        mask[ids] = True
        maps["t2d"] = mask
    return maps


def speculators_config(arch: str, aux_ids: list[int] | None, norm_before_residual: bool) -> dict:
    layer = {**_LLAMA, "num_hidden_layers": 1, **_TF5}
    layer.pop("transformers_version")
    return formats.speculators_config(
        layer,
        architecture=arch,
        draft_vocab_size=DRAFT_VOCAB,
        aux_layer_ids=aux_ids,
        speculative_tokens=3,
        verifier={
            "architectures": ["LlamaForCausalLM"],
            "name_or_path": "meta-llama/Llama-3.1-8B-Instruct",
        },
        norm_before_residual=norm_before_residual,
    )


def flat_config(arch: str, layers: int, spelling: dict, eagle: dict | None) -> dict:
    cfg = {
        "architectures": [arch],
        **_LLAMA,
        "num_hidden_layers": layers,
        "draft_vocab_size": DRAFT_VOCAB,
        **spelling,
    }
    if eagle is not None:
        cfg["eagle_config"] = eagle
    return cfg


def build() -> dict[str, tuple[dict, dict[str, torch.Tensor], str]]:
    """name -> (config, tensors, file name)."""
    bf16, fp16 = torch.bfloat16, torch.float16
    layouts = {}

    shapes = {**decoder_layer("layers.0.", True), **head(embed=True)}
    layouts["speculators-trainer"] = (
        speculators_config("Eagle3DraftModel", [2, 16, 29], norm_before_residual=True),
        {**values(shapes, bf16, 1), **vocab_maps(1)},
        "model.safetensors",
    )
    shapes = {**decoder_layer("layers.0.", True), **head(embed=False)}
    layouts["speculators-converter"] = (
        speculators_config("Eagle3Speculator", None, norm_before_residual=False),
        {**values(shapes, bf16, 2), **vocab_maps(2)},
        "model.safetensors",
    )
    shapes = {**decoder_layer("midlayer.", True), **head(embed=False)}
    specforge_eagle = {
        "eagle_aux_hidden_state_layer_ids": [1, 15, 28],
        "use_aux_hidden_state": True,
    }
    layouts["specforge"] = (
        flat_config("LlamaForCausalLMEagle3", 1, _TF4, specforge_eagle),
        {**values(shapes, bf16, 3), **vocab_maps(3)},
        "model.safetensors",
    )
    eagle_spelling = {**_TF4, "torch_dtype": "float16"}
    layouts["eagle-official"] = (
        flat_config("LlamaForCausalLM", 1, eagle_spelling, None),
        {**values(shapes, fp16, 4), **vocab_maps(4)},
        "pytorch_model.bin",
    )
    shapes = {
        **decoder_layer("midlayer.0.", True, modelopt=True),
        **decoder_layer("midlayer.1.", False, modelopt=True),
        **head(embed=False),
    }
    layouts["modelopt-midlayer"] = (
        flat_config("LlamaForCausalLMEagle3", 2, _TF4, _MODELOPT_EAGLE),
        {**values(shapes, bf16, 5), **vocab_maps(5, t2d=False)},
        "model.safetensors",
    )
    shapes = {
        **decoder_layer("layers.0.", True, modelopt=True),
        **decoder_layer("layers.1.", False, modelopt=True),
        **head(embed=False),
    }
    layouts["modelopt-layers"] = (
        flat_config("LlamaForCausalLMEagle3", 2, _TF5, _MODELOPT_EAGLE),
        {**values(shapes, bf16, 6), **vocab_maps(6, t2d=False)},
        "model.safetensors",
    )
    return layouts


# A multimodal target whose text model sits under text_config (Kimi-K2.5, the incident's target).
KIMI_K25_TARGET = {
    "architectures": ["KimiK25ForConditionalGeneration"],
    "model_type": "kimi_k25",
    "text_config": {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "num_hidden_layers": 61,
        "vocab_size": 163840,
        "intermediate_size": 18432,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "first_k_dense_replace": 1,
        "n_routed_experts": 384,
        "rope_theta": 50000.0,
    },
    "vision_config": {"hidden_size": 1152},
}


def write(out: Path = OUT) -> list[Path]:
    """Write every layout under `out`; returns the files written."""
    torch.manual_seed(0)
    written = []
    for name, (config, tensors, file_name) in build().items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / file_name
        if file_name.endswith(".safetensors"):
            save_file(tensors, str(target), metadata={"format": "pt"})
        else:
            torch.save(tensors, str(target))
        (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        written += [target, folder / "config.json"]
    targets = out / "targets"
    targets.mkdir(parents=True, exist_ok=True)
    kimi = targets / "kimi-k2.5-config.json"
    kimi.write_text(json.dumps(KIMI_K25_TARGET, indent=2, sort_keys=True) + "\n")
    return [*written, kimi]


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(path)
