"""Which vLLM model runner serves the draft, and what it lacks: model runner V2 has no parallel
drafting (P-EAGLE), and was reported to accept fewer EAGLE-3 drafts than V1 (a known issue that
applies wherever V2 runs, by default from 0.25.0 for dense targets).

Rows: `kit.engines.vllm.serving` V2_RUNNER_DEFAULT, PARALLEL_DRAFTING_ON_V2.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.deployment.served import Served
from kit.engines import pick
from kit.engines.vllm import serving as rows
from kit.findings import Finding, Severity

_TRUE = {"1", "true", "True", "yes"}
_MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size")


def runs_v2(s: Served, target: TargetConfig | None) -> tuple[bool, str]:
    """(whether model runner V2 serves this line, why). The environment variable wins; else the
    release's default for the target's architecture."""
    env = s.command.env.get(rows.V2_RUNNER_ENV)
    if env is not None:
        return env in _TRUE, f"{rows.V2_RUNNER_ENV}={env}"
    row = pick(rows.V2_RUNNER_DEFAULT, s.release)
    if row.value is None or target is None:
        return False, f"V2 is not the default in {s.release} ({row.source})"
    if row.value == "dense":
        dense = not _moe(target) and not _hybrid(target)
        return dense, f"default for a dense target in {s.release} ({row.source})"
    return target.architecture == row.value, f"default for {row.value} ({row.source})"


def _moe(target: TargetConfig) -> bool:
    text = (
        target.raw.get(target.text_config_key, target.raw) if target.text_config_key else target.raw
    )
    return any(text.get(k) for k in _MOE_KEYS)


def _hybrid(target: TargetConfig) -> bool:
    text = (
        target.raw.get(target.text_config_key, target.raw) if target.text_config_key else target.raw
    )
    types = text.get("layer_types") or []
    return any(t not in ("full_attention", "sliding_attention") for t in types)


def parallel_drafting(draft: DraftConfig | None, s: Served) -> str | None:
    """Where the deployment asks for parallel drafting (P-EAGLE): the speculative config, or a
    speculators P-EAGLE draft (vllm PR #41826 maps `peagle` to eagle3 with parallel drafting)."""
    if s.spec.get("parallel_drafting"):
        return '"parallel_drafting": true in --speculative-config'
    kind = str((draft.raw if draft else {}).get("speculators_model_type", "")).lower()
    if kind == "peagle":
        return "the draft is a speculators P-EAGLE draft (speculators_model_type peagle)"
    return None


def runner_findings(s: Served, draft: DraftConfig | None, target: TargetConfig | None) -> list:
    """Parallel drafting on a forced V2 runner; and the V2 fact the known issues read."""
    v2, why = runs_v2(s, target)
    if v2:
        s.facts.add("model_runner_v2")
    asked = parallel_drafting(draft, s)
    row = pick(rows.PARALLEL_DRAFTING_ON_V2, s.release)
    forced = s.command.env.get(rows.V2_RUNNER_ENV) in _TRUE
    if asked is None or row.value is None or row.value or not forced:
        return []  # unforced, a V2 that lacks it hands the run back to V1
    return [
        Finding(
            code="PARALLEL_DRAFTING_ON_V2_RUNNER",
            severity=Severity.ERROR,
            title="a P-EAGLE draft on model runner V2, which has no parallel drafting: it drafts "
            "one token at a time, as it was not trained to",
            evidence=(
                asked,
                f"{why}: forced, so no fall-back to the V1 runner",
                "vllm PR #43010 measured the collapse this caused (position 1 onward) before it "
                "made V2 hand such runs to V1",
            ),
            fix=f"unset {rows.V2_RUNNER_ENV} (or set it to 0) so the V1 runner serves the "
            "parallel drafts",
            engine=str(s.release),
            source=row.source,
            root_cause=True,
        )
    ]
