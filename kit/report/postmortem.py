"""The postmortem: one self-contained HTML file a team can share with someone who never opens Jupyter.

Order is the reader's: the verdict first (root causes as findings, with evidence and fixes), then
each step's evidence, the server runs compared, and the parameters used. Everything comes from the
records of the executed notebooks (`kit.report.record`), so the page and the notebooks cannot disagree. A
step that failed or was skipped is stated where its evidence would be, never left out silently.
plotly.js is embedded once, so the charts draw offline.

Record names the postmortem understands: `findings` (list of findings), `summary` (short facts, a
dict), `table:TITLE` (list of row dicts), `fig:TITLE` (a plotly figure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kit.report.html import cause_html, escape, figure_html, findings_html, page, table_html
from kit.report.runs import Run, Status, StepResult

if TYPE_CHECKING:
    from pathlib import Path

RUNS_TABLE = "table:runs compared"
FIXES_TABLE = "table:before against after"
SYMPTOM_FIGURE = "fig:accept length, observed against expected"

# What each step checks, for a reader who never opens the notebooks.
ABOUT = {
    "01_key_inspection": "What the draft checkpoint holds: its tensors by name, the trainer that "
    "wrote it, and what its config says (read from the file headers only).",
    "02_load_weights_simulation": "What the engine release does with each checkpoint key when it "
    "loads the draft: loaded, merged, or dropped without a word, leaving a parameter untrained.",
    "03_hidden_state_tracing": "What the target hands the draft at full scale: which hidden "
    "states, how wide, and whether the draft's fc projection runs.",
    "04_acceptance_rate": "What the server logs say, under that release's formula: accept length "
    "against the zero-acceptance floor and the offline expectation, before and after each fix.",
    "05_offline_acceptance": "What the draft reaches when wired correctly, measured on a small "
    "target on CPU, and what each fault found above costs it.",
}

STATUS_MARKS = {Status.OK: "✅", Status.FAILED: "❌", Status.SKIPPED: "⏭️"}


def symptom_figure(run: Run) -> dict[str, Any] | None:
    """The served accept length against the offline expectation: the symptom in one chart."""
    step = run.step("04_acceptance_rate")
    return step.records.get(SYMPTOM_FIGURE) if step else None


def verdict_html(run: Run, symptom: bool = True) -> str:
    """Root causes in full, the symptom chart (unless `symptom` is off: a notebook draws it
    itself), then the other findings."""
    findings = run.findings
    causes = [f for f in findings if f.root_cause]
    rest = [f for f in findings if not f.root_cause]
    if causes:
        n = len(causes)
        head = f"<p><b>{n} root cause{'s' if n > 1 else ''}</b> explain{'' if n > 1 else 's'} the symptom:</p>"
    elif findings:
        head = "<p>No root cause was identified; the findings below are what the checks saw.</p>"
    else:
        head = "<p>No findings: every check that ran passed.</p>"
    body = "".join(cause_html(f) for f in causes)
    figure = symptom_figure(run) if symptom else None
    glance = f"<h3>The symptom</h3>{figure_html(figure)}" if figure else ""
    others = f"<h3>Other findings</h3>{findings_html(rest)}" if rest else ""
    return f'<section class="card verdict"><h2>Verdict</h2>{head}{body}{glance}{others}</section>'


def status_html(run: Run) -> str:
    """One row per notebook: how it ended, how long it took, why it failed or was skipped."""
    return table_html(
        [
            {
                "notebook": s.name,
                "status": f"{STATUS_MARKS[s.status]} {s.status}",
                "time": f"{s.seconds:.1f} s",
                "detail": str(s.error) if s.error else s.reason,
            }
            for s in run.steps
        ]
    )


def step_html(step: StepResult, figures: bool = True) -> str:
    """A step's evidence: what it checks, whether it ran, its facts, figures (unless `figures` is
    off: a notebook draws them itself), tables and findings."""
    about = escape(ABOUT.get(step.name, ""))
    parts = [f'<section class="card"><h2>{escape(step.title)}</h2><p>{about}</p>']
    if step.status == Status.SKIPPED:
        parts.append(f"<p class=missing>Not run: {escape(step.reason)}.</p>")
    elif step.status == Status.FAILED and step.error:
        parts.append(
            f"<p class=failed><b>This step did not complete</b>, so its evidence is missing: "
            f"{escape(step.error.ename)}: {escape(step.error.evalue)}<br>"
            f"<span class=meta>notebook <code>{escape(step.notebook)}</code>, "
            f"{escape(step.error)}</span></p>"
        )
    summary = step.records.get("summary")
    if summary:
        parts.append(table_html([{"fact": k, "value": v} for k, v in summary.items()]))
    for name, value in step.records.items():
        if figures and name.startswith("fig:"):
            parts.append(f"<h3>{escape(name[4:])}</h3>{figure_html(value)}")
    for name, value in step.records.items():
        if name.startswith("table:") and name not in (RUNS_TABLE, FIXES_TABLE):
            parts.append(f"<h3>{escape(name[6:])}</h3>{table_html(value)}")
    if step.status == Status.OK:
        parts.append(f"<h3>Findings of this step</h3>{findings_html(step.findings)}")
    parts.append("</section>")
    return "".join(parts)


def runs_html(run: Run) -> str:
    step = run.step("04_acceptance_rate")
    if step is None or RUNS_TABLE not in step.records:
        why = "no server logs were analysed" if step is None else step.reason or str(step.error)
        body = (
            f"<p class=missing>No runs to compare: {escape(why or 'the step recorded none')}.</p>"
        )
    else:
        body = table_html(step.records[RUNS_TABLE])
        if step.records.get(FIXES_TABLE):
            body += f"<h3>Before against after each fix</h3>{table_html(step.records[FIXES_TABLE])}"
    return f'<section class="card"><h2>The runs compared</h2>{body}</section>'


def parameters_html(run: Run) -> str:
    inputs = table_html([{"input": k, "value": v} for k, v in run.inputs.items()])
    steps = table_html(  # long form: notebooks take different parameters
        [
            {"notebook": s.name, "parameter": k, "value": v}
            for s in run.steps
            if s.status != Status.SKIPPED
            for k, v in s.params.items()
        ]
    )
    return (
        f'<section class="card"><h2>Parameters used</h2>{inputs}'
        f"<h3>Per notebook</h3>{steps}</section>"
    )


def render(run: Run) -> str:
    """The whole postmortem page."""
    failed = sum(s.status == Status.FAILED for s in run.steps)
    engine = run.inputs.get("engine", "")
    state = f"<span class=bad>{failed} step(s) failed</span>" if failed else "all steps ran"
    body = (
        "<h1>EAGLE-3 draft postmortem</h1>"
        f"<p class=meta>engine <code>{escape(engine)}</code> · {state} · run took "
        f"{run.seconds:.1f} s</p>"
        f"{verdict_html(run)}"
        f'<section class="card"><h2>What ran</h2>{status_html(run)}</section>'
        + "".join(step_html(s) for s in run.steps)
        + runs_html(run)
        + parameters_html(run)
    )
    return page("EAGLE-3 draft postmortem", body)


def write(run: Run, path: Path) -> Path:
    """Write the page next to the executed notebooks (a temporary file renamed into place)."""
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(render(run), encoding="utf-8")
    tmp.replace(path)
    return path
