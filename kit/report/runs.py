"""A finished run: what each notebook step did, its records, and every finding ranked.

`kit.report.runbook` produces a `Run`, `kit.report.postmortem` renders one, the postmortem notebook reads one
back with `load_run`; none of them needs the others. The executed notebooks are the single source
of truth: `run.json` lists what ran, and every result is read back from the notebooks' records
(`kit.report.record`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kit.errors import KitError
from kit.findings import Finding, Severity, ranked
from kit.report.record import read_records

SUMMARY_NAME = "run.json"

# Steps of a run, in reading order, with the title the summary and the postmortem use.
TITLES = {
    "01_key_inspection": "Key inspection",
    "02_load_weights_simulation": "Load-weights simulation",
    "03_hidden_state_tracing": "Hidden-state tracing",
    "04_acceptance_rate": "Acceptance rate from the server logs",
    "05_offline_acceptance": "Offline acceptance (what the draft should reach)",
    "06_deployment_check": "Deployment check (launch line, configs, tokenizer)",
}


class Status(StrEnum):
    """How a step ended; the value is what `run.json` stores."""

    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class StepError:
    """Where and how a notebook failed, as papermill reports it."""

    cell: int | None  # execution count, the `In [N]` a reader sees
    ename: str
    evalue: str
    source: str = ""  # the line of the cell that raised (else the cell's first line)

    def __str__(self) -> str:
        where = f"cell In [{self.cell}]" if self.cell is not None else "before any cell ran"
        line = f" ({self.source})" if self.source else ""
        return f"{where}{line}: {self.ename}: {self.evalue}"


@dataclass
class StepResult:
    name: str
    status: Status
    params: dict[str, Any] = field(default_factory=dict)
    notebook: str | None = None  # executed notebook, relative to the run folder
    seconds: float = 0.0
    error: StepError | None = None
    reason: str = ""  # why a step was skipped
    records: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def title(self) -> str:
        return TITLES.get(self.name, self.name)

    @property
    def findings(self) -> list[Finding]:
        return [Finding.from_dict(d) for d in self.records.get("findings", [])]

    def summary_line(self) -> str:
        if self.status == Status.OK:
            return f"{self.name}: ok in {self.seconds:.1f} s"
        if self.status == Status.SKIPPED:
            return f"{self.name}: skipped ({self.reason})"
        return f"{self.name}: FAILED at {self.error}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("records")
        return d


@dataclass
class Run:
    """A finished run: the inputs, each step's result, and every finding ranked."""

    inputs: dict[str, Any]
    steps: list[StepResult]
    seconds: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        """All steps' findings ranked, each kept once: a root cause once per code (the earliest
        step's: the offline notebook re-finds the load and capture faults it injects). Evidence
        is reconciled first: logs with acceptance figures prove the server ran, so a refused
        config.json is not the one it served (`kit.load.findings.reconcile`)."""
        from kit.load.findings import reconcile

        ran = self.server_ran()
        seen: dict[tuple[str, str], Finding] = {}
        for step in self.steps:
            for f in reconcile(step.findings, ran):
                seen.setdefault((f.code, "" if f.root_cause else f.title), f)
        return ranked([*seen.values(), *self.failures()])

    def server_ran(self) -> bool:
        """Whether a server log of the run holds acceptance figures."""
        step = self.step("04_acceptance_rate")
        rows = step.records.get("table:runs compared", []) if step else []
        return any(row.get("accept len") is not None for row in rows)

    def failures(self) -> list[Finding]:
        """A step that did not complete is a finding: a CI gate must not pass on a blind spot."""
        return [
            Finding(
                code="STEP_FAILED",
                severity=Severity.ERROR,
                title=f"{s.title} did not complete: {s.error.ename}: {s.error.evalue}",
                evidence=(f"notebook {s.notebook}, {s.error}",),
                fix="Fix or supply the input named in the message and rerun; the other steps ran.",
                data={"step": s.name},
            )
            for s in self.steps
            if s.status == Status.FAILED and s.error is not None
        ]

    def step(self, name: str) -> StepResult | None:
        return next((s for s in self.steps if s.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "seconds": round(self.seconds, 2),
            "steps": [s.to_dict() for s in self.steps],
        }


def load_run(run_dir: str | Path) -> Run:
    """A finished run read back from its folder: `run.json` plus the executed notebooks' records."""
    folder = Path(run_dir)
    summary = folder / SUMMARY_NAME
    try:
        data = json.loads(summary.read_text())
    except FileNotFoundError:
        raise KitError("no run here (run `python -m kit run --out` first)", summary) from None
    except (OSError, json.JSONDecodeError) as e:
        raise KitError(f"not a readable run summary ({e})", summary) from None
    steps = []
    for d in data["steps"]:
        error = StepError(**d["error"]) if d.get("error") else None
        step = StepResult(**{**d, "status": Status(d["status"]), "error": error})
        if step.notebook and (folder / step.notebook).is_file():
            step.records = read_records(folder / step.notebook)
        steps.append(step)
    return Run(data["inputs"], steps, data.get("seconds", 0.0))
