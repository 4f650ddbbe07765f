"""An engine check's saved report as evidence for `doctor --engine-check` and the postmortem.

The check measured the engine build, not the user's draft: a loss it found explains part of a
low figure before the draft is blamed, and a clean check rules the engine out. Both hold only for
the release the check ran; a report of another release is said to be so, and not used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.engine_check.report import SavedCheck, load_report
from kit.engine_check.verdict import AS_EXPECTED, ENGINE_LOSS_CODES
from kit.engines import parse_engine
from kit.findings import Finding, Severity

CHECK = "engine_check"  # the check name doctor files the report's findings under
OTHER_RELEASE = "ENGINE_CHECK_OTHER_RELEASE"


@dataclass
class EngineEvidence:
    """What a saved engine check says about the release judged."""

    saved: SavedCheck
    findings: list[Finding]
    facts: dict[str, Any] = field(default_factory=dict)
    applies: bool = True  # the check ran the release judged

    @property
    def engine_loss(self) -> bool:
        """The engine build was measured losing acceptance on the bundled pair."""
        return self.applies and any(f.code in ENGINE_LOSS_CODES for f in self.findings)

    @property
    def clean(self) -> bool:
        return self.applies and any(f.code == AS_EXPECTED for f in self.findings)


def engine_evidence(path: str | Path, release: str) -> EngineEvidence:
    """The report at `path` read for `release` (one clear error when it is not a report)."""
    saved = load_report(path)
    facts: dict[str, Any] = {"engine_check": f"{saved.verdict} ({saved.release}, {path})"}
    if parse_engine(saved.release) != parse_engine(release):
        return EngineEvidence(saved, [_other_release(saved, release)], facts, applies=False)
    loss = saved.engine_loss
    if loss is not None:
        facts["engine_check_loss"] = round(loss, 4)
    return EngineEvidence(saved, list(saved.findings), facts)


def _other_release(saved: SavedCheck, release: str) -> Finding:
    return Finding(
        code=OTHER_RELEASE,
        severity=Severity.INFO,
        title=f"the engine check ran {saved.release}, the deployment judged is {release}: its "
        "result is not evidence for this release",
        evidence=(f"{saved.path}: {saved.verdict}",),
        fix="run eagle3-kit engine-check in the Python that serves the release judged",
        engine=release,
    )
