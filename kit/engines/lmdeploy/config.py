"""How LMDeploy's PyTorch engine reads an EAGLE-3 draft's config.json: what stops it at start-up,
what it builds, what it honours.

The draft config is read by transformers (`AutoConfig`; from 0.15 a bare `PretrainedConfig` when
that fails), then a config builder is chosen by the first `condition` that holds. Only
`LlamaModelConfigBuilder` knows drafts: for `architectures[0] == "LlamaForCausalLM"` it renames the
draft to `Eagle3LlamaForCausalLM`, the one EAGLE-3 class in the model map. Any other name stops at
the model-class lookup; a speculators config (no top-level `model_type`, layer fields nested in
`transformer_layer_config`) stops earlier. No trained-behaviour flag (`norm_before_fc`, `fc_norm`,
`norm_output`, `norm_before_residual`) and no aux-layer id is read by any release.
`rewritten_config` is the flat `LlamaForCausalLM` form, which `python -m kit fix --for lmdeploy==X`
writes. Sources are paths inside the wheel's `lmdeploy/`, with the releases they were read in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kit.checkpoint.config import DraftConfig, flatten_speculators
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.classes import Shape, shape_of
from kit.engines.lmdeploy import registry
from kit.engines.vocab import Honoured, Refusal, untie_trained_head

P = "lmdeploy/pytorch/"
EAGLE3 = P + "models/llama_eagle3.py"
ARCH = "LlamaForCausalLM"  # the draft name the builder renames (configurations/llama.py:11,21)
CLASS = "Eagle3LlamaForCausalLM"  # the class it is renamed to, registered in models/module_map.py

# A speculators config: 0.11.0 calls AutoConfig, which needs a top-level model_type; 0.15 falls
# back to a bare PretrainedConfig, whose missing hidden_size the default builder reads. (When a
# transformers model type's name occurs in the checkpoint path, AutoConfig guesses that class
# instead and the model-class lookup fails on 'Eagle3DraftModel' / 'Eagle3Speculator'.)
SPECULATORS_REFUSAL: list[Row[str]] = [
    Row(VersionRange("0.11.0", "0.15.0"),
        "ValueError: Unrecognized model in <draft folder>. Should have a `model_type` key in "
        "its config.json",
        "0.11.0 " + P + "config.py:325 AutoConfig.from_pretrained"),
    Row(VersionRange("0.15.0"),
        "AttributeError: 'PretrainedConfig' object has no attribute 'hidden_size'",
        "0.15.0 lmdeploy/hf_configs/__init__.py:36-39 PretrainedConfig fallback, then "
        + P + "configurations/default.py:18 (0.18.0: hf_configs/__init__.py:39-42)"),
]  # fmt: skip

# Any other architecture: the builder keeps the name and the model-class lookup fails.
UNKNOWN_ARCH: list[Row[str]] = [
    Row(VersionRange("0.11.0", "0.15.0"), "RuntimeError",
        "0.11.0 " + P + "models/patch.py:185 _get_model_class"),
    Row(VersionRange("0.15.0"), "RuntimeError",
        "0.15.0, 0.18.0 " + P + "models/patch.py:196 _get_model_class"),
]  # fmt: skip

# The Kimi-K2.5 MLA draft (0.18.0, registry.CLASSES): built for a kimi_k2 draft config; a
# DeepSeek model_type meets DeepSeek's builder, which takes MTP drafts only.
MLA_ARCH = "Eagle3DeepseekV2ForCausalLM"
MLA = P + "models/kimi_k25_eagle3.py"
MLA_Q_LORA = MLA + ":109-110 (0.18.0)"
MLA_ONE_LAYER = "0.18.0 " + P + "configurations/kimi_k2.py:70-73; " + MLA + ":274-275"
MLA_AUX_IDS = MLA + ":33-50 _get_eagle_aux_layer_ids: exactly three distinct ids (0.18.0)"
MLA_FLAGS = MLA + ":260-271 fc_norm / use_aux_norm, :290 norm_output (0.18.0)"
MLA_RESIDUAL = MLA + ":205 residual = hidden_states before hidden_norm (0.18.0)"

# Construction (Eagle3LlamaForCausalLM.__init__), identical in every release read.
ONE_LAYER = EAGLE3 + ":171-172 (0.11.0), :172-173 (0.15.0, 0.18.0)"
FC_WIDTH = EAGLE3 + ":96-102 (0.11.0), :97-103 (0.15.0, 0.18.0) fc = target_hidden_size * 3"
HEAD_ROWS = EAGLE3 + ":177-181 (0.11.0), :178-182 (0.15.0, 0.18.0) lm_head(draft_vocab_size)"
# The input layer keeps the state before hidden_norm as the residual; nothing reads the flags.
RESIDUAL = EAGLE3 + ":59 (0.11.0), :60 (0.15.0, 0.18.0) residual = hidden_states"
NO_FLAGS = EAGLE3 + ": no input_norm, fc_norm or norm_output in any release read"

CONFIG_FIX = (
    "rewrite config.json as LMDeploy reads it: a flat LlamaConfig with architectures "
    "[LlamaForCausalLM] (its builder renames it Eagle3LlamaForCausalLM) and draft_vocab_size, "
    "keys under midlayer.* (python -m kit fix CKPT --engine lmdeploy==X)"
)


def speculators(cfg: DraftConfig) -> bool:
    return cfg.source == "speculators"


def architecture(cfg: DraftConfig) -> str:
    return cfg.architectures[0] if cfg.architectures else ""


def refuses_config(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """Why this release stops at start-up on the config.json as written, or None."""
    if speculators(cfg):
        row = pick(SPECULATORS_REFUSAL, release)
        return Refusal(row.value, row.source)
    cls = registry.built(architecture(cfg), release)
    if cls is None:
        row = pick(UNKNOWN_ARCH, release)
        shown = cfg.architectures or []
        return Refusal(f"{row.value}: Can not found rewrite for architectures: {shown}", row.source)
    taken = registry.claimed(cfg.model_type, release)
    if cls.shape is Shape.MLA:
        if taken is None or taken[0] != "kimi_k2":  # only Kimi-K2's builder makes the MLA draft
            msg = taken[1] if taken and taken[1] else "the MLA draft needs model_type kimi_k2"
            return Refusal(msg, taken[2] if taken else registry.CLASSES[1].source)
        return None
    if taken is not None:
        module, error, source = taken
        msg = error or (
            f"the {module} config builder takes model_type {cfg.model_type!r} ahead of Llama's: "
            f"the draft is not renamed {CLASS}, and the target class it names is built instead"
        )
        return Refusal(msg, source)
    return None


def is_mla(cfg: DraftConfig, release: EngineRelease) -> bool:
    cls = registry.built(architecture(cfg), release)
    return cls is not None and cls.shape is Shape.MLA


def constructor_failure(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """The exception `Eagle3LlamaForCausalLM.__init__` raises before any key is read, or None
    (in the order the constructor meets them)."""
    if is_mla(cfg, release):
        return _mla_constructor_failure(cfg)
    if cfg.num_hidden_layers != 1:
        return Refusal("ValueError: eagle3 only supports 1 decode layer", ONE_LAYER)
    if "target_hidden_size" in cfg.raw and cfg.raw["target_hidden_size"] is None:
        msg = "TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'"
        return Refusal(msg + " (fc width: target_hidden_size is null)", FC_WIDTH)
    if not cfg.draft_vocab_size_key:
        msg = "AttributeError: 'LlamaConfig' object has no attribute 'draft_vocab_size'"
        return Refusal(msg, HEAD_ROWS)
    if cfg.draft_vocab_size is None:
        return Refusal("TypeError: lm_head is built with draft_vocab_size=None", HEAD_ROWS)
    return None


def _mla_constructor_failure(cfg: DraftConfig) -> Refusal | None:
    if cfg.raw.get("q_lora_rank") is None:
        return Refusal("ValueError: Kimi EAGLE3 MLA requires q_lora_rank", MLA_Q_LORA)
    if cfg.num_hidden_layers != 1:
        msg = "ValueError: Kimi-K2 EAGLE3 draft model must contain exactly one layer."
        return Refusal(msg, MLA_ONE_LAYER)
    ids = mla_aux_ids(cfg)
    if len(ids) != 3 or len(set(ids)) != 3:
        msg = "ValueError: EAGLE3 auxiliary layer ids must contain exactly three unique layer ids"
        return Refusal(msg, MLA_AUX_IDS)
    return None


def mla_aux_ids(cfg: DraftConfig) -> list[int]:
    """The ids the MLA draft sizes fc by: eagle_config's, else the top level, else (2, 30, 58)."""
    ids = cfg.eagle_config.get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        ids = cfg.raw.get("eagle_aux_hidden_state_layer_ids")
    return [int(i) for i in ids] if ids is not None else [2, 30, 58]


def num_aux(cfg: DraftConfig, release: EngineRelease) -> int:
    """fc's in-width factor: 3 for the Llama draft in every release read (FC_WIDTH); the MLA
    draft's count of ids (three, or its constructor refuses)."""
    return len(mla_aux_ids(cfg)) if is_mla(cfg, release) else 3


def honours(cfg: DraftConfig, release: EngineRelease) -> Honoured:
    """The Llama draft implements no trained-behaviour flag: one plain EAGLE-3 forward for every
    config. The MLA draft runs per-aux fc_norm and norm_output."""
    if not is_mla(cfg, release):
        return Honoured.nothing(NO_FLAGS, RESIDUAL)
    return Honoured(
        norm_before_fc=False,
        fc_norm=cfg.fc_norm,
        norm_output=cfg.norm_output,
        norm_before_residual=False,
        sources={"norm_before_fc": MLA + ": no input_norm (0.18.0)", "fc_norm": MLA_FLAGS,
                 "norm_output": MLA_FLAGS, "norm_before_residual": MLA_RESIDUAL},
    )  # fmt: skip


def rewritten_config(
    cfg: DraftConfig, release: EngineRelease, keys: Sequence[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """config.json in the form every release reads, and what changed (empty: already fine).

    A speculators config becomes a flat LlamaConfig named `LlamaForCausalLM`, `draft_vocab_size`
    kept; its aux ids stay at top level in their own convention (LMDeploy reads none, the kit
    keeps them to say what the draft was trained on). A flat config names the class this release
    maps for the draft's shape (`LlamaForCausalLM`, which Llama's builder renames; the MLA draft
    from 0.18.0). A null `target_hidden_size` is dropped: LMDeploy reads it with `getattr`, so
    null would size fc from None. A tied config over a trained head is untied: LMDeploy skips the
    head's tensor and ties nothing (`untie_trained_head`).
    """
    raw = json.loads(json.dumps(cfg.raw))
    changes: list[str] = []
    if speculators(cfg):
        raw = flatten_speculators(raw, ARCH)
        if cfg.aux_layer_ids:
            raw["eagle_aux_hidden_state_layer_ids"] = cfg.aux_layer_ids
        changes.append(
            f"speculators config -> flat {ARCH} config (LMDeploy's builder renames it {CLASS})"
        )
    else:
        shape = shape_of(cfg, keys)
        changes += _renamed(raw, cfg, release, shape)
        taken = registry.claimed(cfg.model_type, release)
        if shape is Shape.LLAMA and taken is not None:
            raw["model_type"] = "llama"
            changes.append(
                f"model_type {cfg.model_type!r} -> 'llama' (the {taken[0]} config builder takes "
                "the other ahead of Llama's, which makes the draft an EAGLE-3 one)"
            )
    if "target_hidden_size" in raw and raw["target_hidden_size"] is None:
        del raw["target_hidden_size"]
        changes.append("target_hidden_size: null dropped (fc is sized from hidden_size)")
    return raw, changes + untie_trained_head(raw, cfg, keys)


def _renamed(raw: dict, cfg: DraftConfig, release: EngineRelease, shape: Shape) -> list[str]:
    have = registry.built(architecture(cfg), release)
    want = registry.for_shape(shape, release)
    if (have is not None and have.shape is shape) or want is None:
        return []
    name = registry.spelling(want)
    raw["architectures"] = [name]
    why = (
        f"the name LMDeploy's builder renames to {CLASS}"
        if want.name == CLASS
        else f"the class {release} maps for {shape.words} drafts: {want.source}"
    )
    return [f"architectures {cfg.architectures} -> [{name}] ({why})"]
