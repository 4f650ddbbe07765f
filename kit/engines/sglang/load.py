"""SGLang's EAGLE-3 draft loading, 0.4.4.post2 … 0.5.23, as version-ranged rules.

Three loader eras (shared/reference/sglang-eagle3.md §A): until 0.4.8 `LlamaForCausalLMEagle3`
delegates to `LlamaForCausalLM.load_weights` with a `model.` prefix (unknown stacked names raise
`KeyError`, others log a warning); 0.4.9 … 0.5.11 has its own loader that tries the key as-is,
then with `model.`, and otherwise drops it without a word; from 0.5.12 the decoder is a
`layers` ModuleList and a legacy map turns `midlayer` into `layers.0` first. The MLA draft
`Eagle3DeepseekV2ForCausalLM` (≥0.5.12) has its own loader (§A.4). Parameter names and shapes
follow §B; post-load overrides by the EAGLE worker follow §A.5.
"""

from __future__ import annotations

import re

from kit.config import DraftConfig
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.params import (
    CONSUMED,
    DROPPED,
    ERROR,
    IGNORED,
    LOADED,
    ONES,
    RANDOM,
    UNINITIALIZED,
    WARNED,
    KeyOutcome,
    LoadContext,
    ParamSpec,
    pad64,
)

W = "sglang/srt/"  # every source path below is inside the wheel's sglang/srt/

DELEGATING, OWN, LEGACY_MAP = "delegating", "own", "legacy_map"

# Which loader reads the checkpoint, and the lines that hold it (§A, §I).
LOADER: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.4.8"), DELEGATING,
        W + "models/llama_eagle3.py:180-190 → models/llama.py:481-535 (0.4.6.post1)"),
    Row(VersionRange("0.4.8", "0.4.9"), DELEGATING,
        W + "models/llama_eagle3.py:183-193 → models/llama.py:532-596 (0.4.8)"),
    Row(VersionRange("0.4.9", "0.5.3"), OWN, W + "models/llama_eagle3.py:202-243 (0.4.10)"),
    Row(VersionRange("0.5.3", "0.5.6"), OWN, W + "models/llama_eagle3.py:219 (0.5.3)"),
    Row(VersionRange("0.5.6", "0.5.10"), OWN, W + "models/llama_eagle3.py:229 (0.5.6)"),
    Row(VersionRange("0.5.10", "0.5.12"), OWN, W + "models/llama_eagle3.py:243 (0.5.10)"),
    Row(VersionRange("0.5.12", "0.5.15"), LEGACY_MAP, W + "models/llama_eagle3.py:293-346 (0.5.12)"),
    Row(VersionRange("0.5.15", "0.5.20"), LEGACY_MAP, W + "models/llama_eagle3.py:297 (0.5.15)"),
    Row(VersionRange("0.5.20", "0.5.23"), LEGACY_MAP, W + "models/llama_eagle3.py:314 (0.5.20)"),
    Row(VersionRange("0.5.23"), LEGACY_MAP, W + "models/llama_eagle3.py:325-378 (0.5.23)"),
]  # fmt: skip

# Decoder attribute: one `midlayer` until 0.5.11, a `layers` ModuleList from 0.5.12 (§0 #14).
DECODER: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), "midlayer",
        W + "models/llama_eagle3.py:144 (0.5.10: self.midlayer)"),
    Row(VersionRange("0.5.12"), "layers", W + "models/llama_eagle3.py:180 (0.5.12: self.layers)"),
]  # fmt: skip

# `model.fc.bias`: plain nn.Linear (bias=True) until 0.4.8, then only with config `bias` (§B).
FC_BIAS: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), "always",
        W + "models/llama_eagle3.py:108-111 (0.4.6.post1)"),
    Row(VersionRange("0.4.9"), "config", W + "models/llama_eagle3.py:124 (0.4.10)"),
]  # fmt: skip

# `ValueError("EAGLE3 currently only supports 1 layer")` until 0.5.11 (§H, SpecForge#129).
ONE_LAYER_ONLY: list[Row[bool]] = [
    Row(
        VersionRange("0.4.4.post2", "0.5.12"),
        True,
        W + "models/llama_eagle3.py __init__, single midlayer at :130 (0.4.10)",
    ),
    Row(VersionRange("0.5.12"), False, W + "models/llama_eagle3.py:180 (0.5.12)"),
]

# fc in-width K: 3 until 0.5.11; num_aux_hidden_states / len(eagle_config ids) / 3 after (§B).
FC_WIDTH: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), "three", W + "models/llama_eagle3.py:138 (0.5.10)"),
    Row(VersionRange("0.5.12"), "num_aux", W + "models/llama_eagle3.py:160 (0.5.12)"),
]

# The MLP is rebuilt with `intermediate_size_mlp` for llama4_text drafts from 0.4.9 (§0 #2).
LLAMA4_MLP: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), False, W + "models/llama_eagle3.py (0.4.8)"),
    Row(VersionRange("0.4.9"), True, W + "models/llama_eagle3.py (0.4.9; reference §0 #2)"),
]

# Optional norms in front of fc: fc_norm.{j} (≥0.5.12), input_norm (≥0.5.17) (§0 #14, #17).
FC_NORM: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), False, W + "models/llama_eagle3.py (0.5.11)"),
    Row(
        VersionRange("0.5.12"),
        True,
        W + "models/llama_eagle3.py:160 fc and its fc_norm (0.5.12; reference §0 #14)",
    ),
]
INPUT_NORM: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.17"), False, W + "models/llama_eagle3.py (0.5.16)"),
    Row(
        VersionRange("0.5.17"),
        True,
        W + "models/llama_eagle3.py input_norm (0.5.17; reference §0 #17)",
    ),
]

# draft_vocab_size: null ⇒ head built with vocab_size rows, embed+head taken from target (§A.5).
NULL_VOCAB_HEAD_FROM_TARGET: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.2"), False, W + "models/llama_eagle3.py lm_head sized by config.draft_vocab_size (0.5.1)"),
    Row(VersionRange("0.5.2"), True,
        W + "models/llama_eagle3.py:201-207, speculative/eagle_worker.py:149-154 (0.5.3)"),
]  # fmt: skip

# The worker always replaces the draft embedding by the target's (unless widths differ).
EMBED_FROM_TARGET = W + "models/llama.py:624-634 set_embed (0.4.6.post1); :910-924 (0.5.23)"

# No d2t key: AttributeError (hot_token_id never assigned) until 0.4.8; None afterwards (§A.5).
D2T_MISSING_CRASH: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), True,
        W + "speculative/eagle_worker.py:121-127 (0.4.6.post1)"),
    Row(VersionRange("0.4.9"), False, W + "models/llama_eagle3.py:215 d2t branch, else hot_token_id None (0.4.10)"),
]  # fmt: skip

# The MLA draft class and its loader (§A.4).
MLA_ARCH = "Eagle3DeepseekV2ForCausalLM"
MLA: list[Row[str | None]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), None, W + "models/registry (no kimi_k25_eagle3.py before 0.5.12)"),
    Row(VersionRange("0.5.12", "0.5.23"), "mla", W + "models/kimi_k25_eagle3.py:377-450 (0.5.12)"),
    Row(VersionRange("0.5.23"), "mla", W + "models/kimi_k25_eagle3.py:428-501 (0.5.23)"),
]  # fmt: skip

# Speculators' own architectures: no code for them in any wheel (§H, sglang#18216).
SPECULATORS_ARCHS = ("Eagle3DraftModel", "Eagle3Speculator")
NO_SPECULATORS = "sglang/srt/models/registry.py: no Eagle3Speculator/Eagle3DraftModel in any wheel (sglang#18216)"

STACKED = (
    (".qkv_proj", ".q_proj", "q"),
    (".qkv_proj", ".k_proj", "k"),
    (".qkv_proj", ".v_proj", "v"),
    (".gate_up_proj", ".gate_proj", 0),
    (".gate_up_proj", ".up_proj", 1),
)
LEGACY = {"midlayer": "layers.0", "aux_norm_low": "fc_norm.0", "aux_norm_mid": "fc_norm.1",
          "aux_norm_high": "fc_norm.2"}  # fmt: skip
LLAMA_SKIPS = ("rotary_emb.inv_freq", "projector", "rotary_emb.cos_cached", "rotary_emb.sin_cached")


def is_mla(cfg: DraftConfig) -> bool:
    return MLA_ARCH in cfg.architectures


def num_aux(cfg: DraftConfig, release: EngineRelease) -> int:
    """fc in-width factor K as this release computes it (top-level ids only for the MLA draft)."""
    if pick(FC_WIDTH, release).value == "three" and not is_mla(cfg):
        return 3
    if cfg.raw.get("num_aux_hidden_states"):
        return int(cfg.raw["num_aux_hidden_states"])
    ids = cfg.eagle_config.get("eagle_aux_hidden_state_layer_ids")
    if is_mla(cfg) and not ids:
        ids = cfg.raw.get("eagle_aux_hidden_state_layer_ids")
    return len(ids) if ids else 3


def draft_vocab(cfg: DraftConfig, release: EngineRelease) -> int | None:
    """Rows of the draft head: `draft_vocab_size`, or `vocab_size` when null (≥0.5.2)."""
    if cfg.draft_vocab_size is not None:
        return cfg.draft_vocab_size
    return cfg.vocab_size if pick(NULL_VOCAB_HEAD_FROM_TARGET, release).value else None


def startup_failure(cfg: DraftConfig, release: EngineRelease) -> tuple[str, str] | None:
    """An exception the model constructor raises before any key is read: (message, source)."""
    if is_mla(cfg):
        row = pick(MLA, release)
        if row.value is None:
            return (
                f"ValueError: Model architectures ['{MLA_ARCH}'] are not supported for now",
                row.source,
            )
        if cfg.num_hidden_layers != 1:
            return "ValueError: Eagle3 MLA draft supports one layer only", row.source
    layers = pick(ONE_LAYER_ONLY, release)
    if layers.value and cfg.num_hidden_layers != 1:
        return "ValueError: EAGLE3 currently only supports 1 layer", layers.source
    if not cfg.draft_vocab_size_key:
        return (
            "AttributeError: 'LlamaConfig' object has no attribute 'draft_vocab_size'",
            pick(NULL_VOCAB_HEAD_FROM_TARGET, release).source,
        )
    if draft_vocab(cfg, release) is None:
        return (
            "TypeError: lm_head is built with draft_vocab_size=None (null before 0.5.2)",
            pick(NULL_VOCAB_HEAD_FROM_TARGET, release).source,
        )
    return None


def engine_params(cfg: DraftConfig, release: EngineRelease) -> list[ParamSpec]:
    """Every parameter of the draft module this release builds, with shapes and inits (§B)."""
    H, V = cfg.hidden_size, cfg.vocab_size
    Ht = cfg.target_width
    K = num_aux(cfg, release)
    vd = draft_vocab(cfg, release) or V
    out = [ParamSpec("model.embed_tokens.weight", (pad64(V), H), UNINITIALIZED, rows=V)]
    if pick(INPUT_NORM, release).value and cfg.norm_before_fc:
        out.append(ParamSpec("model.input_norm.weight", (K * Ht,), ONES))
    if pick(FC_NORM, release).value and cfg.fc_norm:
        out += [ParamSpec(f"model.fc_norm.{j}.weight", (Ht,), ONES) for j in range(K)]
    out.append(ParamSpec("model.fc.weight", (H, K * Ht), RANDOM))
    if pick(FC_BIAS, release).value == "always" or cfg.bias:
        out.append(ParamSpec("model.fc.bias", (H,), RANDOM))
    if is_mla(cfg):
        out += _mla_layer(cfg, release, "model.midlayer.")
    elif pick(DECODER, release).value == "midlayer":
        out += _layer(cfg, release, "model.midlayer.", first=True)
    else:
        for i in range(cfg.num_hidden_layers):
            out += _layer(cfg, release, f"model.layers.{i}.", first=i == 0)
    out.append(ParamSpec("model.norm.weight", (H,), ONES))
    if not cfg.tie_word_embeddings:
        out.append(ParamSpec("lm_head.weight", (pad64(vd), H), UNINITIALIZED, rows=vd))
    return out


def _intermediate(cfg: DraftConfig, release: EngineRelease) -> int:
    llama4 = cfg.model_type == "llama4_text" and cfg.raw.get("intermediate_size_mlp")
    if llama4 and pick(LLAMA4_MLP, release).value:
        return int(cfg.raw["intermediate_size_mlp"])
    return cfg.intermediate_size


def _mlp(cfg: DraftConfig, release: EngineRelease, p: str) -> list[ParamSpec]:
    H, inter = cfg.hidden_size, _intermediate(cfg, release)
    return [
        ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), UNINITIALIZED,
                  shards=((0, inter), (1, inter))),
        ParamSpec(p + "mlp.down_proj.weight", (H, inter), UNINITIALIZED),
    ]  # fmt: skip


def _layer(cfg: DraftConfig, release: EngineRelease, p: str, first: bool) -> list[ParamSpec]:
    """One Eagle3 decoder layer: layer 0 reads [embeds ‖ hidden] (2H), later layers H."""
    H, hd = cfg.hidden_size, cfg.head_dim
    q, kv = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd
    d_in = 2 * H if first else H
    out = [
        ParamSpec(p + "self_attn.qkv_proj.weight", (q + 2 * kv, d_in), UNINITIALIZED,
                  shards=(("q", q), ("k", kv), ("v", kv))),
        ParamSpec(p + "self_attn.o_proj.weight", (H, q), UNINITIALIZED),
    ]  # fmt: skip
    if cfg.raw.get("attention_bias") or cfg.bias:
        out.append(ParamSpec(p + "self_attn.o_proj.bias", (H,), UNINITIALIZED))
    out += _mlp(cfg, release, p)
    if first:
        out.append(ParamSpec(p + "input_layernorm.weight", (H,), ONES))
    out.append(ParamSpec(p + "hidden_norm.weight", (H,), ONES))
    out.append(ParamSpec(p + "post_attention_layernorm.weight", (H,), ONES))
    return out


def _mla_layer(cfg: DraftConfig, release: EngineRelease, p: str) -> list[ParamSpec]:
    """The MLA draft layer (DeepSeek-V2 attention names; shapes from the MLA config fields)."""
    r = cfg.raw
    H, nH = cfg.hidden_size, cfg.num_attention_heads
    ql, kvl = int(r.get("q_lora_rank") or 0), int(r.get("kv_lora_rank", 512))
    nope, rope = int(r.get("qk_nope_head_dim", 128)), int(r.get("qk_rope_head_dim", 64))
    vh = int(r.get("v_head_dim", 128))
    a = p + "self_attn."
    return [
        ParamSpec(a + "fused_qkv_a_proj_with_mqa.weight", (ql + kvl + rope, 2 * H), UNINITIALIZED,
                  shards=(("q_a", ql), ("kv_a", kvl + rope))),
        ParamSpec(a + "q_a_layernorm.weight", (ql,), ONES),
        ParamSpec(a + "q_b_proj.weight", (nH * (nope + rope), ql), UNINITIALIZED),
        ParamSpec(a + "kv_a_layernorm.weight", (kvl,), ONES),
        ParamSpec(a + "kv_b_proj.weight", (nH * (nope + vh), kvl), UNINITIALIZED),
        ParamSpec(a + "o_proj.weight", (H, nH * vh), UNINITIALIZED),
        *_mlp(cfg, release, p),
        ParamSpec(p + "input_layernorm.weight", (H,), ONES),
        ParamSpec(p + "hidden_norm.weight", (H,), ONES),
        ParamSpec(p + "post_attention_layernorm.weight", (H,), ONES),
    ]  # fmt: skip


def resolve_key(key: str, ctx: LoadContext) -> KeyOutcome:
    """What this release's loader does with one checkpoint key (§A.1-§A.4)."""
    if is_mla(ctx.cfg):
        return _resolve_mla(key, ctx)
    loader = pick(LOADER, ctx.release)
    if loader.value == DELEGATING:
        return _resolve_delegating(key, ctx, loader.source)
    return _resolve_own(key, ctx, loader.source, legacy=loader.value == LEGACY_MAP)


def _resolve_delegating(key: str, ctx: LoadContext, src: str) -> KeyOutcome:
    if "d2t" in key:
        return KeyOutcome(
            key, CONSUMED, message="hot_token_id = d2t + arange(len(d2t))", source=src
        )
    if "t2d" in key:
        return KeyOutcome(key, IGNORED, message="t2d is not used by SGLang", source=src)
    name = key if "lm_head" in key else "model." + key
    if any(s in name for s in LLAMA_SKIPS):
        return KeyOutcome(key, IGNORED, message=f"{name} skipped by LlamaForCausalLM", source=src)
    if ctx.cfg.tie_word_embeddings and "lm_head.weight" in name:
        return KeyOutcome(key, IGNORED, message="tie_word_embeddings: lm_head skipped", source=src)
    params = ctx.params
    for fused, shard, sid in STACKED:
        if shard in name:
            target = name.replace(shard, fused)
            if target.endswith(".bias") and target not in params:
                return KeyOutcome(
                    key, DROPPED, message=f"{target} absent, bias skipped", source=src
                )
            if target not in params:
                return KeyOutcome(key, ERROR, target, sid, f"KeyError: '{target}'", src)
            return KeyOutcome(key, LOADED, target, sid, source=src)
    if name in params:
        return KeyOutcome(key, LOADED, name, source=src)
    if name.endswith((".bias", ".kv_scale")):
        return KeyOutcome(key, DROPPED, message=f"{name} absent, skipped", source=src)
    return KeyOutcome(key, WARNED, message=f"Parameter {name} not found in params_dict", source=src)


def _resolve_own(key: str, ctx: LoadContext, src: str, legacy: bool) -> KeyOutcome:
    name = key
    if legacy:
        for old, new in LEGACY.items():
            if old in name:
                name = name.replace(old, new)
    if "d2t" in name:
        return KeyOutcome(
            key, CONSUMED, message="hot_token_id = d2t + arange(len(d2t))", source=src
        )
    if "t2d" in name:
        return KeyOutcome(key, IGNORED, message="t2d is skipped by the loader", source=src)
    sid = None
    for fused, shard, s in STACKED:
        if shard in name:
            name, sid = name.replace(shard, fused), s
            break
    target = name if name in ctx.params else "model." + name
    if target in ctx.params:
        return KeyOutcome(key, LOADED, target, sid, source=src)
    return KeyOutcome(key, DROPPED, message=f"no parameter {name} (nor model.{name})", source=src)


def _resolve_mla(key: str, ctx: LoadContext) -> KeyOutcome:
    src = pick(MLA, ctx.release).source
    if key == "d2t" or key.endswith(".d2t"):
        return KeyOutcome(
            key, CONSUMED, message="hot_token_id = d2t + arange(len(d2t))", source=src
        )
    if key == "t2d" or key.endswith(".t2d"):
        return KeyOutcome(key, IGNORED, message="t2d is skipped by the loader", source=src)
    name = re.sub(r"^layers\.0\.", "midlayer.", key)
    if not name.startswith("lm_head."):
        name = "model." + name
    sid = None
    for fused, shard, s in (
        (".gate_up_proj", ".gate_proj", 0),
        (".gate_up_proj", ".up_proj", 1),
        (".fused_qkv_a_proj_with_mqa", ".q_a_proj", "q_a"),
        (".fused_qkv_a_proj_with_mqa", ".kv_a_proj_with_mqa", "kv_a"),
    ):
        if shard in name:
            name, sid = name.replace(shard, fused), s
            break
    if name in ctx.params:
        return KeyOutcome(key, LOADED, name, sid, source=src)
    return KeyOutcome(
        key, WARNED, message=f"Eagle3 MLA: skipping unexpected weight {name}", source=src
    )


def from_target(ctx: LoadContext) -> dict[str, tuple[str, str]]:
    """Parameters the EAGLE worker overwrites after load: name -> (what happens, source) (§A.5)."""
    cfg, out = ctx.cfg, {}
    if not (cfg.target_hidden_size and cfg.target_hidden_size != cfg.hidden_size):
        out["model.embed_tokens.weight"] = (
            "set_embed: replaced by the target's embedding",
            EMBED_FROM_TARGET,
        )
    row = pick(NULL_VOCAB_HEAD_FROM_TARGET, ctx.release)
    if row.value and cfg.draft_vocab_size is None and not cfg.tie_word_embeddings:
        msg = "draft_vocab_size is null: set_embed_and_head takes the target's embedding and head"
        out["model.embed_tokens.weight"] = (msg, row.source)
        out["lm_head.weight"] = (msg, row.source)
    return out


def missing_d2t_failure(release: EngineRelease) -> tuple[str, str] | None:
    """The start-up exception when the checkpoint has no d2t (≤0.4.8), else None."""
    row = pick(D2T_MISSING_CRASH, release)
    if row.value:
        return (
            "AttributeError: 'LlamaForCausalLMEagle3' object has no attribute 'hot_token_id'",
            row.source,
        )
    return None


def config_problem(cfg: DraftConfig, release: EngineRelease) -> tuple[str, str] | None:
    """Why this release refuses the config.json as written: (reason, source), or None."""
    archs = [a for a in cfg.architectures if a in SPECULATORS_ARCHS]
    if cfg.source == "speculators" or archs:
        found = archs[0] if archs else "a speculators config"
        return (
            f"SGLang has no model class for {found} (transformer_layer_config is not read)",
            NO_SPECULATORS,
        )
    return None


CONFIG_FIX = (
    "rewrite config.json: architectures [LlamaForCausalLMEagle3] plus the flat fields of "
    "transformer_layer_config, draft_vocab_size, and aux ids in eagle_config "
    "(python -m kit fix CKPT --for sglang==X)"
)


def d2t_source(release: EngineRelease) -> str:
    """Where this release turns d2t into its token map (or leaves it None)."""
    return pick(D2T_MISSING_CRASH, release).source
