"""Acceptance analysis: every run's findings, before/after comparison, and the per-run record
`python -m kit acceptance --json` prints. What the figures mean is `kit.acceptance.meaning`; the
signatures are `kit.acceptance.signatures`; the speedup model is `kit.acceptance.speedup`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.acceptance.meaning import FLOOR, bands, draft_steps, interpret
from kit.acceptance.model import LogRun
from kit.acceptance.signatures import no_speedup, run_findings, zero_acceptance
from kit.acceptance.speedup import (
    DEFAULT_DRAFT_COST,
    Speedup,
    expected_speedup,
    speedup_for,
    speedup_from_accept_len,
)
from kit.findings import Finding, Severity, ranked

__all__ = [
    "DEFAULT_DRAFT_COST",
    "FLOOR",
    "AcceptanceReport",
    "Comparison",
    "Speedup",
    "analyze",
    "bands",
    "compare",
    "draft_steps",
    "expected_speedup",
    "interpret",
    "speedup_from_accept_len",
    "summarize",
]


def summarize(run: LogRun, draft_cost: float = DEFAULT_DRAFT_COST) -> dict[str, Any]:
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
        "windows_at_floor": run.floor_windows,
        "scopes": {scope.value: n for scope, n in run.scopes.items()},
        "formats": {" ".join(map(str, sig)): n for sig, n in run.formats.items()},
        "accept_len": run.accept_len.to_dict(),
        "accept_rate": run.accept_rate.to_dict(),
        "accepted_drafts": run.accepted if run.drafted else None,
        "drafted": run.drafted or None,
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
        "facts": run.facts,
        "notes": run.notes,
        "conflicts": run.conflicts,
    }


@dataclass
class AcceptanceReport:
    runs: list[LogRun]
    findings: list[Finding]
    baseline: LogRun | None = None
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
    runs: Sequence[LogRun],
    expected_step0: float | None = None,
    expected_accept_len: float | None = None,
    baseline: LogRun | None = None,
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

    before: LogRun
    after: LogRun
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


def compare(before: LogRun, after: LogRun) -> Comparison:
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
                title=f"{Path(after.source).name}: accept len unchanged by the fix "
                f"({before.accept_len.mean:.2f} → {after.accept_len.mean:.2f}) against "
                f"{Path(before.source).name}" + ("; still zero acceptance" if still_zero else ""),
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
                title=f"{Path(after.source).name}: accept len {before.accept_len.mean:.2f} → "
                f"{after.accept_len.mean:.2f} ({d:+.2f}) against {Path(before.source).name}",
                evidence=(
                    f"before: {before.source}, mean accept len {before.accept_len.mean:.4f}",
                    f"after: {after.source}, mean accept len {after.accept_len.mean:.4f}",
                ),
                engine=after.engine,
                data={"before": before.source, "after": after.source},
            )
        )
    return Comparison(before, after, findings)
