"""A watch report as evidence for `doctor --watch` and `run --watch`: observed, so ranked first.

The report also says which draft and target the engine ran and which release it was, so
`doctor --watch kit-watch.json` alone can replay the kit's checks on the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.findings import Finding
from kit.watch.analyze import load_watch_report, watch_findings
from kit.watch.observed import OBSERVED, engine_of

CHECK = "observed"  # the check name findings from the report are filed under


@dataclass
class Observed:
    """What the running engine showed: findings, facts, and the inputs it ran on."""

    path: Path
    findings: list[Finding]
    facts: dict[str, Any] = field(default_factory=dict)
    draft: Path | None = None
    target: Path | None = None
    engine: str | None = None


def observed(path: str | Path) -> Observed:
    """Read a watch report (one clear error when it is not one) into evidence."""
    report = load_watch_report(path)
    draft = report.get("draft") or {}
    ff = report.get("first_forward") or {}
    totals = (report.get("acceptance") or {}).get("totals") or {}
    facts: dict[str, Any] = {"evidence": f"{OBSERVED} ({path})"}
    if ff:
        facts |= {"observed_width": ff.get("width"), "observed_fc_ran": ff.get("fc_ran")}
        facts["observed_captured_layers"] = ff.get("captured_layers")
    if totals.get("drafts"):
        facts["observed_accept_len"] = round(1 + totals["accepted"] / totals["drafts"], 4)
    return Observed(
        Path(path),
        watch_findings(report),
        facts,
        _existing(draft.get("draft_path"), draft.get("cwd")),
        _existing(draft.get("target_path"), draft.get("cwd")),
        engine_of(report)[1],
    )


def _existing(value: str | None, cwd: str | None) -> Path | None:
    if not value:
        return None
    path = Path(value) if Path(value).is_absolute() or not cwd else Path(cwd) / value
    return path if path.exists() else None


def observed_first(findings: list[Finding], observed: list[Finding]) -> list[Finding]:
    """The engine's own evidence above every prediction, each group in its own rank order."""
    keys = {(f.code, f.title) for f in observed}
    return [*observed, *(f for f in findings if (f.code, f.title) not in keys)]
