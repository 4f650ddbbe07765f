"""A finished run: what each notebook step did, its records, and every finding ranked.

`kit.report.runbook` produces a `Run`, `kit.report.postmortem` renders one, the postmortem notebook reads one
back with `load_run`; none of them needs the others. The executed notebooks are the single source
of truth: `run.json` lists what ran, and every result is read back from the notebooks' records
(`kit.report.record`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.errors import KitError
from kit.findings import Finding, Severity, ranked, with_inputs
from kit.limits import read_json_file
from kit.report.record import read_records

if TYPE_CHECKING:
    from kit.differential import Differential, LogPoint, Seen
    from kit.verdict_summary import Verdict

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
    observed: list[Finding] = field(default_factory=list)  # a `kit watch` report's (run --watch)
    release: dict[str, Any] = field(default_factory=dict)  # how the release was chosen

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
        from kit.watch.as_evidence import observed_first

        found = observed_first(ranked([*seen.values(), *self.failures()]), self.observed)
        target = self.inputs.get("target") or self.inputs.get("target_config")
        inputs = {"draft": self.inputs.get("draft"), "target": target}
        return with_inputs(found, {**inputs, "release": self.inputs.get("engine")})

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

    def ran(self, name: str) -> StepResult | None:
        step = self.step(name)
        return step if step is not None and step.status == Status.OK else None

    @property
    def differential(self) -> Differential | None:
        """The differential diagnosis doctor gives, from the notebooks' findings and what the
        run's inputs let them see (`kit.differential`)."""
        from kit.differential import diagnose

        return diagnose(self.findings, self.seen(), self.log_points())

    @property
    def verdict(self) -> Verdict:
        """The answer in one line, what holds, what was not seen (`kit.verdict_summary`)."""
        from kit.verdict_summary import summarise_run

        return summarise_run(self)

    @property
    def release_summary(self) -> str:
        from kit.release_choice import summary

        return summary(self.release) if self.release else str(self.inputs.get("engine"))

    def seen(self) -> Seen:
        """The evidence the notebooks rested on: a checkpoint read, the config traced being
        the one served, a target config, a launch line, the run's own assertions."""
        from kit.differential import Seen, config_not_served

        keys, trace = self.ran("02_load_weights_simulation"), self.ran("03_hidden_state_tracing")
        why = config_not_served(trace.findings, self.inputs.get("engine")) if trace else ""
        summary = trace.records.get("summary", {}) if trace else {}
        widths = (summary.get("target_hidden"), summary.get("draft_hidden"))
        launch = self.inputs.get("launch")
        return Seen(
            weights=keys is not None,
            served_config=trace is not None and not why,
            served_config_why=why,
            target=trace is not None,
            tokenizer=self.ran("05_offline_acceptance") is not None,
            launch=bool(launch) and self.ran("06_deployment_check") is not None,
            engine_observed=bool(self.observed),
            aux_capture_given=self.inputs.get("aux_capture"),
            widths_equal=widths[0] == widths[1] if None not in widths else None,
            server_ran=self.server_ran(),
            draft=self.inputs.get("draft"),
            target_dir=self.inputs.get("target") or self.inputs.get("target_config"),
            launch_text=f"sh {launch}" if launch and Path(launch).suffix == ".sh" else launch,
            release=self.inputs.get("engine"),
        )

    def log_points(self) -> list[LogPoint]:
        """Each server log in the order given: its mean accept length, at the floor or not."""
        from kit.differential import FLOOR_CODES, LOW_CODES, LogPoint

        step = self.ran("04_acceptance_rate")
        if step is None:
            return []

        def said(codes: frozenset[str]) -> set[str]:
            return {Path(str(f.data.get("run", ""))).name for f in step.findings if f.code in codes}

        floor, low = said(FLOOR_CODES), said(LOW_CODES)
        logs = {Path(p).name for p in self.inputs.get("logs", [])}
        return [
            LogPoint(row["run"], row.get("accept len"), row["run"] in floor, row["run"] in low)
            for row in step.records.get("table:runs compared", [])
            if row.get("run") in logs and row.get("accept len") is not None
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "release": self.release,
            "seconds": round(self.seconds, 2),
            "steps": [s.to_dict() for s in self.steps],
            "observed": [f.to_dict() for f in self.observed],
        }


def load_run(run_dir: str | Path) -> Run:
    """A finished run read back from its folder: `run.json` plus the executed notebooks' records."""
    folder = Path(run_dir)
    summary = folder / SUMMARY_NAME
    if not summary.is_file():
        raise KitError("no run here (run `python -m kit run --out` first)", summary)
    data = read_json_file(summary, "run summary")
    try:
        steps = [_step(d, folder, summary) for d in data["steps"]]
        observed = [Finding.from_dict(f) for f in data.get("observed", [])]
        release = dict(data.get("release") or {})
        return Run(dict(data["inputs"]), steps, float(data.get("seconds", 0.0)), observed, release)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise KitError(
            f"not a run summary this kit wrote ({type(e).__name__}: {e})", summary
        ) from None


def _step(d: dict, folder: Path, summary: Path) -> StepResult:
    """One step of a run summary; its notebook must be a file of the run's own folder (a
    summary is input: a name like `../x.ipynb` must not lead the reader out of it)."""
    error = StepError(**d["error"]) if d.get("error") else None
    step = StepResult(**{**d, "status": Status(d["status"]), "error": error})
    if step.notebook and Path(step.notebook).name != step.notebook:
        raise KitError(
            f"step notebook {step.notebook!r} is not a file of the run's folder", summary
        )
    if step.notebook and (folder / step.notebook).is_file():
        step.records = read_records(folder / step.notebook)
    return step
