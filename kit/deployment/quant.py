"""The deployment rules about precision the draft inherits from the target's serving: a
quantization method copied onto an unquantized draft, an FP8 KV cache without the draft's scales,
and target hidden states rotated by QuaRot before they reach the draft's fc.

Each release-dependent rule reads its engine's rows (`kit/engines/<engine>/serving.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.checkpoint.files import Checkpoint
from kit.deployment.served import Served
from kit.deployment.serving import rows_of
from kit.engines import EngineRelease, pick
from kit.engines.serving import Method
from kit.findings import Finding, Severity

SCALE_SUFFIXES = ("k_scale", "v_scale", "kv_scale")
QUANT_DESCRIPTION = "quant_model_description.json"  # ModelSlim's, beside the target's config


def quant_findings(
    s: Served | None,
    draft: DraftConfig | None,
    target: TargetConfig | None,
    ck: Checkpoint | None,
    release: EngineRelease | None,
) -> list[Finding]:
    out = rotated_target(target, release)
    if s is not None and s.method is Method.EAGLE3:
        out += [*inherited_quantization(s, draft), *kv_cache_unscaled(s, ck)]
    return out


def inherited_quantization(s: Served, draft: DraftConfig | None) -> list[Finding]:
    """SGLang copies --quantization onto the draft unless told otherwise; a draft whose config
    has no quantization_config keeps the copied method."""
    rows = getattr(rows_of(s), "DRAFT_QUANTIZATION", None)
    if rows is None or not s.quantization or draft is None:
        return []
    if draft.raw.get("quantization_config") or s.quantization == "unquant":
        return []
    row = pick(rows, s.release)
    if row.value is not None and s.draft_quantization is not None:
        return []  # the draft's own method was given (`unquant` among them)
    fix = (
        "add --speculative-draft-model-quantization unquant (the draft keeps its own precision)"
        if row.value
        else "serve without --quantization (the target's quantization_config is read from its "
        "config all the same), or with sglang 0.5.7 or later and "
        "--speculative-draft-model-quantization unquant"
    )
    return [
        Finding(
            code="DRAFT_QUANTIZATION_INHERITED",
            severity=Severity.ERROR,
            title=f"the draft is loaded as if quantized with --quantization {s.quantization}: "
            "its config has no quantization_config and the launch line does not say otherwise",
            evidence=(
                f"--quantization {s.quantization} on the launch line; the draft config has no "
                "quantization_config",
                "no --speculative-draft-model-quantization"
                if row.value
                else f"{s.release} has no flag for the draft's own quantization",
                "a method that reads scales from the checkpoint fails to load the draft ('Cannot "
                "find the config file for awq'); one that quantizes at load quantizes weights "
                "the draft was trained in another precision",
            ),
            fix=fix,
            engine=str(s.release),
            source=row.source,
        )
    ]


def kv_cache_unscaled(s: Served, ck: Checkpoint | None) -> list[Finding]:
    """An FP8 KV cache the draft inherits, with no k/v scales in the draft checkpoint: the
    draft's attention runs on keys and values scaled by 1.0."""
    rows = getattr(rows_of(s), "DRAFT_KV_DTYPE", None)
    if rows is None or ck is None or not _fp8(s.kv_cache_dtype):
        return []
    row = pick(rows, s.release)
    own = s.draft_kv_cache_dtype if row.value else None
    if own is not None and not _fp8(own):
        return []
    if any(name.rsplit(".", 1)[-1] in SCALE_SUFFIXES for name in ck.tensors):
        return []
    how = f"the draft sets {row.value} {own}" if own else "the draft follows it"
    override = (
        f"set the draft's own KV dtype to bf16 ({row.value})"
        if row.value
        else "serve the KV cache in bf16, or calibrate k/v scales into the draft checkpoint"
    )
    return [
        Finding(
            code="DRAFT_KV_CACHE_UNSCALED",
            severity=Severity.WARNING,
            title=f"the draft's KV cache is {own or s.kv_cache_dtype} with no k/v scales in its "
            "checkpoint: its attention runs with scale 1.0",
            evidence=(
                f"--kv-cache-dtype {s.kv_cache_dtype}; {how}",
                f"no tensor named *{', *'.join(SCALE_SUFFIXES)} among the draft's "
                f"{len(ck.tensors)} tensors",
                "measured: accept length 2.6-2.8 with a bf16 draft cache, 1.79 with the target's "
                "FP8 (lightseekorg/tokenspeed PR #1012); vLLM logs 'Using KV cache scaling factor "
                "1.0 for fp8_e4m3'",
            ),
            fix=override,
            engine=str(s.release),
            source=f"{row.source}; lightseekorg/tokenspeed PR #1012",
        )
    ]


def _fp8(dtype: Any) -> bool:
    return isinstance(dtype, str) and dtype.lower().startswith("fp8")


def rotated_target(target: TargetConfig | None, release: EngineRelease | None) -> list[Finding]:
    """A QuaRot-quantized target rotates its residual stream; a draft trained on the unrotated
    model reads rotated aux states through an fc that was not rotated with them."""
    where = _quarot(target)
    if where is None:
        return []
    return [
        Finding(
            code="TARGET_HIDDEN_STATES_ROTATED",
            severity=Severity.ERROR,
            title="the target is QuaRot-quantized: its hidden states are rotated, the draft's fc "
            "expects them unrotated",
            evidence=(
                f"{where}",
                "QuaRot multiplies the residual stream by an orthogonal matrix Q; the aux states "
                "the draft reads are XQ, its fc was trained on X",
                "vllm-ascend rotates the draft's fc at load from its PR #6914; upstream vLLM and "
                "SGLang read the fc as saved (vllm RFC #36223 closed unmerged): acceptance 0",
            ),
            fix="serve on a release that rotates the draft's fc with the target (vllm-ascend "
            "with PR #6914), or fold Q into fc.weight (fc.weight @ blockdiag(Q, Q, Q)) before "
            "serving; never both",
            engine=str(release) if release else None,
            source="vllm-project/vllm-ascend issue #5974, RFC #6445, PR #6914",
            root_cause=True,
        )
    ]


def _quarot(target: TargetConfig | None) -> str | None:
    """Where the target says it is QuaRot-rotated: ModelSlim's quant description beside its
    config (`optional.quarot`), or a quantization_config that names it."""
    if target is None:
        return None
    qcfg = target.raw.get("quantization_config")
    if isinstance(qcfg, dict) and "quarot" in json.dumps(qcfg).lower():
        return "target config.json quantization_config names quarot"
    folder = Path(target.path).parent if target.path else None
    description = folder / QUANT_DESCRIPTION if folder else None
    if description is None or not description.is_file():
        return None
    from kit.limits import try_loads_file

    data = try_loads_file(description)
    optional = data.get("optional") if isinstance(data, dict) else None
    if isinstance(optional, dict) and "quarot" in optional:
        return f"{description}: optional.quarot {json.dumps(optional['quarot'])[:120]}"
    return None
