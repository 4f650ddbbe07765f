"""The parameters SGLang's EAGLE-3 draft module builds for a config, release by release.

Names and shapes are the engine's own (merged `qkv_proj` / `gate_up_proj`, vocab rows padded to
64); a parameter nothing loads keeps the init recorded here (`torch.empty` for linear layers,
ones for RMSNorm). From 0.5.12 every decoder layer is a `LlamaDecoderLayer` subclass, so layers
after the first build an `input_layernorm` they never use: they open with `hidden_norm`.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, pick
from kit.engines.sglang.config import (
    EAGLE3,
    FC_BIAS_ALWAYS,
    LLAMA4_MLP,
    ONE_LAYER_ONLY,
    draft_vocab,
    honours,
    is_mla,
    num_aux,
)
from kit.engines.vocab import Init, ParamSpec, pad64

LATER_LAYERS_OPEN_WITH_HIDDEN_NORM = (
    EAGLE3 + ":93-100 layers ≥ 1: hidden_norm(hidden_states, residual); input_layernorm "
    "built by the LlamaDecoderLayer base class, used only by the input layer (0.5.12)"
)


def engine_params(cfg: DraftConfig, release: EngineRelease) -> list[ParamSpec]:
    """Every parameter of the draft module this release builds, with shapes and inits."""
    H, V, Ht = cfg.hidden_size, cfg.vocab_size, cfg.target_width
    K = num_aux(cfg, release)
    vd = draft_vocab(cfg, release) or V
    flags = honours(cfg, release)
    out = [ParamSpec("model.embed_tokens.weight", (pad64(V), H), Init.UNINITIALIZED, rows=V)]
    if flags.norm_before_fc:
        out.append(ParamSpec("model.input_norm.weight", (K * Ht,), Init.ONES))
    if flags.fc_norm:
        out += [ParamSpec(f"model.fc_norm.{j}.weight", (Ht,), Init.ONES) for j in range(K)]
    out.append(ParamSpec("model.fc.weight", (H, K * Ht), Init.RANDOM))
    if pick(FC_BIAS_ALWAYS, release).value or cfg.bias:
        out.append(ParamSpec("model.fc.bias", (H,), Init.RANDOM))
    if is_mla(cfg):
        out += _mla_layer(cfg, release, "model.midlayer.")
    elif pick(ONE_LAYER_ONLY, release).value:
        out += _layer(cfg, release, "model.midlayer.", index=0)
    else:
        for i in range(cfg.num_hidden_layers):
            out += _layer(cfg, release, f"model.layers.{i}.", index=i)
    out.append(ParamSpec("model.norm.weight", (H,), Init.ONES))
    if not cfg.tie_word_embeddings:
        out.append(ParamSpec("lm_head.weight", (pad64(vd), H), Init.UNINITIALIZED, rows=vd))
    return out


def _intermediate(cfg: DraftConfig, release: EngineRelease) -> int:
    llama4 = cfg.model_type == "llama4_text" and cfg.raw.get("intermediate_size_mlp")
    if llama4 and pick(LLAMA4_MLP, release).value:
        return int(cfg.raw["intermediate_size_mlp"])
    return cfg.intermediate_size


def _mlp(cfg: DraftConfig, release: EngineRelease, p: str) -> list[ParamSpec]:
    H, inter = cfg.hidden_size, _intermediate(cfg, release)
    return [
        ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), Init.UNINITIALIZED,
                  shards=((0, inter), (1, inter))),
        ParamSpec(p + "mlp.down_proj.weight", (H, inter), Init.UNINITIALIZED),
    ]  # fmt: skip


def _layer(cfg: DraftConfig, release: EngineRelease, p: str, index: int) -> list[ParamSpec]:
    """One decoder layer: the input layer reads [embeds ‖ hidden] (2H), later layers H."""
    H, hd = cfg.hidden_size, cfg.head_dim
    q, kv = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd
    d_in = 2 * H if index == 0 else H
    out = [
        ParamSpec(p + "self_attn.qkv_proj.weight", (q + 2 * kv, d_in), Init.UNINITIALIZED,
                  shards=(("q", q), ("k", kv), ("v", kv))),
        ParamSpec(p + "self_attn.o_proj.weight", (H, q), Init.UNINITIALIZED),
    ]  # fmt: skip
    if cfg.raw.get("attention_bias") or cfg.bias:
        out.append(ParamSpec(p + "self_attn.o_proj.bias", (H,), Init.UNINITIALIZED))
    out += _mlp(cfg, release, p)
    unused = "" if index == 0 else LATER_LAYERS_OPEN_WITH_HIDDEN_NORM
    out.append(ParamSpec(p + "input_layernorm.weight", (H,), Init.ONES, unused=unused))
    out.append(ParamSpec(p + "hidden_norm.weight", (H,), Init.ONES))
    out.append(ParamSpec(p + "post_attention_layernorm.weight", (H,), Init.ONES))
    return out


def _mla_layer(cfg: DraftConfig, release: EngineRelease, p: str) -> list[ParamSpec]:
    """The MLA draft layer (DeepSeek-V2 attention names; shapes from the MLA config fields)."""
    r = cfg.raw
    H, nH = cfg.hidden_size, cfg.num_attention_heads
    ql, kvl = int(r.get("q_lora_rank") or 0), int(r.get("kv_lora_rank", 512))
    nope, rope = int(r.get("qk_nope_head_dim", 128)), int(r.get("qk_rope_head_dim", 64))
    vh = int(r.get("v_head_dim", 128))
    a = p + "self_attn."
    U, ONES = Init.UNINITIALIZED, Init.ONES
    return [
        ParamSpec(a + "fused_qkv_a_proj_with_mqa.weight", (ql + kvl + rope, 2 * H), U,
                  shards=(("q_a", ql), ("kv_a", kvl + rope))),
        ParamSpec(a + "q_a_layernorm.weight", (ql,), ONES),
        ParamSpec(a + "q_b_proj.weight", (nH * (nope + rope), ql), U),
        ParamSpec(a + "kv_a_layernorm.weight", (kvl,), ONES),
        ParamSpec(a + "kv_b_proj.weight", (nH * (nope + vh), kvl), U),
        ParamSpec(a + "o_proj.weight", (H, nH * vh), U),
        *_mlp(cfg, release, p),
        ParamSpec(p + "input_layernorm.weight", (H,), ONES),
        ParamSpec(p + "hidden_norm.weight", (H,), ONES),
        ParamSpec(p + "post_attention_layernorm.weight", (H,), ONES),
    ]  # fmt: skip
