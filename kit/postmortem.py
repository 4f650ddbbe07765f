"""The postmortem: one self-contained HTML file a team can share with someone who never opens Jupyter.

Order is the reader's: the verdict first (root causes as findings, with evidence and fixes), then
each step's evidence, the server runs compared, and the parameters used. Everything comes from the
records of the executed notebooks (`kit.record`), so the page and the notebooks cannot disagree. A
step that failed or was skipped is stated where its evidence would be, never left out silently.
plotly.js is embedded once, so the charts draw offline.

Record names the postmortem understands: `findings` (list of findings), `summary` (short facts, a
dict), `table:TITLE` (list of row dicts), `fig:TITLE` (a plotly figure).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from kit.findings import Finding, to_html
from kit.runbook import Run, StepResult

RUNS_TABLE = "table:runs compared"
FIXES_TABLE = "table:before against after"
SYMPTOM_FIGURE = "fig:accept length, observed against expected"
MAX_ROWS = 60

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

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:24px 32px 64px}
h1{font-size:26px;margin:8px 0 4px} h2{border-bottom:2px solid #d5d9e0;padding-bottom:4px;margin-top:40px}
h3{margin:24px 0 8px} .meta{color:#5b6575} code{background:#eef0f4;padding:0 4px;border-radius:3px}
section.card{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:12px 20px;margin:16px 0}
.verdict{border-left:6px solid #c62828} .cause h3{color:#b71c1c;margin-top:8px}
.fix{background:#e8f5e9;border-left:4px solid #2e7d32;padding:6px 12px;margin:8px 0}
.missing{background:#fff3e0;border-left:4px solid #ef6c00;padding:8px 12px}
.failed{background:#ffebee;border-left:4px solid #c62828;padding:8px 12px}
table{border-collapse:collapse;width:100%;margin:8px 0;font-size:13px}
th,td{border:1px solid #dde1e8;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef0f4} td.sev{white-space:nowrap;font-weight:600}
tr.sev-critical td.sev{color:#fff;background:#c62828} tr.sev-error td.sev{color:#c62828}
tr.sev-warning td.sev{color:#a86400} tr.sev-info td.sev{color:#1565c0}
.cite{color:#5b6575;font-size:12px} .fig,.wide{overflow-x:auto} .ok{color:#2e7d32;font-weight:600}
.bad{color:#c62828;font-weight:600} .skip{color:#a86400;font-weight:600}
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | dict):
        return _e(json.dumps(value))
    return _e("" if value is None else value)


def table_html(rows: list[dict[str, Any]], max_rows: int = MAX_ROWS) -> str:
    """A list of row dicts as an HTML table, with a line saying how many rows were left out."""
    if not rows:
        return "<p>(empty)</p>"
    columns = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>"
        for row in rows[:max_rows]
    )
    more = f"<p class=meta>… {len(rows) - max_rows} more rows</p>" if len(rows) > max_rows else ""
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<div class=wide>{table}</div>{more}"  # a wide table scrolls, not the page


def _findings_html(findings: list[Finding]) -> str:
    return f"<div class=wide>{to_html(findings)}</div>"  # on a narrow window it scrolls alone


def figure_html(figure: dict[str, Any]) -> str:
    """A recorded plotly figure as a div (plotly.js itself is in the page head)."""
    import plotly.io as pio

    div = pio.to_html(
        figure, include_plotlyjs=False, full_html=False, config={"displaylogo": False}
    )
    return f"<div class=fig>{div}</div>"  # a wide fixed-size figure scrolls inside its card


def _cause(f: Finding, max_evidence: int = 8) -> str:
    evidence = "".join(f"<li>{_e(e)}</li>" for e in f.evidence[:max_evidence])
    if len(f.evidence) > max_evidence:
        evidence += f"<li>… {len(f.evidence) - max_evidence} more in the step's findings</li>"
    cite = " · ".join(_e(x) for x in (f.engine, f.source) if x)
    return (
        f'<div class="cause"><h3>{_e(f.title)} <code>{_e(f.code)}</code></h3>'
        f"<p class=meta>{_e(f.severity.name.lower())}{' · ' + cite if cite else ''}</p>"
        f"<ul>{evidence}</ul>"
        f"{f'<div class=fix><b>Fix:</b> {_e(f.fix)}</div>' if f.fix else ''}</div>"
    )


def symptom_figure(run: Run) -> dict[str, Any] | None:
    """The served accept length against the offline expectation: the symptom in one chart."""
    step = run.step("04_acceptance_rate")
    return step.records.get(SYMPTOM_FIGURE) if step else None


def verdict_html(run: Run) -> str:
    findings = run.findings
    causes = [f for f in findings if f.root_cause]
    rest = [f for f in findings if not f.root_cause]
    if causes:
        n = len(causes)
        head = f"<p><b>{n} root cause{'s' if n > 1 else ''}</b> explain the symptom:</p>"
    elif findings:
        head = "<p>No root cause was identified; the findings below are what the checks saw.</p>"
    else:
        head = "<p>No findings: every check that ran passed.</p>"
    body = "".join(_cause(f) for f in causes)
    symptom = symptom_figure(run)
    glance = f"<h3>The symptom</h3>{figure_html(symptom)}" if symptom else ""
    others = f"<h3>Other findings</h3>{_findings_html(rest)}" if rest else ""
    return f'<section class="card verdict"><h2>Verdict</h2>{head}{body}{glance}{others}</section>'


def status_html(run: Run) -> str:
    rows = []
    for s in run.steps:
        cls = {"ok": "ok", "failed": "bad", "skipped": "skip"}[s.status]
        detail = str(s.error) if s.error else s.reason
        rows.append(
            f"<tr><td>{_e(s.name)}</td><td class={cls}>{_e(s.status)}</td>"
            f"<td>{s.seconds:.1f} s</td><td>{_e(detail)}</td></tr>"
        )
    return (
        "<div class=wide><table><thead><tr><th>notebook</th><th>status</th><th>time</th>"
        f"<th>detail</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def step_html(step: StepResult) -> str:
    parts = [
        f'<section class="card"><h2>{_e(step.title)}</h2><p>{_e(ABOUT.get(step.name, ""))}</p>'
    ]
    if step.status == "skipped":
        parts.append(f"<p class=missing>Not run: {_e(step.reason)}.</p>")
    elif step.status == "failed" and step.error:
        parts.append(
            f"<p class=failed><b>This step did not complete</b>, so its evidence is missing: "
            f"{_e(step.error.ename)}: {_e(step.error.evalue)}<br>"
            f"<span class=meta>notebook <code>{_e(step.notebook)}</code>, {_e(step.error)}</span></p>"
        )
    summary = step.records.get("summary")
    if summary:
        parts.append(table_html([{"fact": k, "value": v} for k, v in summary.items()]))
    for name, value in step.records.items():
        if name.startswith("fig:"):
            parts.append(f"<h3>{_e(name[4:])}</h3>{figure_html(value)}")
    for name, value in step.records.items():
        if name.startswith("table:") and name not in (RUNS_TABLE, FIXES_TABLE):
            parts.append(f"<h3>{_e(name[6:])}</h3>{table_html(value)}")
    if step.status == "ok":
        parts.append(f"<h3>Findings of this step</h3>{_findings_html(step.findings)}")
    parts.append("</section>")
    return "".join(parts)


def runs_html(run: Run) -> str:
    step = run.step("04_acceptance_rate")
    if step is None or RUNS_TABLE not in step.records:
        why = "no server logs were analysed" if step is None else step.reason or str(step.error)
        body = f"<p class=missing>No runs to compare: {_e(why or 'the step recorded none')}.</p>"
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
            if s.status != "skipped"
            for k, v in s.params.items()
        ]
    )
    return (
        f'<section class="card"><h2>Parameters used</h2>{inputs}'
        f"<h3>Per notebook</h3>{steps}</section>"
    )


def render(run: Run) -> str:
    """The whole postmortem page."""
    from plotly.offline import get_plotlyjs

    failed = sum(s.status == "failed" for s in run.steps)
    engine = run.inputs.get("engine", "")
    state = f"<span class=bad>{failed} step(s) failed</span>" if failed else "all steps ran"
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<title>EAGLE-3 draft postmortem</title>"
        f"<style>{_CSS}</style><script>{get_plotlyjs()}</script></head><body><main>"
        "<h1>EAGLE-3 draft postmortem</h1>"
        f"<p class=meta>engine <code>{_e(engine)}</code> · {state} · run took "
        f"{run.seconds:.1f} s</p>"
        f"{verdict_html(run)}"
        f'<section class="card"><h2>What ran</h2>{status_html(run)}</section>'
        + "".join(step_html(s) for s in run.steps)
        + runs_html(run)
        + parameters_html(run)
        + "</main></body></html>"
    )


def write(run: Run, path: Path) -> Path:
    """Write the page next to the executed notebooks (a temporary file renamed into place)."""
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(render(run), encoding="utf-8")
    tmp.replace(path)
    return path
