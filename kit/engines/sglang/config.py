"""How SGLang reads an EAGLE-3 draft's config.json: what it refuses, what it builds, what it honours.

SGLang picks the draft class from `architectures` (`LlamaForCausalLMEagle3`, from 0.5.12 also the
MLA draft `Eagle3DeepseekV2ForCausalLM`) and reads a flat LlamaConfig; no release has code for the
speculators format (`transformer_layer_config`, `Eagle3Speculator`). `rewritten_config` is the
form SGLang wants, which `python -m kit fix --for sglang==X` writes and the load replay assumes
when it tells what the keys would do once config.json is rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kit.checkpoint.config import AFTER_K_LAYERS, DraftConfig, flatten_speculators
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.classes import Shape, shape_of
from kit.engines.sglang import registry
from kit.engines.vocab import Honoured, Refusal, untie_trained_head

W = "sglang/srt/"  # every source path below is inside the wheel's sglang/srt/
EAGLE3 = W + "models/llama_eagle3.py"

ARCH = "LlamaForCausalLMEagle3"
MLA_ARCH = "Eagle3DeepseekV2ForCausalLM"
SPECULATORS_ARCHS = ("Eagle3DraftModel", "Eagle3Speculator")
NO_SPECULATORS = (
    W + "models/registry.py: no Eagle3Speculator / Eagle3DraftModel class and no reader of "
    "transformer_layer_config in any release (sglang issue #18216)"
)

# `ValueError("EAGLE3 currently only supports 1 layer")` until 0.5.11; a layers ModuleList after.
ONE_LAYER_ONLY: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), True,
        EAGLE3 + ":144 single midlayer, ValueError for num_hidden_layers != 1 (0.5.10)"),
    Row(VersionRange("0.5.12"), False, EAGLE3 + ":180-186 layers ModuleList (0.5.12)"),
]  # fmt: skip

# fc in-width factor K: 3 until 0.5.11; num_aux_hidden_states, else len(eagle_config ids), else 3.
FC_NUM_AUX: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), False, EAGLE3 + ":138-142 hidden_size_in * 3 (0.5.10)"),
    Row(VersionRange("0.5.12"), True, EAGLE3 + ":154-165 num_aux_hidden_states (0.5.12)"),
]  # fmt: skip

# `fc` has a bias only with `bias: true` from 0.4.9; a plain nn.Linear (bias) before.
FC_BIAS_ALWAYS: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), True, EAGLE3 + ":108-111 nn.Linear (0.4.6.post1)"),
    Row(VersionRange("0.4.9"), False, EAGLE3 + ":138-142 bias=getattr(config, 'bias') (0.5.10)"),
]  # fmt: skip

# The MLP is rebuilt with `intermediate_size_mlp` for llama4_text drafts from 0.4.9.
LLAMA4_MLP: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), False, EAGLE3 + " (0.4.8: LlamaMLP of llama.py)"),
    Row(VersionRange("0.4.9"), True, EAGLE3 + ":70-77 intermediate_size_mlp (0.5.12)"),
]

# Trained behaviours, by release: per-aux fc_norm and norm_output (0.5.12), input_norm (0.5.17).
FC_NORM: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), False, EAGLE3 + " (0.5.11: no fc_norm)"),
    Row(VersionRange("0.5.12"), True, EAGLE3 + ":167-177 fc_norm / use_aux_norm (0.5.12)"),
]
NORM_OUTPUT: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), False, EAGLE3 + " (0.5.11: pre-norm hidden out)"),
    Row(VersionRange("0.5.12"), True, EAGLE3 + ":188,246 norm_output (0.5.12)"),
]
INPUT_NORM: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.17"), False, EAGLE3 + " (0.5.16: no input_norm)"),
    Row(VersionRange("0.5.17"), True, EAGLE3 + ":165-174,230-231 norm_before_fc (0.5.17)"),
]
# The input layer keeps the pre-hidden_norm state as residual in every release.
NO_NORM_BEFORE_RESIDUAL = EAGLE3 + ":93-97 residual = hidden_states before hidden_norm (0.5.12)"

# draft_vocab_size: null => head built with vocab_size rows, embed + head taken from the target.
NULL_VOCAB_HEAD_FROM_TARGET: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.2"), False,
        EAGLE3 + " lm_head sized by config.draft_vocab_size (0.5.1)"),
    Row(VersionRange("0.5.2"), True,
        EAGLE3 + ":201-207, speculative/eagle_worker.py:149-154 (0.5.3)"),
]  # fmt: skip

# The MLA draft class (registry.CLASSES) and its constructor: one layer, and a q_lora_rank (its
# fused q/kv down-projection is rebuilt 2H wide from q_lora_rank + kv_lora_rank + rope).
MLA: list[Row[str | None]] = [
    Row(VersionRange("0.4.4.post2", "0.5.12"), None,
        W + "models/registry.py (no kimi_k25_eagle3.py before 0.5.12)"),
    Row(VersionRange("0.5.12", "0.5.23"), "mla", W + "models/kimi_k25_eagle3.py:377-450 (0.5.12)"),
    Row(VersionRange("0.5.23"), "mla", W + "models/kimi_k25_eagle3.py:428-501 (0.5.23)"),
]  # fmt: skip
MLA_ONE_LAYER = W + "models/kimi_k25_eagle3.py:207 (0.5.12), :244 (0.5.23)"
MLA_Q_LORA = W + "models/kimi_k25_eagle3.py:103-106 (0.5.12), :114-117 (0.5.23)"

# A flat config naming a target class (the EAGLE reference trainer writes `LlamaForCausalLM`): no
# draft rename for it (0.5.10 configs/model_config.py:293-360 renames other architectures only),
# so the registry builds the target's class, and the EAGLE worker then asks it for the draft's
# hot-token map, which only `LlamaForCausalLMEagle3` has.
TARGET_CLASS_AS_DRAFT: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), "get_hot_token_id",
        W + "speculative/eagle_worker.py:122 model.get_hot_token_id() (0.4.4.post2)"),
    Row(VersionRange("0.4.9", "0.5.4"), "hot_token_id",
        W + "speculative/eagle_worker.py:143 model.hot_token_id (0.4.9)"),
    Row(VersionRange("0.5.4"), "hot_token_id",
        W + "speculative/eagle_worker_v2.py:213 model.hot_token_id (0.5.10)"),
]  # fmt: skip

CONFIG_FIX = (
    "rewrite config.json in SGLang's form: architectures [LlamaForCausalLMEagle3], the fields of "
    "transformer_layer_config at top level, draft_vocab_size, aux ids in eagle_config "
    "(python -m kit fix CKPT --engine sglang==X)"
)


def architecture(cfg: DraftConfig) -> str:
    return cfg.architectures[0] if cfg.architectures else ARCH


def is_mla(cfg: DraftConfig) -> bool:
    """Whether the config names the MLA draft class (what SGLang builds goes by the name; the
    draft's own shape is `kit.engines.classes.shape_of`)."""
    return architecture(cfg) == MLA_ARCH


def refuses_config(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """Why this release has no model class for the config.json as written, or None."""
    archs = [a for a in cfg.architectures if a in SPECULATORS_ARCHS]
    if cfg.source == "speculators" or archs:
        found = archs[0] if archs else "a speculators config"
        return Refusal(
            f"SGLang has no model class for {found} (transformer_layer_config is not read)",
            NO_SPECULATORS,
        )
    arch = architecture(cfg)
    if registry.built(arch, release) is not None:
        return None
    if "Eagle3" in arch:  # no such class at all: the registry (or its fallback) refuses it
        return Refusal(*registry.unregistered(arch, release))
    return _target_class_as_draft(arch, release)


def _target_class_as_draft(arch: str, release: EngineRelease) -> Refusal:
    """A flat config naming a target class, which SGLang builds as the draft."""
    row = pick(TARGET_CLASS_AS_DRAFT, release)
    return Refusal(
        f"SGLang builds its target class {arch} for the draft, which has no {row.value}: "
        f"AttributeError at start-up (the draft class is {ARCH})",
        row.source,
    )


def constructor_failure(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """An exception the draft's constructor raises before any key is read, or None."""
    if is_mla(cfg) and cfg.raw.get("q_lora_rank") is None:
        msg = "ValueError: Eagle3 MLA layer requires q_lora_rank in the draft config"
        return Refusal(msg, MLA_Q_LORA)
    if is_mla(cfg) and cfg.num_hidden_layers != 1:
        return Refusal("ValueError: EAGLE3 currently only supports 1 layer", MLA_ONE_LAYER)
    layers = pick(ONE_LAYER_ONLY, release)
    if layers.value and cfg.num_hidden_layers != 1:
        return Refusal("ValueError: EAGLE3 currently only supports 1 layer", layers.source)
    head = pick(NULL_VOCAB_HEAD_FROM_TARGET, release)
    if not cfg.draft_vocab_size_key:
        msg = "AttributeError: 'LlamaConfig' object has no attribute 'draft_vocab_size'"
        return Refusal(msg, head.source)
    if draft_vocab(cfg, release) is None:
        msg = "TypeError: lm_head is built with draft_vocab_size=None (null before 0.5.2)"
        return Refusal(msg, head.source)
    return None


def num_aux(cfg: DraftConfig, release: EngineRelease) -> int:
    """The fc in-width factor K this release computes (top-level ids only for the MLA draft)."""
    if not pick(FC_NUM_AUX, release).value and not is_mla(cfg):
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


def honours(cfg: DraftConfig, release: EngineRelease) -> Honoured:
    """Which trained behaviours this release implements for this config."""
    fc_norm, out, inorm = (
        pick(FC_NORM, release),
        pick(NORM_OUTPUT, release),
        pick(INPUT_NORM, release),
    )
    return Honoured(
        norm_before_fc=cfg.norm_before_fc and inorm.value,
        fc_norm=cfg.fc_norm and fc_norm.value,
        norm_output=cfg.norm_output and out.value,
        norm_before_residual=False,
        sources={
            "norm_before_fc": inorm.source,
            "fc_norm": fc_norm.source,
            "norm_output": out.source,
            "norm_before_residual": NO_NORM_BEFORE_RESIDUAL,
        },
    )


def rewritten_config(
    cfg: DraftConfig, release: EngineRelease, keys: Sequence[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """config.json in the form this release reads, and what changed (empty: already fine).

    A flat config names the class this release registers for the draft's shape (from its config
    fields and the checkpoint's tensor names `keys`: `LlamaForCausalLMEagle3`, or the MLA draft
    `Eagle3DeepseekV2ForCausalLM` from 0.5.12). A speculators config becomes a flat LlamaConfig
    with `draft_vocab_size` and the norm flags kept, aux ids moved to `eagle_config` in SGLang's
    output-of-layer convention (SGLang adds 1 to them before capturing). A null
    `target_hidden_size` is dropped: SGLang tests `hasattr`, so null would size fc from None. A
    tied config over a trained head is untied: SGLang ties the head to the embedding it then
    replaces by the target's, and drops the checkpoint's head (`untie_trained_head`).
    """
    raw = json.loads(json.dumps(cfg.raw))
    if cfg.source != "speculators":
        changes = _renamed(raw, release, shape_of(cfg, keys))
        return raw, changes + untie_trained_head(raw, cfg, keys)
    new = flatten_speculators(raw, ARCH)
    changes = [f"architectures -> [{ARCH}], transformer_layer_config flattened to top level"]
    ids = cfg.aux_layer_ids
    if ids:
        sg = [i - 1 for i in ids] if cfg.aux_layer_convention == AFTER_K_LAYERS else list(ids)
        new["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": sg}
        changes.append(
            f"aux ids {ids} (state after k layers) -> eagle_config ids {sg} (output of layer k; "
            "SGLang adds 1 for Llama-family targets; DeepSeek targets from 0.5.13 add 1 only when "
            "the first id is 1: check with `python -m kit trace`)"
        )
    return new, changes + untie_trained_head(new, cfg, keys)


def _renamed(raw: dict, release: EngineRelease, shape: Shape) -> list[str]:
    """The architecture renamed to the class registered for `shape`, unless the one named is
    registered for it already (or none is)."""
    arch = (raw.get("architectures") or [ARCH])[0]
    have, want = registry.built(arch, release), registry.for_shape(shape, release)
    if (have is not None and have.shape is shape) or want is None:
        return []
    raw["architectures"] = [want.name]
    return [f"architectures [{arch}] -> [{want.name}] ({release} registers it for "
            f"{shape.words} drafts: {want.source})"]  # fmt: skip
