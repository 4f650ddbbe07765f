"""The parameters TensorRT-LLM's `Eagle3ForCausalLM` builds for a draft config (1.2.0rc2).

Names are the module tree's own (`model.` prefix, merged `qkv_proj` / `gate_up_proj`). One
decoder layer is `model.midlayer`; more are a ModuleList `model.midlayer.{i}`, and every one of
them is a full EAGLE-3 layer: 2H-wide qkv over [embeds ‖ hidden], its own `input_layernorm`
and `hidden_norm`. `fc` exists only when more than one target layer is captured, `d2t` only when
the draft vocabulary is smaller, `embed_tokens` only when the target is wider than the draft
(else the target's is used).
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, Row, VersionRange
from kit.engines.tensorrt_llm.config import AT, SPEC, num_aux
from kit.engines.vocab import Init, ParamSpec

# Multi-layer drafts: nn.ModuleList named midlayer, every layer an Eagle3DecoderLayer.
MIDLAYER_LIST = Row(
    VersionRange("1.2.0rc2"),
    True,
    f"{SPEC}:171-177 midlayer = ModuleList(Eagle3DecoderLayer) if num_hidden_layers > 1, "
    f"else one Eagle3DecoderLayer; :54-66 qkv_proj in-width 2 * hidden_size in every layer {AT}",
)
D2T_PARAM = f"{SPEC}:183-186 d2t = Parameter(int32, draft_vocab_size) iff draft vocab != vocab {AT}"


def builds_d2t(cfg: DraftConfig) -> bool:
    return cfg.draft_vocab_size is not None and cfg.draft_vocab_size != cfg.vocab_size


def layer_prefixes(cfg: DraftConfig, release: EngineRelease) -> list[str]:
    """`model.midlayer.` for one layer, `model.midlayer.{i}.` for more."""
    if cfg.num_hidden_layers > 1 and release in MIDLAYER_LIST.versions:
        return [f"model.midlayer.{i}." for i in range(cfg.num_hidden_layers)]
    return ["model.midlayer."]


def engine_params(cfg: DraftConfig, release: EngineRelease) -> list[ParamSpec]:
    """Every parameter of `Eagle3ForCausalLM` in this release, with shapes and inits.

    `model.embed_tokens.weight` is listed either way: built by the draft when the target is
    wider, else the target's own (`from_target`), so the reference module has an embedding.
    """
    H, V, Ht = cfg.hidden_size, cfg.vocab_size, cfg.target_width
    vd = cfg.effective_draft_vocab
    K = num_aux(cfg, release)
    out = [ParamSpec("model.embed_tokens.weight", (V, H), Init.UNINITIALIZED)]
    if K > 1:
        out.append(ParamSpec("model.fc.weight", (H, K * Ht), Init.UNINITIALIZED))
        if cfg.bias:
            out.append(ParamSpec("model.fc.bias", (H,), Init.UNINITIALIZED))
    for p in layer_prefixes(cfg, release):
        out += _layer(cfg, p)
    out.append(ParamSpec("model.norm.weight", (H,), Init.ONES))
    if builds_d2t(cfg):
        out.append(ParamSpec("model.d2t", (vd,), Init.UNINITIALIZED))
    out.append(ParamSpec("lm_head.weight", (vd, H), Init.UNINITIALIZED, rows=vd))
    return out


def _layer(cfg: DraftConfig, p: str) -> list[ParamSpec]:
    """One Eagle3DecoderLayer: qkv over [embeds ‖ hidden] (2H), both input norms."""
    H, hd, inter = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    q, kv = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd
    U = Init.UNINITIALIZED
    out = [
        ParamSpec(p + "self_attn.qkv_proj.weight", (q + 2 * kv, 2 * H), U,
                  shards=(("q", q), ("k", kv), ("v", kv))),
        ParamSpec(p + "self_attn.o_proj.weight", (H, q), U),
    ]  # fmt: skip
    if cfg.raw.get("attention_bias"):
        out.append(ParamSpec(p + "self_attn.qkv_proj.bias", (q + 2 * kv,), U,
                             shards=(("q", q), ("k", kv), ("v", kv))))  # fmt: skip
    return [
        *out,
        ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), U,
                  shards=((0, inter), (1, inter))),
        ParamSpec(p + "mlp.down_proj.weight", (H, inter), U),
        ParamSpec(p + "input_layernorm.weight", (H,), Init.ONES),
        ParamSpec(p + "hidden_norm.weight", (H,), Init.ONES),
        ParamSpec(p + "post_attention_layernorm.weight", (H,), Init.ONES),
    ]  # fmt: skip
