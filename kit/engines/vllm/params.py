"""The parameters vLLM's `Eagle3LlamaForCausalLM` builds for a config, release by release.

Names are the engine's own (`model.layers.{i}`, merged `qkv_proj` / `gate_up_proj`, vocab rows
padded to 64). Every decoder layer subclasses vLLM's `LlamaDecoderLayer`, so each has an
`input_layernorm`, and each adds a `hidden_norm`: layer 0 uses both (embeddings and hidden
state), later layers open with `input_layernorm` and never use their `hidden_norm`.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vllm.config import EAGLE3, builds_fc, honours, is_qwen3, num_aux, num_layers
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
    if builds_fc(cfg, release):
        if flags.norm_before_fc:
            out.append(ParamSpec("model.input_norm.weight", (K * Ht,), Init.ONES))
        if flags.fc_norm:
            out += [ParamSpec(f"model.fc_norm.{j}.weight", (Ht,), Init.ONES) for j in range(K)]
        out.append(ParamSpec("model.fc.weight", (H, K * Ht), Init.RANDOM))
    for i in range(num_layers(cfg, release)):
        out += _layer(cfg, release, i)
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
