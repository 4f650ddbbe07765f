"""How vLLM reads an EAGLE-3 draft's config.json: what it refuses, what it builds, what it honours.

A config with `speculators_model_type` is translated by vLLM's speculators support (from
0.10.1.1): `transformer_layer_config` becomes the draft config and `update_eagle3` copies a
release-dependent set of fields. Any other config must name an architecture the release
registers as a draft, after its rename (`kit.engines.vllm.registry`: `LlamaForCausalLM` in every
release, the SpecForge / ModelOpt `LlamaForCausalLMEagle3` from 0.10.2, the MLA draft
`Eagle3DeepseekV2ForCausalLM` from 0.18.0, …). `rewritten_config` is the form a release reads,
naming the class it registers for the draft's shape, which `python -m kit fix --for vllm==X`
writes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kit.checkpoint.config import DraftConfig, flatten_speculators
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.classes import Shape, shape_of
from kit.engines.vllm import registry
from kit.engines.vllm.registry import QWEN3_CLASS
from kit.engines.vocab import Honoured, Refusal

M = "vllm/model_executor/models/"
EAGLE3 = M + "llama_eagle3.py"
ALGOS = "vllm/transformers_utils/configs/speculators/algos.py"
MLA_DRAFT = M + "deepseek_eagle3.py"

# Speculators configs (`speculators_model_type`) are understood from 0.10.
SPECULATORS_CONFIG: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.10.1.1"), False,
        "vllm/transformers_utils/configs/: no speculators package (0.9.2, 0.10.0)"),
    Row(VersionRange("0.10.1.1"), True,
        "vllm/transformers_utils/configs/speculators/base.py (0.10.1.1)"),
]  # fmt: skip

# Draft decoder layers built: exactly one until 0.11.0, num_hidden_layers from 0.11.1 (PR #26164).
MULTI_LAYER: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.11.1"), False,
        EAGLE3 + ":123-128 one layer at layers.{start_layer_id} (0.11.0)"),
    Row(VersionRange("0.11.1"), True,
        EAGLE3 + ":155-165 layers for range(num_hidden_layers) (0.11.1, PR #26164)"),
]  # fmt: skip

# fc in-width: 3·Ht until 0.19; num_aux_hidden_states / len(eagle_config ids) / 3 from 0.22.
FC_NUM_AUX: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.22.0"), False, EAGLE3 + ":166-170 target_hidden_size * 3 (0.11.1)"),
    Row(VersionRange("0.22.0"), True, EAGLE3 + ":178-190 LlamaModel.__init__ num_aux (0.22.0)"),
]  # fmt: skip

# Trained behaviours the module implements: input_norm (norm_before_fc) from 0.18; per-chunk
# fc_norm and norm_output from 0.22; norm_before_residual in every release.
INPUT_NORM: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.18.0"), False, EAGLE3 + " (0.14.0: no input_norm)"),
    Row(VersionRange("0.18.0"), True, EAGLE3 + " combine_hidden_states input_norm (0.18.0)"),
]
FC_NORM: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.22.0"), False, EAGLE3 + " (0.18.0, 0.19.0: no fc_norm)"),
    Row(VersionRange("0.22.0"), True, EAGLE3 + ":200-201 combine_hidden_states fc_norm (0.22.0)"),
]
NORM_OUTPUT: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.22.0"), False, EAGLE3 + ":206-207 returns the pre-norm hidden (0.11.1)"),
    Row(VersionRange("0.22.0"), True, EAGLE3 + ":221 norm_output (0.22.0, PR #42764)"),
]  # fmt: skip
# eagle_config.use_aux_hidden_state: false builds no fc (nor input_norm) and skips their keys:
# combine_hidden_states returns the target's state unchanged.
USE_AUX_SWITCH: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.12.0"), False, EAGLE3 + " (0.11.1: fc always built and run)"),
    Row(VersionRange("0.12.0"), True,
        EAGLE3 + ":146-149 use_aux_hidden_state, :170 fc only if set, :341 combine_hidden_states "
        "returns its input (0.12.0); 0.12.0 vllm/v1/worker/gpu_model_runner.py:383-387 no aux "
        "capture; 0.32.0 " + EAGLE3 + ":179-183, :209, :401-402, gpu_model_runner.py:644-648, "
        "4952-4957 the target's last hidden state handed over"),
]  # fmt: skip
NORM_BEFORE_RESIDUAL = EAGLE3 + ":69-72 getattr(config, 'norm_before_residual') (0.11.1)"

# The MLA draft (Eagle3DeepseekV2ForCausalLM, from 0.18.0): no input_norm in any release; fc_norm
# built from 0.22.0 but run by combine_hidden_states only from 0.24.0; norm_output from 0.22.0.
MLA_NO_INPUT_NORM = MLA_DRAFT + " (0.18.0 … 0.33.0: no input_norm, norm_before_fc not read)"
MLA_FC_NORM_BUILT: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.22.0"), False, MLA_DRAFT + " (0.18.0, 0.19.0: no fc_norm)"),
    Row(VersionRange("0.22.0"), True, MLA_DRAFT + ":225-234 fc_norm ModuleList (0.22.0)"),
]
MLA_FC_NORM_RUN: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.24.0"), False,
        MLA_DRAFT + ":405-410 combine_hidden_states returns fc(h), fc_norm unused (0.22.0)"),
    Row(VersionRange("0.24.0"), True, MLA_DRAFT + " combine_hidden_states fc_norm per chunk "
        ":393 (0.24.0), :357-367 (0.33.0)"),
]  # fmt: skip
MLA_NORM_OUTPUT: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.22.0"), False, MLA_DRAFT + " returns the pre-norm hidden (0.18.0)"),
    Row(VersionRange("0.22.0"), True, MLA_DRAFT + ":236,267-268 norm_output (0.22.0)"),
]  # fmt: skip
MLA_NORM_BEFORE_RESIDUAL = (
    MLA_DRAFT + ":116-117 (0.18.0), :101-102 (0.33.0) getattr(config, 'norm_before_residual')"
)

# Which speculators fields `update_eagle3` copies into the draft config.
COPIES_NORM_BEFORE_FC: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.19.0"), False, ALGOS + " update_eagle3 (0.18.0; vllm PR #38111)"),
    Row(VersionRange("0.19.0"), True, ALGOS + ":38 update_eagle3 (0.19.0)"),
]
# fc_norm and norm_output are copied together (0.25)
COPIES_POST_NORM_FLAGS: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.25.0"), False, ALGOS + " update_eagle3 (0.24.0)"),
    Row(VersionRange("0.25.0"), True,
        ALGOS + ":39-40 update_eagle3 (0.25.0; 0.32.0 :37-38; vllm PR #46488)"),
]  # fmt: skip
DEFAULT_NORM_BEFORE_RESIDUAL = ALGOS + ':33 config_dict.get("norm_before_residual", True) (0.11.1)'

CONFIG_FIX = (
    "rewrite config.json architectures to the class this release registers for the draft's shape "
    "(LlamaForCausalLM, the EAGLE-official spelling every release accepts, for a Llama-style "
    "draft; Eagle3DeepseekV2ForCausalLM for an MLA draft, from 0.18.0): python -m kit fix CKPT "
    "--engine vllm==X"
)
SPECULATORS_FIX = (
    "use vLLM ≥ 0.10.0, or rewrite config.json to a flat LlamaForCausalLM config "
    "(python -m kit fix CKPT --engine vllm==X)"
)


def speculators(cfg: DraftConfig) -> bool:
    return cfg.source == "speculators"


def refuses_config(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """Why this release refuses the config.json as written, or None."""
    if speculators(cfg):
        row = pick(SPECULATORS_CONFIG, release)
        if not row.value:
            return Refusal(
                "speculators configs are not understood (Unrecognized model)", row.source
            )
        return None
    arch = cfg.architectures[0] if cfg.architectures else ""
    if registry.built(arch, release) is None:
        return Refusal(*registry.unregistered(arch, release))
    return None


def built_shape(cfg: DraftConfig, release: EngineRelease) -> Shape:
    """The shape of the draft module this release builds for the config (the Llama draft when it
    refuses the config: nothing is built then)."""
    if speculators(cfg):
        qwen3 = cfg.model_type == "qwen3" and pick(QWEN3_CLASS, release).value
        return Shape.QWEN3 if qwen3 else Shape.LLAMA
    cls = registry.built(cfg.architectures[0] if cfg.architectures else "", release)
    return cls.shape if cls else Shape.LLAMA


def constructor_failure(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """An exception raised before any key is read (config translation), or None."""
    row = pick(QWEN3_CLASS, release)
    if speculators(cfg) and row.value and cfg.model_type not in ("llama", "qwen3"):
        msg = f"ValueError: unsupported speculators draft model_type {cfg.model_type!r}"
        return Refusal(msg, row.source)
    return None


def num_aux(cfg: DraftConfig, release: EngineRelease) -> int:
    """The fc in-width factor K; from 0.22 it reads the eagle_config ids, never the top level."""
    if not pick(FC_NUM_AUX, release).value:
        return 3
    if cfg.raw.get("num_aux_hidden_states"):
        return int(cfg.raw["num_aux_hidden_states"])
    ids = cfg.eagle_config.get("eagle_aux_hidden_state_layer_ids")
    return len(ids) if ids else 3


def builds_fc(cfg: DraftConfig, release: EngineRelease) -> bool:
    """Whether the draft has an fc at all (not when the config switches aux states off, ≥0.12)."""
    return cfg.use_aux_hidden_state or not pick(USE_AUX_SWITCH, release).value


def num_layers(cfg: DraftConfig, release: EngineRelease) -> int:
    return cfg.num_hidden_layers if pick(MULTI_LAYER, release).value else 1


def is_qwen3(cfg: DraftConfig, release: EngineRelease) -> bool:
    return built_shape(cfg, release) is Shape.QWEN3


def is_mla(cfg: DraftConfig, release: EngineRelease) -> bool:
    return built_shape(cfg, release) is Shape.MLA


def honours(cfg: DraftConfig, release: EngineRelease) -> Honoured:
    """Which trained behaviours this release implements for this config, as it reads the config:
    a speculators flag that `update_eagle3` does not copy is as good as unset."""
    if is_mla(cfg, release):
        return _mla_honours(cfg, release)
    spec = speculators(cfg)
    inorm, fcn, out = pick(INPUT_NORM, release), pick(FC_NORM, release), pick(NORM_OUTPUT, release)
    copies_nbf, copies_fcn = (
        pick(COPIES_NORM_BEFORE_FC, release),
        pick(COPIES_POST_NORM_FLAGS, release),
    )
    before_residual = cfg.norm_before_residual
    if spec:  # update_eagle3 defaults it to True when the config does not say
        before_residual = bool(cfg.raw.get("norm_before_residual", True))
    return Honoured(
        norm_before_fc=cfg.norm_before_fc and inorm.value and (not spec or copies_nbf.value),
        fc_norm=cfg.fc_norm and fcn.value and (not spec or copies_fcn.value),
        norm_output=cfg.norm_output and out.value and (not spec or copies_fcn.value),
        norm_before_residual=before_residual,
        sources={
            "norm_before_fc": copies_nbf.source if spec and inorm.value else inorm.source,
            "fc_norm": copies_fcn.source if spec and fcn.value else fcn.source,
            "norm_output": copies_fcn.source if spec and out.value else out.source,
            "norm_before_residual": DEFAULT_NORM_BEFORE_RESIDUAL if spec else NORM_BEFORE_RESIDUAL,
        },
    )


def _mla_honours(cfg: DraftConfig, release: EngineRelease) -> Honoured:
    fcn, out = pick(MLA_FC_NORM_RUN, release), pick(MLA_NORM_OUTPUT, release)
    return Honoured(
        norm_before_fc=False,
        fc_norm=cfg.fc_norm and fcn.value,
        norm_output=cfg.norm_output and out.value,
        norm_before_residual=cfg.norm_before_residual,
        sources={
            "norm_before_fc": MLA_NO_INPUT_NORM,
            "fc_norm": fcn.source,
            "norm_output": out.source,
            "norm_before_residual": MLA_NORM_BEFORE_RESIDUAL,
        },
    )


def rewritten_config(
    cfg: DraftConfig, release: EngineRelease, keys: Sequence[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """config.json in the form this release reads, and what changed (empty: already fine). A
    flat config is renamed to the class the release registers for the draft's shape (from its
    config and the checkpoint's tensor names `keys`) when the name it has is not registered, or
    registered for another shape."""
    raw = json.loads(json.dumps(cfg.raw))
    ids = cfg.aux_layer_ids
    if speculators(cfg):
        if pick(SPECULATORS_CONFIG, release).value:
            return raw, []
        new = flatten_speculators(raw, "LlamaForCausalLM")
        if ids:
            new["eagle_aux_hidden_state_layer_ids"] = ids  # same convention: states after k
        return new, ["speculators config -> flat LlamaForCausalLM config (read by every release)"]
    changes = _renamed(raw, cfg, release, shape_of(cfg, keys))
    if ids and cfg.aux_ids_location == "eagle_config" and release.at_least("0.11.1"):
        after_k = [i + 1 for i in ids]
        raw["eagle_aux_hidden_state_layer_ids"] = after_k
        changes.append(
            f"eagle_config ids {ids} (output of layer k) -> top-level "
            f"eagle_aux_hidden_state_layer_ids {after_k} (vLLM reads them verbatim)"
        )
    return raw, changes


# the spelling written for a class: vLLM's own Llama name is what EAGLE's `LlamaForCausalLM`
# becomes in every release, and the EAGLE spelling is read by the other engines too
SPELLING = {"Eagle3LlamaForCausalLM": "LlamaForCausalLM"}


def _renamed(raw: dict, cfg: DraftConfig, release: EngineRelease, shape: Shape) -> list[str]:
    arch = (raw.get("architectures") or [""])[0]
    have = registry.built(arch, release)
    want = registry.for_shape(shape, release)
    if (have is not None and have.shape is shape) or want is None:
        return []
    name = SPELLING.get(want.name, want.name)
    raw["architectures"] = [name]
    return [f"architectures [{arch}] -> [{name}] ({release} registers {want.name} for "
            f"{shape.words} drafts: {want.source})"]  # fmt: skip
