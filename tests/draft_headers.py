"""Header-only drafts built from a draft config as a trainer writes them: the key names and real
shapes its exporter saves, in a safetensors file whose data section is a hole on disk (written
with `truncate`, no bytes), so a 7168-wide draft costs kilobytes. The load replay, the trace and
the fixer's planning read headers only.

Layouts (docs/conventions.md, "Trainers' checkpoint layouts"): SpecForge `midlayer.*` with d2t
and t2d and no embedding; ModelOpt `layers.{i}.*` with d2t only when the vocabulary is reduced;
the speculators trainer `layers.{i}.*` with the embedding; the EAGLE reference `midlayer.*`.
An MLA config (`kv_lora_rank`) gets DeepSeek's attention names (ModelOpt's `KIMIK2_EAGLE_SINGLE_
LAYER`, nvidia-modelopt `torch/export/plugins/hf_spec_export.py`), a SpecForge `GptOss…Eagle3`
config its mixture-of-experts MLP (`specforge/modeling/draft/gpt_oss_eagle.py`: the draft layer's
MLP is transformers' `GptOssMLP`, router and experts; `qwen3_moe_eagle.py`: a
`Qwen3MoeSparseMoeBlock`, gate and one MLP per expert).
"""

from __future__ import annotations

import json
from pathlib import Path

DTYPE_BYTES = {"BF16": 2, "F32": 4, "I64": 8, "BOOL": 1}
Shapes = dict[str, tuple[str, tuple[int, ...]]]


def write_header_only(folder: Path, tensors: Shapes, config: dict) -> Path:
    """`model.safetensors` with these (dtype, shape) tensors, its data a hole; `config.json`."""
    folder.mkdir(parents=True, exist_ok=True)
    header, at = {}, 0
    for name in sorted(tensors):
        dtype, shape = tensors[name]
        size = DTYPE_BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + size]}
        at += size
    body = json.dumps(header).encode()
    body += b" " * (-len(body) % 8)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(body).to_bytes(8, "little") + body)
        f.truncate(8 + len(body) + at)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def _layer_config(config: dict) -> dict:
    return config.get("transformer_layer_config", config)


def _attention(c: dict, d_in: int) -> Shapes:
    h, heads = c["hidden_size"], c["num_attention_heads"]
    if c.get("kv_lora_rank") is not None:
        ql, kvl = c["q_lora_rank"], c["kv_lora_rank"]
        nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        return {
            "self_attn.q_a_proj.weight": ("BF16", (ql, d_in)),
            "self_attn.q_a_layernorm.weight": ("BF16", (ql,)),
            "self_attn.q_b_proj.weight": ("BF16", (heads * (nope + rope), ql)),
            "self_attn.kv_a_proj_with_mqa.weight": ("BF16", (kvl + rope, d_in)),
            "self_attn.kv_a_layernorm.weight": ("BF16", (kvl,)),
            "self_attn.kv_b_proj.weight": ("BF16", (heads * (nope + v), kvl)),
            "self_attn.o_proj.weight": ("BF16", (h, heads * v)),
        }
    hd = c.get("head_dim") or h // heads
    kv = c.get("num_key_value_heads") or heads
    return {
        "self_attn.q_proj.weight": ("BF16", (heads * hd, d_in)),
        "self_attn.k_proj.weight": ("BF16", (kv * hd, d_in)),
        "self_attn.v_proj.weight": ("BF16", (kv * hd, d_in)),
        "self_attn.o_proj.weight": ("BF16", (h, heads * hd)),
    }


def _mlp(c: dict, moe: str | None) -> Shapes:
    h = c["hidden_size"]
    inter = c.get("intermediate_size_mlp") or c["intermediate_size"]
    if moe == "qwen3_moe":  # transformers 4.5x's Qwen3MoeSparseMoeBlock: gate, one MLP per expert
        e, mi = c["num_experts"], c["moe_intermediate_size"]
        out: Shapes = {"mlp.gate.weight": ("BF16", (e, h))}
        for i in range(e):
            out |= {f"mlp.experts.{i}.gate_proj.weight": ("BF16", (mi, h)),
                    f"mlp.experts.{i}.up_proj.weight": ("BF16", (mi, h)),
                    f"mlp.experts.{i}.down_proj.weight": ("BF16", (h, mi))}  # fmt: skip
        return out
    if moe == "gpt_oss":  # transformers' GptOssMLP: router, experts with biases
        e = c["num_local_experts"]
        return {
            "mlp.router.weight": ("BF16", (e, h)),
            "mlp.router.bias": ("BF16", (e,)),
            "mlp.experts.gate_up_proj": ("BF16", (e, h, 2 * inter)),
            "mlp.experts.gate_up_proj_bias": ("BF16", (e, 2 * inter)),
            "mlp.experts.down_proj": ("BF16", (e, inter, h)),
            "mlp.experts.down_proj_bias": ("BF16", (e, h)),
        }
    return {
        "mlp.gate_proj.weight": ("BF16", (inter, h)),
        "mlp.up_proj.weight": ("BF16", (inter, h)),
        "mlp.down_proj.weight": ("BF16", (h, inter)),
    }


def draft_tensors(config: dict, trainer: str) -> Shapes:
    """The tensors `trainer` (specforge | modelopt | speculators | eagle) saves for `config`."""
    c = _layer_config(config)
    h, v = c["hidden_size"], c["vocab_size"]
    vd = config.get("draft_vocab_size") or v
    ht = config.get("target_hidden_size") or h
    ids = (config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids") or config.get(
        "eagle_aux_hidden_state_layer_ids"
    )
    k = config.get("num_aux_hidden_states") or (len(ids) if ids else 3)
    arch = (config.get("architectures") or [""])[0]
    moe = (
        "gpt_oss" if "GptOss" in arch and "num_local_experts" in c
        else "qwen3_moe" if "MoE" in arch and "num_experts" in c
        else None
    )  # fmt: skip
    layers = c.get("num_hidden_layers", 1)
    out: Shapes = {}
    for i in range(layers):
        prefix = (
            "midlayer." if trainer in ("specforge", "eagle") and layers == 1 else f"layers.{i}."
        )
        d_in = 2 * h if i == 0 else h
        layer = {**_attention(c, d_in), **_mlp(c, moe)}
        norms = ("input_layernorm", "post_attention_layernorm")
        if i == 0:
            norms += ("hidden_norm",)
        layer |= {f"{n}.weight": ("BF16", (h,)) for n in norms}
        out |= {prefix + name: spec for name, spec in layer.items()}
    out |= {"fc.weight": ("BF16", (h, k * ht)), "norm.weight": ("BF16", (h,))}
    out["lm_head.weight"] = ("BF16", (vd, h))
    if trainer == "speculators":
        out["embed_tokens.weight"] = ("BF16", (v, h))
    if trainer in ("specforge", "eagle") or vd < v:
        out["d2t"] = ("I64", (vd,))
    if trainer in ("specforge", "eagle") or (trainer == "speculators" and vd < v):
        out["t2d"] = ("BOOL", (v,))
    return out


def build(folder: Path, config: dict, trainer: str) -> Path:
    """A header-only draft of `config` as `trainer` writes it, in `folder`."""
    return write_header_only(folder, draft_tensors(config, trainer), config)
