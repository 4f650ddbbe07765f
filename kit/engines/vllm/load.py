"""What vLLM's draft loader does with each checkpoint key, 0.9.2 … 0.33.0.

`Eagle3LlamaForCausalLM.load_weights` drops `t2d`, renames `d2t` to `draft_id_to_target_id`,
prefixes `model.` to everything but `lm_head`, skips a few substrings, maps `midlayer.` to
`layers.0.` and stacks q/k/v and gate/up; any other name is an error at start-up (`KeyError` up to
0.24, `ValueError` from 0.25). After load the proposer shares the target's embedding (and in some
releases its head) with the draft.
"""

from __future__ import annotations

from kit.engines.aux_ids import aux_flag_key
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vllm.config import MLA_DRAFT, honours, is_mla
from kit.engines.vllm.params import D2T_ALWAYS
from kit.engines.vocab import KeyOutcome, LoadContext, Outcome, Refusal, stacked

M = "vllm/model_executor/models/"
LOAD = M + "llama_eagle3.py Eagle3LlamaForCausalLM.load_weights + LlamaModel.load_weights"

# Unknown names: hand loop `params_dict[name]` (KeyError) until 0.24; AutoWeightsLoader from 0.25
# (0.25.0 llama_eagle3.py:256-269 LlamaModel.load_weights with hf_to_vllm_mapper).
UNKNOWN_KEY: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.25.0"), "KeyError", LOAD + " (params_dict[name], 0.9.2-0.24.0)"),
    Row(VersionRange("0.25.0"), "ValueError",
        M + "utils.py AutoWeightsLoader._load_module (0.25.0, 0.28.0 :389, 0.32.0 :443)"),
]  # fmt: skip

# Skip rules added to the loader's skip set.
SKIP_FC_WITHOUT_AUX = Row(VersionRange("0.12.0"), "fc.", LOAD + " (skip_substrs, ≥0.12.0)")
SKIP_INPUT_NORM = Row(VersionRange("0.18.0"), "input_norm.", LOAD + " (skip_substrs, ≥0.18.0)")
SKIP_MASK_HIDDEN = Row(VersionRange("0.18.0"), "mask_hidden", LOAD + " (≥0.18.0)")

# From 0.25 (AutoWeightsLoader) an unexpected `.bias` key is ignored instead of failing.
IGNORE_UNEXPECTED_BIAS: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.25.0"), False, LOAD + " (params_dict[name], 0.9.2-0.24.0)"),
    Row(VersionRange("0.25.0"), True,
        M + "utils.py AutoWeightsLoader.load_weights appends '.bias' to ignore_unexpected_suffixes "
        "(0.25.0 :402; 0.28.0 :404; 0.32.0 :458)"),
]  # fmt: skip

# Sharing the target's embedding / head after load.
SHARING: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.11.0"), "embed_if_same_shape",
        "vllm/v1/spec_decode/eagle.py load_model (0.9.2, 0.10.1.1)"),
    Row(VersionRange("0.11.0", "0.11.1"), "embed_and_full_vocab_head",
        "vllm/v1/spec_decode/eagle.py load_model (0.11.0)"),
    Row(VersionRange("0.11.1"), "only_if_absent",
        "vllm/v1/spec_decode/eagle.py:998-1075 has_own_embed_tokens / has_own_lm_head (0.11.1; "
        "0.33 llm_base_proposer.py)"),
]  # fmt: skip

# vLLM's own "Following weights were not initialized from checkpoint" check runs only on the set
# of names a model's load_weights returns; the draft's outer load_weights returns nothing in every
# release read (0.9.2 … 0.33.0), so the check never runs for it: a parameter no key writes keeps
# its torch.empty memory, without a word (NaN: nothing is accepted; else any value at all).
UNWRITTEN = (
    "0.9.2 " + M + "llama_eagle3.py:237-263 returns None, model_loader/default_loader.py:269-282 "
    "checks only a returned set; 0.32.0 llama_eagle3.py:420-470, default_loader.py:498-518"
)

# Shapes are checked by the weight loaders, never silently.
SHAPE_CHECK = (
    "vllm/model_executor/model_loader/weight_utils.py:976-988 default_weight_loader asserts "
    "param.size() == loaded_weight.size() (0.14.0); layers/linear.py shard loaders assert too"
)


def resolve_key(key: str, ctx: LoadContext) -> KeyOutcome:
    """What this release's loader does with one checkpoint key."""
    if is_mla(ctx.cfg, ctx.release):
        return _resolve_mla(key, ctx)
    cfg, rel = ctx.cfg, ctx.release
    name = key
    if "t2d" in name:
        return KeyOutcome(key, Outcome.IGNORED, message="t2d is dropped by the loader", source=LOAD)
    if "d2t" in name:
        name = name.replace("d2t", "draft_id_to_target_id")
        if name in ctx.params:
            return KeyOutcome(
                key, Outcome.CONSUMED, name, None, "loaded as draft_id_to_target_id", LOAD
            )
        return _unknown(key, name, ctx)
    if "mask_hidden" in name and rel in SKIP_MASK_HIDDEN.versions:
        return KeyOutcome(key, Outcome.IGNORED, message="parallel-drafting buffer", source=LOAD)
    if "lm_head" not in name:
        name = "model." + name
    if rel in SKIP_FC_WITHOUT_AUX.versions and not cfg.use_aux_hidden_state and "fc." in name:
        msg = f"skipped: {aux_flag_key(cfg)} is false"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=SKIP_FC_WITHOUT_AUX.source)
    skip_input_norm = rel in SKIP_INPUT_NORM.versions and not honours(cfg, rel).norm_before_fc
    if skip_input_norm and "input_norm." in name:
        msg = "skipped: norm_before_fc is not set as this release reads the config"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=SKIP_INPUT_NORM.source)
    name = name.replace("midlayer.", "layers.0.")
    fused, sid = stacked(name)
    if sid is not None:
        if fused in ctx.params:
            return KeyOutcome(key, Outcome.LOADED, fused, sid, source=LOAD)
        if fused.endswith(".bias") and pick(IGNORE_UNEXPECTED_BIAS, rel).value:
            msg = f"{fused} absent; dropped inside the fused attention layer"
            return KeyOutcome(key, Outcome.DROPPED, message=msg, source=LOAD)
        return _unknown(key, fused, ctx)
    if name in ctx.params:
        return KeyOutcome(key, Outcome.LOADED, name, source=LOAD)
    return _unknown(key, name, ctx)


def _unknown(key: str, name: str, ctx: LoadContext) -> KeyOutcome:
    bias = pick(IGNORE_UNEXPECTED_BIAS, ctx.release)
    if bias.value and name.endswith(".bias"):
        msg = f"{name}: unexpected .bias ignored"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=bias.source)
    row = pick(UNKNOWN_KEY, ctx.release)
    if row.value == "KeyError":
        return KeyOutcome(key, Outcome.ERROR, message=f"KeyError: '{name}'", source=row.source)
    msg = f"ValueError: There is no module or parameter named '{name}'"
    return KeyOutcome(key, Outcome.ERROR, message=msg, source=row.source)


# The MLA draft's loader (deepseek_eagle3.py): the outer `Eagle3DeepseekV2ForCausalLM.load_weights`
# drops t2d, renames d2t, prefixes `model.` to all but lm_head and hands the rest to an
# AutoWeightsLoader, whose `model` child maps midlayer. to layers.0. and stacks gate/up and
# q_a_proj / kv_a_proj_with_mqa into fused_qkv_a_proj. That inner loader is a hand loop until
# 0.24 (a name without a parameter is skipped without a word; a stacked one raises KeyError), an
# AutoWeightsLoader with a WeightsMapper from 0.25 (ValueError, `.bias` ignored).
MLA_LOAD = (
    MLA_DRAFT + " Eagle3DeepseekV2ForCausalLM.load_weights + DeepseekV2Eagle3Model.load_weights"
)
MLA_UNKNOWN: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.25.0"), "skipped",
        MLA_DRAFT + ":291 `if name not in params_dict: continue` (0.18.0; 0.22.0 :315, "
        "0.24.0 :303); stacked names params_dict[name]: KeyError"),
    Row(VersionRange("0.25.0"), "ValueError",
        MLA_DRAFT + ":271-283 AutoWeightsLoader(self) with hf_to_vllm_mapper (0.25.0; 0.33.0 "
        ":259-271); " + M + "utils.py AutoWeightsLoader._load_module (0.32.0 :443)"),
]  # fmt: skip
MLA_STACKED = ((".gate_up_proj", ".gate_proj", 0), (".gate_up_proj", ".up_proj", 1),
               (".fused_qkv_a_proj", ".q_a_proj", 0),
               (".fused_qkv_a_proj", ".kv_a_proj_with_mqa", 1))  # fmt: skip


def _resolve_mla(key: str, ctx: LoadContext) -> KeyOutcome:
    if "t2d" in key:
        return KeyOutcome(key, Outcome.IGNORED, message="t2d is dropped by the loader",
                          source=MLA_LOAD)  # fmt: skip
    if "d2t" in key:
        name = key.replace("d2t", "draft_id_to_target_id")
        if name in ctx.params:
            msg = "loaded as draft_id_to_target_id"
            return KeyOutcome(key, Outcome.CONSUMED, name, None, msg, MLA_LOAD)
        return _mla_unknown(key, name, ctx)
    name = key if "lm_head" in key else "model." + key
    name = name.replace("midlayer.", "layers.0.")
    row = pick(MLA_UNKNOWN, ctx.release)
    for fused, shard, sid in MLA_STACKED:
        if shard in name:
            target = name.replace(shard, fused)
            if target in ctx.params:
                return KeyOutcome(key, Outcome.LOADED, target, sid, source=MLA_LOAD)
            if row.value == "skipped":
                return KeyOutcome(key, Outcome.ERROR, message=f"KeyError: '{target}'",
                                  source=row.source)  # fmt: skip
            return _mla_unknown(key, target, ctx)
    if name in ctx.params:
        return KeyOutcome(key, Outcome.LOADED, name, source=MLA_LOAD)
    if row.value == "skipped" and name.startswith("model."):
        msg = f"no parameter {name}: skipped by the inner loader"
        return KeyOutcome(key, Outcome.DROPPED, message=msg, source=row.source)
    return _mla_unknown(key, name, ctx)


MLA_OUTER = (
    M + "utils.py AutoWeightsLoader._load_module (0.18.0 :327, 0.24.0 :341, 0.32.0 :443): the "
    "MLA draft's outer loader is an AutoWeightsLoader in every release that has it"
)


def _mla_unknown(key: str, name: str, ctx: LoadContext) -> KeyOutcome:
    bias = pick(IGNORE_UNEXPECTED_BIAS, ctx.release)
    if bias.value and name.endswith(".bias"):
        msg = f"{name}: unexpected .bias ignored"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=bias.source)
    msg = f"ValueError: There is no module or parameter named '{name}'"
    return KeyOutcome(key, Outcome.ERROR, message=msg, source=MLA_OUTER)


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


def missing_d2t_failure(release: EngineRelease) -> Refusal | None:
    """vLLM never fails without d2t: draft_id_to_target_id stays zero (identity)."""
    return None


def d2t_source(release: EngineRelease) -> str:
    """Where draft_id_to_target_id is built (zeros: identity) and loaded."""
    return pick(D2T_ALWAYS, release).source
