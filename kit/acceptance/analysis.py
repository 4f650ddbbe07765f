"""What the figures mean: per-release interpretation, failure signatures, a speedup model and
before/after comparison. Every check returns `Finding`s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.acceptance.model import Run
from kit.engines.sglang.acceptance import ACCEPT_LEN_SOURCE
from kit.engines.vllm.acceptance import ACCEPT_LEN_SOURCE as VLLM_ACCEPT_LEN_SOURCE
from kit.engines.vllm.acceptance import V1_RATE
from kit.findings import Finding, Severity, ranked

FLOOR = 1.0  # accept len with zero acceptance: only the target's own token per step
EAGLE3_TREE_ACCEPT_LEN = 6.5
EAGLE3_SOURCE = (
    "EAGLE-3 (Li et al., 2025) reports average acceptance lengths around 6.5 with tree drafting"
)
DEFAULT_DRAFT_COST = 0.05
SPEEDUP_FORMULA = "speedup = (1 + Σ_i p_i) / (1 + k·c)"
SPEEDUP_SOURCE = (
    "Leviathan, Kalman & Matias, 'Fast Inference from Transformers via Speculative Decoding' "
    "(ICML 2023), walltime improvement (1 − α^(k+1)) / ((1 − α)(k·c + 1)); the numerator is the "
    "expected tokens per verify step, written here with per-position acceptance p_i "
    "(p_i = α^(i+1) gives the paper's form); c = draft/target forward cost ratio"
)
LOW_FIRST_FACTOR = 0.5  # position-0 acceptance below half the offline step-0 accuracy
DECAY_FACTOR = 0.7  # last quarter keeps less than 70 % of the first quarter's accepted drafts
CLIFF_RATIO = 0.3  # next position keeps less than 30 % of this position's acceptance
NO_SPEEDUP_RATIO = 1.05
BELOW_EXPECTED_FACTOR = 0.8
MIN_DECAY_WINDOWS = 8


@dataclass(frozen=True)
class Speedup:
    """Expected tokens per verify step and wall-time speedup over plain decoding."""

    tokens_per_step: float
    speedup: float
    draft_steps: int
    draft_cost: float
    formula: str = SPEEDUP_FORMULA
    source: str = SPEEDUP_SOURCE

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_per_step": round(self.tokens_per_step, 4),
            "speedup": round(self.speedup, 4),
            "draft_steps": self.draft_steps,
            "draft_cost": self.draft_cost,
            "formula": self.formula,
            "source": self.source,
        }


def expected_speedup(
    per_position: Sequence[float], draft_cost: float = DEFAULT_DRAFT_COST, conditional: bool = False
) -> Speedup:
    """Speedup from per-position acceptance.

    `per_position[i]` is P(draft i accepted) as vLLM reports it; with `conditional=True` it is
    P(draft i accepted | drafts before it accepted), e.g. offline step-i accuracies.
    """
    probs, alive = [], 1.0
    for p in per_position:
        alive = alive * p if conditional else p
        probs.append(alive)
    k = len(probs)
    tokens = 1 + sum(probs)
    return Speedup(tokens, tokens / (1 + k * draft_cost), k, draft_cost)


def speedup_from_accept_len(
    accept_len: float, draft_steps: int, draft_cost: float = DEFAULT_DRAFT_COST
) -> Speedup:
    """Same model when only the mean accept len (= expected tokens per step) is known."""
    return Speedup(accept_len, accept_len / (1 + draft_steps * draft_cost), draft_steps, draft_cost)


def draft_steps(run: Run) -> int | None:
    if run.num_steps:
        return run.num_steps
    if run.num_draft_tokens and run.topk in (None, 1):
        return run.num_draft_tokens - 1 if run.engine_name == "sglang" else run.num_draft_tokens
    return len(run.per_position) or None


def interpret(run: Run) -> dict[str, Any]:
    """What the logged accept rate means for this run's release, and what it implies."""
    out: dict[str, Any] = {}
    al = run.accept_len.mean
    steps = draft_steps(run)
    if run.engine_name == "vllm":
        out.update(
            rate_formula="accepted / drafted", rate_meaning=V1_RATE, zero_acceptance_rate=0.0
        )
        out["accept_len_source"] = VLLM_ACCEPT_LEN_SOURCE
    elif run.formula is not None and run.formula.value is not None:
        f, n = run.formula.value, run.rate_denominator or _n(run)
        out.update(rate_formula=f.expr, rate_meaning=f.meaning, rate_source=run.formula.source)
        if n:
            out.update(denominator=n, zero_acceptance_rate=round(f.zero_rate(n), 4))
        out["accept_len_source"] = ACCEPT_LEN_SOURCE
    elif run.formula is not None:
        out.update(rate_formula=None, rate_meaning="this release prints no accept rate")
        out["rate_source"] = run.formula.source
    if al is not None:
        out["implied_accepted_drafts_per_step"] = round(al - 1, 4)
        if steps:
            out["draft_acceptance"] = round((al - 1) / steps, 4)
    return out


def _n(run: Run) -> int | None:
    f = run.formula.value
    if f.denominator == "num_steps + 1":
        return run.num_steps + 1 if run.num_steps else None
    return run.num_draft_tokens


def bands(run: Run) -> dict[str, Any]:
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


def speedup_for(run: Run, draft_cost: float = DEFAULT_DRAFT_COST) -> Speedup | None:
    if run.per_position:
        return expected_speedup(run.per_position, draft_cost)
    steps = draft_steps(run)
    if run.accept_len.mean is not None and steps:
        return speedup_from_accept_len(run.accept_len.mean, steps, draft_cost)
    return None


def summarize(run: Run, draft_cost: float = DEFAULT_DRAFT_COST) -> dict[str, Any]:
    """The per-run record of `python -m kit acceptance --json`."""
    sp = speedup_for(run, draft_cost)
    tput = run.throughput
    return {
        "source": run.source,
        "engine": run.engine,
        "engine_given": run.engine_given,
        "release_range": str(run.release_range) if run.release_range else None,
        "format_sources": run.format_sources,
        "windows": run.window_count,
        "formats": {" ".join(map(str, sig)): n for sig, n in run.formats.items()},
        "accept_len": run.accept_len.to_dict(),
        "accept_rate": run.accept_rate.to_dict(),
        "per_position": run.per_position,
        "throughput": {
            "mean": round(tput.mean, 2) if tput.count else None,
            "min": tput.min if tput.count else None,
            "max": tput.max if tput.count else None,
        },
        "num_steps": run.num_steps,
        "topk": run.topk,
        "num_draft_tokens": run.num_draft_tokens,
        "interpretation": interpret(run),
        "bands": bands(run),
        "expected_speedup": sp.to_dict() if sp else None,
        "unparsed_lines": run.unparsed_lines,
        "unparsed_reasons": dict(run.unparsed_reasons),
        "unparsed_examples": run.unparsed_examples,
        "other_lines": run.other_lines,
        "example_lines": run.example_lines,
        "notes": run.notes,
        "conflicts": run.conflicts,
    }


def zero_acceptance(run: Run) -> Finding | None:
    """CRITICAL when (nearly) every window shows accept len 1.00: no draft token accepted."""
    spec = [w for w in run.windows if w.accept_len is not None or w.accepted is not None]
    floor = [w for w in spec if w.at_floor]
    if not spec or len(floor) < 0.9 * len(spec):
        return None
    meaning = interpret(run)
    rates = sorted({w.accept_rate for w in floor if w.accept_rate is not None})
    evidence = [f"{len(floor)}/{len(spec)} sampled windows with no accepted draft"]
    if run.accept_len.count:
        evidence += [
            f"accept len {run.accept_len.min:.2f}–{run.accept_len.max:.2f} over "
            f"{run.accept_len.count} windows (floor 1.00)",
            f"implied accepted drafts per step: {meaning['implied_accepted_drafts_per_step']:.2f}",
        ]
    if rates:
        evidence.append(f"logged accept rate {', '.join(f'{r:.2f}' for r in rates)}")
    if "zero_acceptance_rate" in meaning:
        evidence.append(
            f"under {meaning['rate_formula']} zero acceptance prints "
            f"{meaning['zero_acceptance_rate']:.2f} ({meaning['rate_meaning']})"
        )
    if "floor" in run.example_lines:
        evidence.append(run.example_lines["floor"])
    return Finding(
        code="ZERO_ACCEPTANCE",
        severity=Severity.CRITICAL,
        title=f"{Path(run.source).name}: no drafted token is accepted; every verify step keeps "
        "only the target's own token",
        evidence=tuple(evidence),
        fix="The draft is not running as trained. Check which checkpoint keys the engine loads "
        "or silently drops (`python -m kit simulate`) and the hidden-state width that reaches the "
        "draft and whether fc runs (`python -m kit trace`).",
        engine=run.engine,
        source=(run.formula.source if run.formula is not None else None),
        data={"run": run.source, "windows_at_floor": len(floor), "windows": len(spec)},
    )


def low_first_position(run: Run, expected_step0: float) -> Finding | None:
    """Position-0 acceptance far below the offline step-0 accuracy."""
    if run.per_position:
        pos0, how = run.per_position[0], "measured position-0 acceptance"
    elif run.accept_len.mean is not None:
        pos0 = min(1.0, run.accept_len.mean - 1)
        how = "upper bound accept len − 1 (every step that accepts a draft accepts position 0)"
    else:
        return None
    if pos0 >= LOW_FIRST_FACTOR * expected_step0:
        return None
    return Finding(
        code="LOW_FIRST_POSITION",
        severity=Severity.ERROR,
        title=f"Position-0 acceptance {pos0:.1%} is far below the expected step-0 accuracy "
        f"{expected_step0:.1%}",
        evidence=(f"{how}: {pos0:.4f}", f"expected step-0 accuracy: {expected_step0:.4f}"),
        fix="The served draft does not behave like the one validated offline: compare the "
        "engine's weight loading and hidden-state wiring with the training setup.",
        engine=run.engine,
        data={"run": run.source, "position0": pos0, "expected_step0": expected_step0},
    )


def acceptance_decay(run: Run) -> Finding | None:
    """Accepted drafts per step falling over the run (last quarter vs first quarter)."""
    series = [w.accept_len for w in run.windows if w.accept_len is not None]
    if len(series) < MIN_DECAY_WINDOWS:
        return None
    q = len(series) // 4
    first, last = sum(series[:q]) / q, sum(series[-q:]) / q
    if first - 1 <= 0 or (last - 1) >= DECAY_FACTOR * (first - 1) or first - last < 0.1:
        return None
    return Finding(
        code="ACCEPTANCE_DECAY",
        severity=Severity.WARNING,
        title=f"Acceptance decays over the run: accept len {first:.2f} → {last:.2f}",
        evidence=(
            f"mean accept len, first quarter of {len(series)} windows: {first:.2f}",
            f"mean accept len, last quarter: {last:.2f}",
        ),
        fix="Look at what changed over the run: longer contexts than the draft was trained on, "
        "a different request mix, or memory pressure (retracted requests).",
        engine=run.engine,
        data={"run": run.source, "first": first, "last": last},
    )


def position_cliff(run: Run) -> Finding | None:
    """Per-position acceptance that collapses from one position to the next (far steeper than
    the geometric fall-off of a draft that is just less sure further out)."""
    pp = run.per_position
    for i in range(len(pp) - 1):
        if pp[i] >= 0.1 and pp[i + 1] < CLIFF_RATIO * pp[i]:
            return Finding(
                code="ACCEPTANCE_DECAY",
                severity=Severity.WARNING,
                title=f"Acceptance collapses after draft position {i}: "
                f"{pp[i]:.1%} → {pp[i + 1]:.1%}",
                evidence=(f"per-position acceptance: {', '.join(f'{p:.3f}' for p in pp)}",),
                fix=f"Positions beyond {i} add draft cost for little gain: serve with {i + 1} "
                "speculative tokens, or check that the draft was trained for as many steps as it "
                "is asked to draft.",
                engine=run.engine,
                data={"run": run.source, "position": i},
            )
    return None


def no_speedup(run: Run, baseline: Run) -> Finding | None:
    """Throughput with speculation not above the baseline run's."""
    if not run.throughput.count or not baseline.throughput.count:
        return None
    ratio = run.throughput.mean / baseline.throughput.mean
    if ratio >= NO_SPEEDUP_RATIO:
        return None
    return Finding(
        code="NO_SPEEDUP",
        severity=Severity.ERROR,
        title=f"No speedup: {run.throughput.mean:.1f} tok/s against {baseline.throughput.mean:.1f}"
        f" tok/s without speculation (×{ratio:.2f})",
        evidence=(
            f"{run.source}: mean gen throughput {run.throughput.mean:.2f} tok/s",
            f"{baseline.source} (baseline): {baseline.throughput.mean:.2f} tok/s",
        ),
        fix="Speculation costs draft and verify work; with acceptance this low it cannot pay off.",
        engine=run.engine,
        data={"run": run.source, "baseline": baseline.source, "ratio": ratio},
    )


def run_findings(
    run: Run, expected_step0: float | None = None, expected_accept_len: float | None = None
) -> list[Finding]:
    zero = zero_acceptance(run)
    out = [zero, acceptance_decay(run), None if zero else position_cliff(run)]
    if expected_step0 is not None:
        out.append(low_first_position(run, expected_step0))
    mean = run.accept_len.mean
    if (
        expected_accept_len is not None
        and mean is not None
        and mean < BELOW_EXPECTED_FACTOR * expected_accept_len
    ):
        out.append(
            Finding(
                code="BELOW_EXPECTED_ACCEPT_LEN",
                severity=Severity.WARNING,
                title=f"Accept len {mean:.2f} is below the expected {expected_accept_len:.2f}",
                evidence=(f"{run.source}: mean accept len {mean:.4f}",),
                fix="Compare the served draft's wiring with the offline measurement.",
                engine=run.engine,
                data={"run": run.source},
            )
        )
    cap = bands(run)["chain_cap"]
    if cap and run.accept_len.count and run.accept_len.max > cap + 0.01:
        out.append(
            Finding(
                code="ACCEPT_LEN_ABOVE_CHAIN_CAP",
                severity=Severity.ERROR,
                title=f"Accept len {run.accept_len.max:.2f} exceeds the chain cap {cap}",
                evidence=(f"a chain of {cap - 1} drafts caps accept len at {cap}",),
                fix="The given num_steps / num_draft_tokens / topk do not match the run.",
                engine=run.engine,
                data={"run": run.source},
            )
        )
    if run.conflicts:
        out.append(
            Finding(
                code="ENGINE_FORMAT_CONFLICT",
                severity=Severity.WARNING,
                title="The given engine release and the log disagree",
                evidence=tuple(run.conflicts),
                fix="Check the engine version the server ran (`pip show sglang` / `vllm`); the "
                "meaning of accept rate depends on it.",
                engine=run.engine,
                source="; ".join(run.format_sources) or None,
                data={"run": run.source},
            )
        )
    if not run.accept_len.count:
        out.append(
            Finding(
                code="NO_ACCEPTANCE_DATA",
                severity=Severity.WARNING,
                title=f"No acceptance figure found in {run.source}",
                evidence=(f"{run.window_count} windows, {run.unparsed_lines} unparsed lines",),
                fix="Give a decode log with speculative decoding on, a metrics scrape or "
                "server-info JSON.",
                data={"run": run.source},
            )
        )
    if run.unparsed_lines:
        out.append(
            Finding(
                code="UNPARSED_LINES",
                severity=Severity.INFO,
                title=f"{run.unparsed_lines} lines of {run.source} could not be read",
                evidence=tuple(f"{k}: {v}" for k, v in run.unparsed_reasons.most_common())
                + tuple(run.unparsed_examples),
                data={"run": run.source, "unparsed_lines": run.unparsed_lines},
            )
        )
    return [f for f in out if f is not None]


@dataclass
class AcceptanceReport:
    runs: list[Run]
    findings: list[Finding]
    baseline: Run | None = None
    draft_cost: float = DEFAULT_DRAFT_COST
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "runs": [summarize(r, self.draft_cost) for r in self.runs],
            "findings": [f.to_dict() for f in ranked(self.findings)],
        }
        if self.baseline is not None:
            out["baseline"] = summarize(self.baseline, self.draft_cost)
        return out


def analyze(
    runs: Sequence[Run],
    expected_step0: float | None = None,
    expected_accept_len: float | None = None,
    baseline: Run | None = None,
    draft_cost: float = DEFAULT_DRAFT_COST,
) -> AcceptanceReport:
    """Findings for every run (and against a baseline run without speculation, when given)."""
    findings: list[Finding] = []
    for run in runs:
        findings += run_findings(run, expected_step0, expected_accept_len)
        if baseline is not None and (f := no_speedup(run, baseline)):
            findings.append(f)
    return AcceptanceReport(list(runs), findings, baseline, draft_cost)


@dataclass
class Comparison:
    """Before and after a fix: what moved, and whether it moved enough to matter."""

    before: Run
    after: Run
    findings: list[Finding]

    def delta(self, attr: str) -> float | None:
        a, b = getattr(self.before, attr).mean, getattr(self.after, attr).mean
        return None if a is None or b is None else b - a

    def to_dict(self) -> dict[str, Any]:
        def ratio() -> float | None:
            a, b = self.before.throughput.mean, self.after.throughput.mean
            return round(b / a, 4) if a and b is not None else None

        return {
            "before": self.before.source,
            "after": self.after.source,
            "accept_len": {
                "before": self.before.accept_len.mean,
                "after": self.after.accept_len.mean,
                "delta": self.delta("accept_len"),
            },
            "accept_rate": {
                "before": self.before.accept_rate.mean,
                "after": self.after.accept_rate.mean,
                "delta": self.delta("accept_rate"),
            },
            "throughput_ratio": ratio(),
            "findings": [f.to_dict() for f in ranked(self.findings)],
        }


def compare(before: Run, after: Run) -> Comparison:
    """Compare two runs; a fix that leaves accept len where it was is reported."""
    findings = []
    d = None
    if before.accept_len.count and after.accept_len.count:
        d = after.accept_len.mean - before.accept_len.mean
    if d is not None and abs(d) < 0.05:
        still_zero = zero_acceptance(after) is not None
        findings.append(
            Finding(
                code="FIX_NO_EFFECT",
                severity=Severity.ERROR if still_zero else Severity.WARNING,
                title=f"Accept len unchanged by the fix ({before.accept_len.mean:.2f} → "
                f"{after.accept_len.mean:.2f})" + ("; still zero acceptance" if still_zero else ""),
                evidence=(
                    f"before: {before.source}, mean accept len {before.accept_len.mean:.4f}",
                    f"after: {after.source}, mean accept len {after.accept_len.mean:.4f}",
                ),
                fix="The change was not (or not the only) cause; look for a second fault.",
                engine=after.engine,
                data={"before": before.source, "after": after.source},
            )
        )
    elif d is not None:
        findings.append(
            Finding(
                code="FIX_EFFECT",
                severity=Severity.INFO,
                title=f"Accept len {before.accept_len.mean:.2f} → {after.accept_len.mean:.2f}",
                evidence=(f"Δ accept len {d:+.2f}",),
                engine=after.engine,
                data={"before": before.source, "after": after.source},
            )
        )
    return Comparison(before, after, findings)
