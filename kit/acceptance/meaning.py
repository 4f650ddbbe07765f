"""What a run's figures mean: the accept-rate formula of its release (or the readings the text
allows), the chain the figures are bounded by, the share of drafts accepted, and what the
windows cover.
"""

from __future__ import annotations

from typing import Any

from kit.acceptance.model import LogRun, Scope
from kit.engines.lmdeploy.acceptance import RATE_MEANING as LMDEPLOY_RATE
from kit.engines.lmdeploy.acceptance import SPEC_LOG as LMDEPLOY_LOG
from kit.engines.sglang.acceptance import ACCEPT_LEN_SOURCE
from kit.engines.tensorrt_llm.acceptance import ITERATION_STATS
from kit.engines.vllm.acceptance import ACCEPT_LEN_SOURCE as VLLM_ACCEPT_LEN_SOURCE
from kit.engines.vllm.acceptance import (
    EXAMPLE_OUTPUT,
    PER_REQUEST,
    V0_ACCEPT_LEN,
    V0_RATE,
    V1_RATE,
)

FLOOR = 1.0  # accept len with zero acceptance: only the target's own token per step
EAGLE3_TREE_ACCEPT_LEN = 6.5
EAGLE3_SOURCE = (
    "EAGLE-3 (Li et al., 2025) reports average acceptance lengths around 6.5 with tree drafting"
)
COUNTED_RATE = "accepted draft tokens / drafted tokens (bonus token excluded); zero prints 0"
LLAMA_SOURCE = (
    "llama.cpp tools/server/server-context.cpp print_timings; common/speculative.cpp "
    "common_speculative_print_stats (PR #24536 adds the per-position rates)"
)
SCOPE_NOTES = {
    Scope.LIFETIME: "cumulative since the server started (or its stats were reset): it includes "
    "every request before the one being debugged and cannot show a change that just happened",
    Scope.INTERVAL: "per logging interval or iteration: the counters restart at every line",
    Scope.REQUEST: "per request",
    Scope.RUN: "over one benchmark or offline run",
}


def draft_steps(run: LogRun) -> int | None:
    """Drafts per verify step (the chain length k), where the run or its settings say."""
    if run.num_steps:
        return run.num_steps
    if run.num_draft_tokens and run.topk in (None, 1):
        return run.num_draft_tokens - 1 if run.engine_name == "sglang" else run.num_draft_tokens
    return len(run.per_position) or None


def _denominator(run: LogRun) -> int | None:
    f = run.formula.value
    if f.denominator == "num_steps + 1":
        return run.num_steps + 1 if run.num_steps else None
    return run.num_draft_tokens


def _rate(run: LogRun) -> dict[str, Any]:
    """The printed accept rate's formula and meaning for the run's engine and release."""
    families = {sig[1] for sig in run.formats if sig[0] == run.engine_name}
    if run.engine_name == "vllm" and families == {"v0"}:
        return {
            "rate_formula": "accepted anywhere / drafted",
            "rate_meaning": V0_RATE,
            "accept_len_formula": V0_ACCEPT_LEN.value,
            "accept_len_source": V0_ACCEPT_LEN.source,
        }
    vllm_source = {"example": EXAMPLE_OUTPUT.source, "request": PER_REQUEST.source}
    vllm_sources = sorted({vllm_source.get(f, VLLM_ACCEPT_LEN_SOURCE) for f in families})
    counted = {
        "vllm": (V1_RATE, "; ".join(vllm_sources) or VLLM_ACCEPT_LEN_SOURCE),
        "lmdeploy": (LMDEPLOY_RATE, LMDEPLOY_LOG.source),
        "tensorrt_llm": (COUNTED_RATE, ITERATION_STATS.source),
        "llama.cpp": (COUNTED_RATE, LLAMA_SOURCE),
    }
    if run.engine_name in counted:
        meaning, source = counted[run.engine_name]
        return {
            "rate_formula": "accepted / drafted",
            "rate_meaning": meaning,
            "zero_acceptance_rate": 0.0,
            "accept_len_source": source,
        }
    if run.formula is not None and run.formula.value is not None:
        f, n = run.formula.value, run.rate_denominator or _denominator(run)
        out = {"rate_formula": f.expr, "rate_meaning": f.meaning, "rate_source": run.formula.source}
        if n:
            out.update(denominator=n, zero_acceptance_rate=round(f.zero_rate(n), 4))
        return out | {"accept_len_source": ACCEPT_LEN_SOURCE}
    if run.formula is not None:
        return {
            "rate_formula": None,
            "rate_meaning": "this release prints no accept rate",
            "rate_source": run.formula.source,
        }
    if run.readings:
        return {"rate_formula": None, "rate_meaning": "depends on the release; see readings"}
    return {}


def interpret(run: LogRun) -> dict[str, Any]:
    """What the logged accept rate means for this run's release, and what it implies."""
    out = _rate(run)
    if run.readings:
        out["readings"] = run.readings
    al = run.accept_len.mean
    steps = draft_steps(run)
    if al is not None:
        out["implied_accepted_drafts_per_step"] = round(al - 1, 4)
        if steps:
            out["draft_acceptance"] = round((al - 1) / steps, 4)
    if run.draft_share is not None:
        out["draft_acceptance"] = round(run.draft_share, 4)
    if run.scopes:
        out["scope"] = {s.value: SCOPE_NOTES[s] for s in run.scopes}
    return out


def draft_share(run: LogRun) -> tuple[float, str] | None:
    """The share of drafted tokens accepted, and how it was found: counted where the windows
    count tokens, else (accept len − 1) / k, else an upper bound (accept len − 1) when the chain
    length is unknown (every verify step drafts at least one token)."""
    if run.draft_share is not None:
        return run.draft_share, f"{run.accepted} of {run.drafted} drafted tokens accepted"
    al = run.accept_len.mean
    if al is None:
        return None
    steps = draft_steps(run)
    if steps:
        return (al - 1) / steps, f"accept len {al:.3f}: {al - 1:.3f} drafts accepted of {steps}"
    return al - 1, f"accept len {al:.3f}: at most {al - 1:.3f} of the drafts (chain length unknown)"


def bands(run: LogRun) -> dict[str, Any]:
    """Context for an accept len: the zero-acceptance floor, the chain cap, the paper's figure."""
    steps = draft_steps(run)
    chain = run.topk in (None, 1)
    return {
        "floor": FLOOR,
        "chain_cap": steps + 1 if steps and chain else None,
        "chain_cap_rule": "a chain of k drafts caps accept len at k + 1",
        "eagle3_tree_reported": EAGLE3_TREE_ACCEPT_LEN,
        "eagle3_source": EAGLE3_SOURCE,
    }
