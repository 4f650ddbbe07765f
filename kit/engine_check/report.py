"""An engine check's result: every run side by side (the kit's figures, the engine's, where they
part), the settings it ran with, the bisect, the findings and the verdict; as JSON for `doctor
--engine-check` and the postmortem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.engine_check.defects import Defect
from kit.engine_check.deviation import Deviation
from kit.engine_check.hypotheses import Explanation
from kit.engine_check.plan import RunPlan
from kit.engines.base import Row
from kit.errors import KitError
from kit.findings import Finding
from kit.offline_acceptance.result import OfflineResult

REPORT = "engine-check"


@dataclass
class RunCheck:
    """One run (greedy, or one temperature): the kit's figures, the engine's, their comparison.

    `ideal` is the kit's prediction for the release with every draft step where trained; where
    the release runs them otherwise (a defect the kit models, SGLang's late positions), `release`
    is the prediction as the release runs it."""

    name: str
    options: dict[str, Any]
    ideal: OfflineResult
    release: OfflineResult | None = None
    measured: OfflineResult | None = None
    deviation: Deviation | None = None  # the engine against `ideal`
    against_release: Deviation | None = None  # the engine against `release`
    explanation: Explanation | None = None
    defect: Row[Defect] | None = None

    @property
    def sampled(self) -> bool:
        return bool(self.options.get("temperature"))

    @property
    def departs(self) -> bool:
        return self.deviation is not None and self.deviation.beyond_noise

    @property
    def start(self) -> int | None:
        """Where in the chain the departure starts: where the model that reproduces it starts
        the fault, else where the known defect it matches starts, else the first position
        beyond the noise."""
        if self.explanation is not None:
            return self.explanation.start
        if self.defect is not None and self.defect.value.starts_at is not None:
            return self.defect.value.starts_at
        return self.deviation.start if self.deviation else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "options": self.options,
            "kit": self.ideal.figures(),
            "kit_as_release_runs": self.release.figures() if self.release else None,
            "engine": self.measured.figures() if self.measured else None,
            "deviation": self.deviation.to_dict() if self.deviation else None,
            "against_release": self.against_release.to_dict() if self.against_release else None,
            "explanation": self.explanation.to_dict() if self.explanation else None,
            "defect": self.defect.value.key if self.defect else None,
            "start": self.start if self.departs else None,
        }


@dataclass
class BisectStep:
    """One rerun with a single setting changed, and whether the departure went with it."""

    label: str
    crash: str | None
    deviations: dict[str, Deviation] = field(default_factory=dict)  # run name -> against ideal

    @property
    def clears(self) -> bool:
        """The engine starts, and every run that departed is back within the noise."""
        return self.crash is None and all(not d.beyond_noise for d in self.deviations.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "crash": self.crash,
            "clears": self.clears,
            "runs": {n: d.to_dict() for n, d in self.deviations.items()},
        }


@dataclass
class EngineCheck:
    """The engine check of one installed engine build on the bundled pair."""

    python: str
    engine: str
    release: str
    distribution: str | None
    cuda: bool
    plan: RunPlan
    prompts: int
    runs: list[RunCheck] = field(default_factory=list)
    crash: str | None = None  # the engine did not start: its exception
    failed: dict[str, str] = field(default_factory=dict)  # run name -> the engine's exception
    bisect: list[BisectStep] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    log: str | None = None
    verdict: str = ""  # the answer in one line (`verdict.verdict_line`, set with the findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "python": self.python,
            "engine": self.engine,
            "release": self.release,
            "distribution": self.distribution,
            "cuda": self.cuda,
            "prompts": self.prompts,
            "plan": self.plan.to_dict(),
            "crash": self.crash,
            "failed_runs": self.failed,
            "runs": [r.to_dict() for r in self.runs],
            "bisect": [b.to_dict() for b in self.bisect],
            "seconds": self.seconds,
            "engine_log": self.log,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class SavedCheck:
    """An engine check read back from its JSON report: what `doctor` and the postmortem use."""

    path: Path
    release: str
    verdict: str
    findings: list[Finding]
    data: dict[str, Any]

    @property
    def engine_loss(self) -> float | None:
        """The largest engine-side loss of accept length over its runs (None: none found)."""
        losses = [-d["accept_len"]["difference"] for r in self.data.get("runs", [])
                  if (d := r.get("deviation")) and d.get("beyond_noise")
                  and d["accept_len"]["difference"] < 0]  # fmt: skip
        return max(losses) if losses else None


def load_report(path: str | Path) -> SavedCheck:
    """An engine-check report written by `eagle3-kit engine-check --report`; anything else is
    one clear error naming the file."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise KitError("no such engine-check report", p) from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise KitError(f"not an engine-check report ({e})", p) from None
    if not isinstance(data, dict) or data.get("report") != REPORT:
        raise KitError('not an engine-check report (no "report": "engine-check")', p)
    try:
        findings = [Finding.from_dict(f) for f in data["findings"]]
        return SavedCheck(p, str(data["release"]), str(data["verdict"]), findings, data)
    except (KeyError, TypeError, ValueError) as e:
        raise KitError(f"an engine-check report without its {e} field", p) from None
