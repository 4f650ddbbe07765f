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
from typing import Any

from kit.checkpoint.config import DraftConfig, flatten_speculators
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vocab import Honoured, Refusal

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

# The Kimi-K2.5 MLA draft has its own class from 0.18.0; the kit models the Llama draft only.
MLA_ARCH = "Eagle3DeepseekV2ForCausalLM"
MLA_CLASS: list[Row[bool]] = [
    Row(VersionRange("0.11.0", "0.18.0"), False,
        P + "models/module_map.py:258 (0.11.0), :296 (0.15.0): Eagle3LlamaForCausalLM only"),
    Row(VersionRange("0.18.0"), True, "0.18.0 " + P + "models/module_map.py:334-335"),
]  # fmt: skip

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
    arch = architecture(cfg)
    if arch == MLA_ARCH and pick(MLA_CLASS, release).value:
        row = pick(MLA_CLASS, release)
        return Refusal(
            f"the kit models LMDeploy's Llama EAGLE-3 draft only, not {arch}", row.source
        )
    if arch not in (ARCH, CLASS):
        row = pick(UNKNOWN_ARCH, release)
        shown = cfg.architectures or []
        return Refusal(f"{row.value}: Can not found rewrite for architectures: {shown}", row.source)
    return None


def constructor_failure(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """The exception `Eagle3LlamaForCausalLM.__init__` raises before any key is read, or None
    (in the order the constructor meets them)."""
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


def num_aux(cfg: DraftConfig, release: EngineRelease) -> int:
    """fc's in-width factor: 3 in every release read (FC_WIDTH)."""
    return 3


def honours(cfg: DraftConfig, release: EngineRelease) -> Honoured:
    """No trained-behaviour flag is implemented: one plain EAGLE-3 forward for every config."""
    return Honoured.nothing(NO_FLAGS, RESIDUAL)


def rewritten_config(cfg: DraftConfig, release: EngineRelease) -> tuple[dict[str, Any], list[str]]:
    """config.json in the form every release reads, and what changed (empty: already fine).

    A speculators config becomes a flat LlamaConfig named `LlamaForCausalLM`, `draft_vocab_size`
    kept; its aux ids stay at top level in their own convention (LMDeploy reads none, the kit
    keeps them to say what the draft was trained on). A null `target_hidden_size` is dropped:
    LMDeploy reads it with `getattr`, so null would size fc from None.
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
    elif architecture(cfg) not in (ARCH, CLASS, MLA_ARCH):
        raw["architectures"] = [ARCH]
        changes.append(
            f"architectures {cfg.architectures} -> [{ARCH}] (the name LMDeploy's builder "
            f"renames to {CLASS})"
        )
    if "target_hidden_size" in raw and raw["target_hidden_size"] is None:
        del raw["target_hidden_size"]
        changes.append("target_hidden_size: null dropped (fc is sized from hidden_size)")
    return raw, changes
