"""vLLM's EAGLE-3 draft loading, 0.9.2 … 0.33.0, as version-ranged rules.

`Eagle3LlamaForCausalLM.load_weights` (shared/reference/vllm-eagle3.md §2) drops `t2d`, renames
`d2t` to `draft_id_to_target_id`, prefixes `model.` to everything but `lm_head`, skips a few
substrings, maps `midlayer.` to `layers.0.` and stacks q/k/v and gate/up; any other name is an
error at start-up (`KeyError` up to 0.24, `ValueError` from 0.28). Which configs a release
accepts (§1, §6), how many layers it builds, and when it shares the target's embedding or head
(§2) are tables below. The reference cites vLLM files without line numbers for most of these;
rows cite the file and the function.
"""

from __future__ import annotations

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
    ZEROS,
    KeyOutcome,
    LoadContext,
    ParamSpec,
    pad64,
)

M = "vllm/model_executor/models/"
LOAD = M + "llama_eagle3.py Eagle3LlamaForCausalLM.load_weights + LlamaModel.load_weights"

# Unknown names: hand loop `params_dict[name]` (KeyError) until 0.24; AutoWeightsLoader after.
UNKNOWN_KEY: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.28.0"), "KeyError", LOAD + " (params_dict[name], 0.9.2-0.24.0)"),
    Row(VersionRange("0.28.0"), "ValueError",
        M + "utils.py AutoWeightsLoader._load_module (0.28.0, 0.33.0)"),
]  # fmt: skip

# Speculators configs (`speculators_model_type`) are understood from 0.10 (§1.1, §6).
SPECULATORS_CONFIG: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.10.0"), False,
        "vllm/transformers_utils/config.py get_config (0.9.2: Unrecognized model)"),
    Row(VersionRange("0.10.0"), True, "vllm/transformers_utils/configs/speculators/base.py"),
]  # fmt: skip

# `LlamaForCausalLMEagle3` (SpecForge / ModelOpt) is registered from 0.11.0 (§1.2).
EAGLE3_SUFFIX_ARCH: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.11.0"), False,
        M + "registry.py (0.9.2, 0.10.x: only Eagle3LlamaForCausalLM; 0.9.2 also prefixes 'Eagle3')"),
    Row(VersionRange("0.11.0"), True, M + "registry.py (0.11.0: LlamaForCausalLMEagle3 registered)"),
]  # fmt: skip

# Draft decoder layers built: exactly one until 0.11.0, num_hidden_layers from 0.11.2 (§2).
MULTI_LAYER: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.11.2"), False, M + "llama_eagle3.py LlamaModel.__init__ (0.11.0)"),
    Row(VersionRange("0.11.2"), True, M + "llama_eagle3.py LlamaModel.__init__ (0.11.2)"),
]

# Every draft layer has a hidden_norm from 0.18 (§6); before, only layer 0.
HIDDEN_NORM_EVERY_LAYER: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.18.0"), False, M + "llama_eagle3.py LlamaDecoderLayer (0.14.0)"),
    Row(VersionRange("0.18.0"), True, M + "llama_eagle3.py LlamaDecoderLayer (0.18.0)"),
]

# fc in-width: 3·Ht until 0.18; num_aux_hidden_states / len(eagle_config ids) / 3 from 0.24 (§2).
FC_NUM_AUX: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.24.0"), False, M + "llama_eagle3.py LlamaModel.__init__ (0.18.0)"),
    Row(VersionRange("0.24.0"), True, M + "llama_eagle3.py LlamaModel.__init__ (0.24.0)"),
]

# input_norm (norm_before_fc) exists from 0.18; per-chunk fc_norm from 0.24 (§3, §6).
INPUT_NORM: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.18.0"), False, M + "llama_eagle3.py (0.14.0: no input_norm)"),
    Row(VersionRange("0.18.0"), True, M + "llama_eagle3.py combine_hidden_states (0.18.0)"),
]
FC_NORM: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.24.0"), False, M + "llama_eagle3.py (0.18.0: no fc_norm)"),
    Row(VersionRange("0.24.0"), True, M + "llama_eagle3.py combine_hidden_states (0.24.0)"),
]

# Which speculators fields the config translation copies (§1.1 table).
COPIES_NORM_BEFORE_FC: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.24.0"), False,
        "vllm/transformers_utils/configs/speculators/algos.py update_eagle3 (0.18.0)"),
    Row(VersionRange("0.24.0"), True,
        "vllm/transformers_utils/configs/speculators/algos.py update_eagle3 (0.24.0)"),
]  # fmt: skip
COPIES_FC_NORM: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.28.0"), False,
        "vllm/transformers_utils/configs/speculators/algos.py update_eagle3 (0.24.0)"),
    Row(VersionRange("0.28.0"), True,
        "vllm/transformers_utils/configs/speculators/algos.py update_eagle3 (0.28.0)"),
]  # fmt: skip
# Qwen3 drafts get their own class (q_norm / k_norm) from 0.24; before they are forced into Llama.
QWEN3_CLASS: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.24.0"), False,
        "vllm/transformers_utils/configs/speculators/algos.py (0.18.0: always Eagle3LlamaForCausalLM)"),
    Row(VersionRange("0.24.0"), True,
        "vllm/transformers_utils/configs/speculators/algos.py (0.24.0: llama/qwen3 map)"),
]  # fmt: skip

# Skip rules added to the loader's skip set (§2).
SKIP_FC_WITHOUT_AUX = Row(VersionRange("0.12.0"), "fc.", LOAD + " (skip_substrs, ≥0.12.0)")
SKIP_INPUT_NORM = Row(VersionRange("0.18.0"), "input_norm.", LOAD + " (skip_substrs, ≥0.18.0)")
SKIP_MASK_HIDDEN = Row(VersionRange("0.18.0"), "mask_hidden", LOAD + " (≥0.18.0)")

# draft_id_to_target_id: always built until 0.28; 0.33 builds it only when Vd != V (§2).
D2T_ALWAYS: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.33.0"), True, M + "llama_eagle3.py Eagle3LlamaForCausalLM.__init__"),
    Row(VersionRange("0.33.0"), False,
        M + "llama_eagle3.py Eagle3LlamaForCausalLM.__init__ (0.33.0: only if draft_vocab_size != vocab)"),
]  # fmt: skip

# 0.33 ignores unexpected `.bias` keys (AutoWeightsLoader) instead of failing (§6).
IGNORE_UNEXPECTED_BIAS: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.33.0"), False, LOAD),
    Row(VersionRange("0.33.0"), True, M + "utils.py AutoWeightsLoader (0.33.0: .bias ignored)"),
]

# Sharing the target's embedding / head after load (§2 "Embedding / lm_head sharing").
SHARING: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.11.0"), "embed_if_same_shape",
        "vllm/v1/spec_decode/eagle.py load_model (0.9.2, 0.10.1.1)"),
    Row(VersionRange("0.11.0", "0.11.2"), "embed_and_full_vocab_head",
        "vllm/v1/spec_decode/eagle.py load_model (0.11.0)"),
    Row(VersionRange("0.11.2"), "only_if_absent",
        "vllm/v1/spec_decode/eagle.py process_eagle_weight (0.11.2+; 0.33 llm_base_proposer.py)"),
]  # fmt: skip

STACKED = (
    (".qkv_proj", ".q_proj", "q"),
    (".qkv_proj", ".k_proj", "k"),
    (".qkv_proj", ".v_proj", "v"),
    (".gate_up_proj", ".gate_proj", 0),
    (".gate_up_proj", ".up_proj", 1),
)


def sees(cfg: DraftConfig, release: EngineRelease) -> dict[str, bool]:
    """The config flags as this release sees them (speculators fields copied per release)."""
    spec = cfg.source == "speculators"
    return {
        "norm_before_fc": cfg.norm_before_fc
        and (not spec or pick(COPIES_NORM_BEFORE_FC, release).value),
        "fc_norm": cfg.fc_norm and (not spec or pick(COPIES_FC_NORM, release).value),
        "qwen3": cfg.model_type == "qwen3" and pick(QWEN3_CLASS, release).value,
    }


def num_aux(cfg: DraftConfig, release: EngineRelease) -> int:
    if not pick(FC_NUM_AUX, release).value:
        return 3
    if cfg.raw.get("num_aux_hidden_states"):
        return int(cfg.raw["num_aux_hidden_states"])
    ids = cfg.eagle_config.get("eagle_aux_hidden_state_layer_ids")
    return len(ids) if ids else 3


def builds_d2t(cfg: DraftConfig, release: EngineRelease) -> bool:
    return pick(D2T_ALWAYS, release).value or cfg.effective_draft_vocab != cfg.vocab_size


def engine_params(cfg: DraftConfig, release: EngineRelease) -> list[ParamSpec]:
    """Every parameter of `Eagle3LlamaForCausalLM` in this release, with shapes and inits."""
    H, V, Ht, hd = cfg.hidden_size, cfg.vocab_size, cfg.target_width, cfg.head_dim
    vd = cfg.effective_draft_vocab
    K = num_aux(cfg, release)
    flags = sees(cfg, release)
    q, kv, inter = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd, cfg.intermediate_size
    out = [ParamSpec("model.embed_tokens.weight", (pad64(V), H), UNINITIALIZED, rows=V)]
    if pick(INPUT_NORM, release).value and flags["norm_before_fc"]:
        out.append(ParamSpec("model.input_norm.weight", (K * Ht,), ONES))
    if pick(FC_NORM, release).value and flags["fc_norm"]:
        out += [ParamSpec(f"model.fc_norm.{j}.weight", (Ht,), ONES) for j in range(K)]
    out.append(ParamSpec("model.fc.weight", (H, K * Ht), RANDOM))
    n_layers = cfg.num_hidden_layers if pick(MULTI_LAYER, release).value else 1
    every_hidden_norm = pick(HIDDEN_NORM_EVERY_LAYER, release).value
    for i in range(n_layers):
        p = f"model.layers.{i}."
        d_in = 2 * H if i == 0 else H
        out += [
            ParamSpec(p + "self_attn.qkv_proj.weight", (q + 2 * kv, d_in), UNINITIALIZED,
                      shards=(("q", q), ("k", kv), ("v", kv))),
            ParamSpec(p + "self_attn.o_proj.weight", (H, q), UNINITIALIZED),
        ]  # fmt: skip
        if flags["qwen3"]:
            out += [
                ParamSpec(p + "self_attn.q_norm.weight", (hd,), ONES),
                ParamSpec(p + "self_attn.k_norm.weight", (hd,), ONES),
            ]
        out += [
            ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), UNINITIALIZED,
                      shards=((0, inter), (1, inter))),
            ParamSpec(p + "mlp.down_proj.weight", (H, inter), UNINITIALIZED),
            ParamSpec(p + "input_layernorm.weight", (H,), ONES),
        ]  # fmt: skip
        if i == 0 or every_hidden_norm:
            out.append(ParamSpec(p + "hidden_norm.weight", (H,), ONES))
        out.append(ParamSpec(p + "post_attention_layernorm.weight", (H,), ONES))
    out.append(ParamSpec("model.norm.weight", (H,), ONES))
    out.append(ParamSpec("lm_head.weight", (pad64(vd), H), UNINITIALIZED, rows=vd))
    if builds_d2t(cfg, release):
        out.append(ParamSpec("draft_id_to_target_id", (vd,), ZEROS))
    return out


def startup_failure(cfg: DraftConfig, release: EngineRelease) -> tuple[str, str] | None:
    """An exception raised before any key is read (config translation), or None."""
    row = pick(QWEN3_CLASS, release)
    if cfg.source == "speculators" and row.value and cfg.model_type not in ("llama", "qwen3"):
        msg = f"ValueError: unsupported speculators draft model_type {cfg.model_type!r}"
        return msg, row.source
    return None


def config_problem(cfg: DraftConfig, release: EngineRelease) -> tuple[str, str] | None:
    """Why this release refuses the config.json as written (§1, §6): (reason, source) or None."""
    if cfg.source == "speculators":
        row = pick(SPECULATORS_CONFIG, release)
        if not row.value:
            return "speculators configs are not understood (Unrecognized model)", row.source
        return None
    arch = cfg.architectures[0] if cfg.architectures else ""
    row = pick(EAGLE3_SUFFIX_ARCH, release)
    if arch.endswith("Eagle3") and not row.value:
        shown = arch if release.at_least("0.10.0") else "Eagle3" + arch
        return f"Model architectures ['{shown}'] are not supported", row.source
    if arch.startswith("Eagle3Deepseek"):
        return f"the kit models vLLM's Llama EAGLE-3 draft only, not {arch}", M + "registry.py"
    return None


CONFIG_FIX = (
    "rewrite config.json architectures to LlamaForCausalLM (the EAGLE-official spelling every "
    "release accepts) or use vLLM ≥ 0.11.0 (python -m kit fix CKPT --for vllm==X)"
)
SPECULATORS_FIX = "use vLLM ≥ 0.10.0, or rewrite config.json to a flat LlamaForCausalLM config"


def resolve_key(key: str, ctx: LoadContext) -> KeyOutcome:
    """What this release's loader does with one checkpoint key (§2)."""
    cfg, rel = ctx.cfg, ctx.release
    name = key
    if "t2d" in name:
        return KeyOutcome(key, IGNORED, message="t2d is dropped by the loader", source=LOAD)
    if "d2t" in name:
        name = name.replace("d2t", "draft_id_to_target_id")
        if name in ctx.params:
            return KeyOutcome(key, CONSUMED, name, None, "loaded as draft_id_to_target_id", LOAD)
        return _unknown(key, name, ctx)
    if "mask_hidden" in name and rel in SKIP_MASK_HIDDEN.versions:
        return KeyOutcome(key, IGNORED, message="parallel-drafting buffer", source=LOAD)
    if "lm_head" not in name:
        name = "model." + name
    no_aux = cfg.eagle_config.get("use_aux_hidden_state") is False
    if rel in SKIP_FC_WITHOUT_AUX.versions and no_aux and "fc." in name:
        msg = "skipped: eagle_config.use_aux_hidden_state is false"
        return KeyOutcome(key, IGNORED, message=msg, source=SKIP_FC_WITHOUT_AUX.source)
    skip_input_norm = rel in SKIP_INPUT_NORM.versions and not sees(cfg, rel)["norm_before_fc"]
    if skip_input_norm and "input_norm." in name:
        msg = "skipped: norm_before_fc is not set as this release reads the config"
        return KeyOutcome(key, IGNORED, message=msg, source=SKIP_INPUT_NORM.source)
    name = name.replace("midlayer.", "layers.0.")
    for fused, shard, sid in STACKED:
        if shard in name:
            stacked = name.replace(shard, fused)
            if stacked in ctx.params:
                return KeyOutcome(key, LOADED, stacked, sid, source=LOAD)
            if stacked.endswith(".bias") and pick(IGNORE_UNEXPECTED_BIAS, rel).value:
                msg = f"{stacked} absent; dropped inside the fused attention layer"
                return KeyOutcome(key, DROPPED, message=msg, source=LOAD)
            return _unknown(key, stacked, ctx)
    if name in ctx.params:
        return KeyOutcome(key, LOADED, name, source=LOAD)
    return _unknown(key, name, ctx)


def _unknown(key: str, name: str, ctx: LoadContext) -> KeyOutcome:
    bias = pick(IGNORE_UNEXPECTED_BIAS, ctx.release)
    if bias.value and name.endswith(".bias"):
        msg = f"{name}: unexpected .bias ignored"
        return KeyOutcome(key, IGNORED, message=msg, source=bias.source)
    row = pick(UNKNOWN_KEY, ctx.release)
    if row.value == "KeyError":
        return KeyOutcome(key, ERROR, message=f"KeyError: '{name}'", source=row.source)
    msg = f"ValueError: There is no module or parameter named '{name}'"
    return KeyOutcome(key, ERROR, message=msg, source=row.source)


def from_target(ctx: LoadContext) -> dict[str, tuple[str, str]]:
    """Parameters the proposer shares from the target after load: name -> (what, source)."""
    row = pick(SHARING, ctx.release)
    cfg = ctx.cfg
    has_embed = any("embed_tokens" in k for k in ctx.keys)
    has_head = any("lm_head" in k for k in ctx.keys)
    out: dict[str, tuple[str, str]] = {}
    if row.value == "only_if_absent":
        if not has_embed:
            out["model.embed_tokens.weight"] = (
                "Detected EAGLE model without its own embed_tokens in the checkpoint. "
                "Sharing target model embedding weights with the draft model.",
                row.source,
            )
        if not has_head:
            out["lm_head.weight"] = (
                "Detected EAGLE model without its own lm_head in the checkpoint. "
                "Sharing target model lm_head weights with the draft model.",
                row.source,
            )
        return out
    out["model.embed_tokens.weight"] = (
        "Assuming the EAGLE head shares the same vocab embedding with the target model.",
        row.source,
    )
    if row.value == "embed_and_full_vocab_head" and cfg.effective_draft_vocab == cfg.vocab_size:
        out["lm_head.weight"] = (
            "Assuming the EAGLE head shares the same lm_head with the target model.",
            row.source,
        )
    return out


def missing_d2t_failure(release: EngineRelease) -> tuple[str, str] | None:
    """vLLM never fails without d2t: draft_id_to_target_id stays zero (identity)."""
    return None


def d2t_source(release: EngineRelease) -> str:
    """Where draft_id_to_target_id is built (zeros: identity) and loaded."""
    return pick(D2T_ALWAYS, release).source
