"""The parameters vLLM's `Eagle3LlamaForCausalLM` builds for a config, release by release.

Names are the engine's own (`model.layers.{i}`, merged `qkv_proj` / `gate_up_proj`, vocab rows
padded to 64). Every decoder layer subclasses vLLM's `LlamaDecoderLayer`, so each has an
`input_layernorm`, and each adds a `hidden_norm`: layer 0 uses both (embeddings and hidden
state), later layers open with `input_layernorm` and never use their `hidden_norm`.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vllm.config import (
    EAGLE3,
    MLA_DRAFT,
    MLA_FC_NORM_BUILT,
    MLA_FC_NORM_RUN,
    builds_fc,
    honours,
    is_mla,
    is_qwen3,
    num_aux,
    num_layers,
)
from kit.engines.vocab import Init, ParamSpec, pad64

# draft_id_to_target_id: always built until 0.29; from 0.30 only when Vd != V.
D2T_ALWAYS: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.30.0"), True,
        EAGLE3 + ":285-288 draft_id_to_target_id = zeros(draft_vocab_size) (0.11.1; 0.29.0 "
        ":304-307)"),
    Row(VersionRange("0.30.0"), False,
        EAGLE3 + ":338-345 only if draft_vocab_size != target vocab (0.30.0, 0.32.0, 0.33.0)"),
]  # fmt: skip

LATER_LAYERS_OPEN_WITH_INPUT_LAYERNORM = (
    EAGLE3 + ":91-93 layers ≥ 1: input_layernorm(hidden_states, residual); hidden_norm built "
    "at :67 but used only by layer 0 (0.11.1)"
)


def builds_d2t(cfg: DraftConfig, release: EngineRelease) -> bool:
    return pick(D2T_ALWAYS, release).value or cfg.effective_draft_vocab != cfg.vocab_size


def engine_params(cfg: DraftConfig, release: EngineRelease) -> list[ParamSpec]:
    """Every parameter of `Eagle3LlamaForCausalLM` in this release, with shapes and inits."""
    H, V, Ht = cfg.hidden_size, cfg.vocab_size, cfg.target_width
    vd = cfg.effective_draft_vocab
    K = num_aux(cfg, release)
    flags = honours(cfg, release)
    out = [ParamSpec("model.embed_tokens.weight", (pad64(V), H), Init.UNINITIALIZED, rows=V)]
    if is_mla(cfg, release):
        out += _mla_model(cfg, release, K * Ht)
    elif builds_fc(cfg, release):
        if flags.norm_before_fc:
            out.append(ParamSpec("model.input_norm.weight", (K * Ht,), Init.ONES))
        if flags.fc_norm:
            out += [ParamSpec(f"model.fc_norm.{j}.weight", (Ht,), Init.ONES) for j in range(K)]
        out.append(ParamSpec("model.fc.weight", (H, K * Ht), Init.RANDOM))
    layer = _mla_layer if is_mla(cfg, release) else _layer
    for i in range(num_layers(cfg, release)):
        out += layer(cfg, release, i)
    out.append(ParamSpec("model.norm.weight", (H,), Init.ONES))
    out.append(ParamSpec("lm_head.weight", (pad64(vd), H), Init.UNINITIALIZED, rows=vd))
    if builds_d2t(cfg, release):
        out.append(ParamSpec("draft_id_to_target_id", (vd,), Init.ZEROS))
    return out


def _layer(cfg: DraftConfig, release: EngineRelease, i: int) -> list[ParamSpec]:
    H, hd, inter = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    q, kv = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd
    p, U = f"model.layers.{i}.", Init.UNINITIALIZED
    out = [
        ParamSpec(p + "self_attn.qkv_proj.weight", (q + 2 * kv, 2 * H if i == 0 else H), U,
                  shards=(("q", q), ("k", kv), ("v", kv))),
        ParamSpec(p + "self_attn.o_proj.weight", (H, q), U),
    ]  # fmt: skip
    if is_qwen3(cfg, release):
        out += [
            ParamSpec(p + "self_attn.q_norm.weight", (hd,), Init.ONES),
            ParamSpec(p + "self_attn.k_norm.weight", (hd,), Init.ONES),
        ]
    unused = "" if i == 0 else LATER_LAYERS_OPEN_WITH_INPUT_LAYERNORM
    return [
        *out,
        ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), U,
                  shards=((0, inter), (1, inter))),
        ParamSpec(p + "mlp.down_proj.weight", (H, inter), U),
        ParamSpec(p + "input_layernorm.weight", (H,), Init.ONES),
        ParamSpec(p + "hidden_norm.weight", (H,), Init.ONES, unused=unused),
        ParamSpec(p + "post_attention_layernorm.weight", (H,), Init.ONES),
    ]  # fmt: skip


# The MLA draft's fc is always built and run; its fc_norm exists from 0.22.0 and runs from 0.24.0.
MLA_FC_NORM_UNUSED = MLA_DRAFT + ":405-410 combine_hidden_states runs fc alone (0.22.0, 0.23.x)"


def _mla_model(cfg: DraftConfig, release: EngineRelease, fc_in: int) -> list[ParamSpec]:
    out = []
    if cfg.fc_norm and pick(MLA_FC_NORM_BUILT, release).value:
        unused = "" if pick(MLA_FC_NORM_RUN, release).value else MLA_FC_NORM_UNUSED
        k, ht = num_aux(cfg, release), cfg.target_width
        out += [ParamSpec(f"model.fc_norm.{j}.weight", (ht,), Init.ONES, unused=unused)
                for j in range(k)]  # fmt: skip
    out.append(ParamSpec("model.fc.weight", (cfg.hidden_size, fc_in), Init.RANDOM))
    return out


def _mla_layer(cfg: DraftConfig, release: EngineRelease, i: int) -> list[ParamSpec]:
    """One `DeepseekV2Eagle3DecoderLayer` (deepseek_eagle3.py, from 0.18.0): MLA attention
    (`DeepseekV2MLAAttention`, input 2H in layer 0), a dense MLP and the three norms; with a
    `q_lora_rank` the q and kv down-projections are one fused parameter."""
    r = cfg.raw
    H, nH, inter = cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size
    ql, kvl = r.get("q_lora_rank"), int(r.get("kv_lora_rank") or 0)
    nope, rope = int(r.get("qk_nope_head_dim") or 0), int(r.get("qk_rope_head_dim") or 0)
    vh = int(r.get("v_head_dim") or 0)
    d_in = 2 * H if i == 0 else H
    p, U, ONES = f"model.layers.{i}.", Init.UNINITIALIZED, Init.ONES
    a = p + "self_attn."
    if ql:
        q = [
            ParamSpec(a + "fused_qkv_a_proj.weight", (int(ql) + kvl + rope, d_in), U,
                      shards=((0, int(ql)), (1, kvl + rope))),
            ParamSpec(a + "q_a_layernorm.weight", (int(ql),), ONES),
            ParamSpec(a + "q_b_proj.weight", (nH * (nope + rope), int(ql)), U),
        ]  # fmt: skip
    else:
        q = [
            ParamSpec(a + "q_proj.weight", (nH * (nope + rope), d_in), U),
            ParamSpec(a + "kv_a_proj_with_mqa.weight", (kvl + rope, d_in), U),
        ]
    unused = "" if i == 0 else LATER_LAYERS_OPEN_WITH_INPUT_LAYERNORM
    return [
        *q,
        ParamSpec(a + "kv_a_layernorm.weight", (kvl,), ONES),
        ParamSpec(a + "kv_b_proj.weight", (nH * (nope + vh), kvl), U),
        ParamSpec(a + "o_proj.weight", (H, nH * vh), U),
        ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), U,
                  shards=((0, inter), (1, inter))),
        ParamSpec(p + "mlp.down_proj.weight", (H, inter), U),
        ParamSpec(p + "input_layernorm.weight", (H,), ONES),
        ParamSpec(p + "hidden_norm.weight", (H,), ONES, unused=unused),
        ParamSpec(p + "post_attention_layernorm.weight", (H,), ONES),
    ]  # fmt: skip
