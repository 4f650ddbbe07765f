"""A watch report turned into ranked findings, and the `eagle3-kit:` block printed on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.errors import KitError
from kit.findings import Finding, Severity, ranked
from kit.watch import observed
from kit.watch.report import read_report

PREFIX = "eagle3-kit:"


def load_watch_report(path: str | Path) -> dict[str, Any]:
    """A report written by `watch`; a missing or unreadable file is one clear error."""
    path = Path(path)
    try:
        report = read_report(path)
    except (OSError, ValueError) as e:
        raise KitError(f"{path}: not a kit watch report ({e})") from None
    if not report:
        raise KitError(f"{path}: no such watch report")
    if not isinstance(report, dict) or "kit_watch" not in report:
        raise KitError(f"{path}: not a kit watch report (no 'kit_watch' field)")
    return report


def watch_findings(report: dict[str, Any], *, compare: bool = True) -> list[Finding]:
    """Everything the report shows, root causes first; with `compare`, where the kit's tables
    for the engine's release disagree with what it did."""
    found = [
        *observed.crash_findings(report),
        *observed.load_findings(report),
        *observed.forward_findings(report),
        *observed.acceptance_findings(report),
    ]
    if compare:
        from kit.watch.compare import disagreements

        found += disagreements(report)
    found += observed.healthy_findings(report, found)
    return ranked(found)


def stage_of(report: dict[str, Any]) -> str:
    """How far the engine got: crashed, loading, loaded, forward."""
    if report.get("crashes"):
        return "crashed"
    if report.get("first_forward"):
        return "forward"
    if report.get("draft") or report.get("loaded"):
        return "loaded"
    return "starting"


def render_block(findings: list[Finding], heading: str) -> str:
    """One block, every line prefixed, warnings and worse only ("" when there are none)."""
    shown = [f for f in findings if f.severity >= Severity.WARNING]
    if not shown:
        return ""
    lines = [f"{PREFIX} {heading}"]
    for f in shown:
        lines.append(f"{PREFIX} [{f.severity.name}] {f.code}: {f.title}")
        lines += [f"{PREFIX}     {e}" for e in f.evidence]
        if f.fix:
            lines.append(f"{PREFIX}     fix: {f.fix}")
    return "\n".join(lines) + "\n"
