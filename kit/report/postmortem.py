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

import re
from typing import TYPE_CHECKING, Any

from kit.report import real_engine
from kit.report.html import (
    cause_html,
    escape,
    figure_html,
    findings_html,
    page,
    prose,
    table_html,
)
from kit.report.notebook import ROOT
from kit.report.runs import Run, Status, StepResult

if TYPE_CHECKING:
    from pathlib import Path

    from kit.differential import Differential

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

ACCEPT_FIELDS = re.compile(r"accept len: [0-9.]+, accept rate: [0-9.]+")
STATUS_MARKS = {Status.OK: "✅", Status.FAILED: "❌", Status.SKIPPED: "⏭️"}


def symptom_figure(run: Run) -> dict[str, Any] | None:
    """The served accept length against the offline expectation: the symptom in one chart."""
    step = run.step("04_acceptance_rate")
    return step.records.get(SYMPTOM_FIGURE) if step else None


def verdict_html(run: Run, symptom: bool = True) -> str:
    """The release judged and why; for a symptom, the differential (every cause that can produce
    it, confirmed, ruled out or unverified, and what settles each); the confirmed causes in full;
    the symptom chart (unless `symptom` is off: a notebook draws it itself); the other findings."""
    findings = run.findings
    diff = run.differential
    causes = [f for f in findings if f.root_cause]
    rest = [f for f in findings if not f.root_cause]
    if diff is not None:
        head = differential_html(diff)
    elif causes:
        n = len(causes)
        head = f"<p><b>{n} root cause{'s' if n > 1 else ''}</b> explain{'' if n > 1 else 's'} the symptom:</p>"
    elif findings:
        head = "<p>No root cause was identified; the findings below are what the checks saw.</p>"
    else:
        head = "<p class=ok>No findings: every check that ran passed.</p>"
    body = "".join(cause_html(f) for f in causes)
    if causes and diff is not None:
        body = "<h3>The confirmed causes in full</h3>" + body
    figure = symptom_figure(run) if symptom else None
    glance = f"<h3>The symptom</h3>{figure_html(figure)}" if figure else ""
    others = f"<h3>Other findings</h3>{findings_html(rest)}" if rest else ""
    release = release_html(run)
    answer = answer_html(run)
    return (
        f'<section class="card verdict"><h2>Verdict</h2>{answer}{release}{head}{body}{glance}'
        f"{others}</section>"
    )


def answer_html(run: Run) -> str:
    """The verdict in one line; for a healthy deployment, what holds, with the healthy figure
    beside the deployment's; and what no step could see, with the input that would show it."""
    v = run.verdict
    css = "ok" if v.healthy else "bad"
    holds = "".join(f"<li>✓ {prose(h)}</li>" for h in v.holds) if v.healthy else ""
    unchecked = "".join(f"<li>{prose(u)}</li>" for u in v.unchecked)
    return (
        f"<p class={css} style='font-size:17px'>{prose(v.headline[:1].upper() + v.headline[1:])}"
        "</p>"
        + (f"<ul>{holds}</ul>" if holds else "")
        + (f"<p class=meta>Not checked:</p><ul class=meta>{unchecked}</ul>" if unchecked else "")
    )


def release_html(run: Run) -> str:
    """Which release every step judged by, and what that choice rests on."""
    r = run.release
    if not r:
        return ""
    basis = {
        "given": "given",
        "evidence": "the newest release the evidence allows",
        "default": "the default: nothing named one",
    }[r["basis"]]
    fitting = r.get("fitting") or []
    span = f" (the evidence allows {fitting[0]} … {fitting[-1]})" if len(fitting) > 1 else ""
    lines = "".join(f"<li>{prose(e)}</li>" for e in [*r["evidence"], *r.get("conflicts", [])])
    return f"<p>Judged as <code>{escape(r['release'])}</code>, {basis}{escape(span)}.</p>" + (
        f"<ul class=meta>{lines}</ul>" if lines and r["basis"] != "given" else ""
    )


STATUS_CLASS = {"confirmed": "bad", "assumed": "skip", "unverified": "skip", "ruled out": "meta"}


def differential_html(diff: Differential) -> str:
    """The symptom, the logs as a sequence, and every cause of it with its status."""
    seq = "".join(f"<li>{prose(line)}</li>" for line in diff.sequence)
    lead = diff.leading
    lead_html = (
        f"<div class=missing><b>Leading remaining suspect</b> (unverified): "
        f"{prose(lead.cause.name)}.<br>{prose(lead.evidence[0])}.<br><b>Settle it:</b> "
        f"{prose(lead.settle)}. Only the running engine shows this for certain.</div>"
        if lead
        else ""
    )
    rows = "".join(
        f"<tr><td data-label=status class={STATUS_CLASS[a.status]}>{escape(a.status)}</td>"
        f"<td data-label=cause>{prose(a.cause.name)}<div class=meta>"
        f"{'<br>'.join(prose(e) for e in a.evidence)}</div></td>"
        f"<td data-label='what settles it'>{prose(a.settle)}</td></tr>"
        for a in diff.assessments
    )
    partial = (
        f"<p class=meta>Also costing acceptance: "
        f"{', '.join(escape(f.code) for f in diff.partial)}.</p>"
        if diff.partial
        else ""
    )
    return (
        f"<p><b>Symptom:</b> {prose(diff.symptom)}.</p><ul>{seq}</ul>{lead_html}"
        f"<h3>{'Every cause that holds acceptance at the floor' if diff.floor else 'Every cause that lowers it'}</h3>"
        f'<table class="findings" style="width:100%;table-layout:fixed">'
        "<thead><tr><th style='width:8em'>status</th><th>cause and evidence</th>"
        f"<th style='width:34%'>what settles it</th></tr></thead><tbody>{rows}</tbody></table>"
        f"{partial}"
    )


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


def observed_html(run: Run) -> str:
    """What the running engine did (`run --watch`): evidence, not a prediction; its findings
    lead the verdict above, and are listed here on their own."""
    if not run.observed:
        return ""
    path = run.inputs.get("watch") or ""
    return (
        '<section class="card"><h2>Observed in the running engine</h2>'
        f"<p>From the <code>kit watch</code> report <code>{escape(str(path))}</code>: what the "
        "engine's loader, first draft forward and scheduler did, ranked above every "
        f"prediction.</p>{findings_html(run.observed)}</section>"
    )


def engine_check_html(run: Run) -> str:
    """The engine build measured on the bundled pair (`run --engine-check`): an engine-side loss
    is a cause before the draft; a clean check rules the engine out."""
    if not run.engine_checked:
        return ""
    path = run.inputs.get("engine_check") or ""
    return (
        '<section class="card"><h2>The engine build, checked</h2>'
        f"<p>From the engine-check report <code>{escape(str(path))}</code>: the serving engine "
        "ran the kit's bundled pair, whose acceptance the kit predicts exactly for each release; "
        f"a departure is the engine's, not the draft's.</p>{findings_html(run.engine_checked)}"
        "</section>"
    )


def real_engine_html(run: Run) -> str:
    """Where a running engine showed this verdict's causes (or a healthy pair's figure), and the
    command that shows it again; the incident served on real SGLang, with its figures when this
    clone has run it."""
    codes = [f.code for f in run.findings if f.root_cause]
    rows = [
        {
            "finding": key,
            "engine": seen.releases,
            "what the engine showed": seen.showed,
            "to see it again": seen.command,
        }
        for key, seen in real_engine.seen_for(codes, run.verdict.healthy)
    ]
    engine = str(run.release.get("release") or run.inputs.get("engine") or "")
    incident = incident_html() if real_engine.incident_applies(codes, engine) else ""
    if not rows and not incident:
        return ""
    table = (
        "<p>The kit's real-engine suite served the bundled pair with the same fault and the "
        "engine's own log; <code>doctor</code> named it. From a clone of the kit "
        f"(<code>{real_engine.SUITE}</code> runs them all):</p>{table_html(rows)}"
        if rows
        else ""
    )
    return f'<section class="card"><h2>Seen on the real engine</h2>{incident}{table}</section>'


def incident_html() -> str:
    """The incident on real SGLang 0.5.10: its figures if this clone ran it, else the command."""
    command = f"<code>{real_engine.INCIDENT_COMMAND}</code>"
    result = real_engine.incident_result(ROOT)
    if result is None:
        return (
            f"<p>{command} serves the incident's draft on real SGLang 0.5.10 on a CPU: the "
            "engine's own <code>accept len: 1.00, accept rate: 0.20</code>, the kit's verdict on "
            "that log, then the engine after <code>kit fix</code> and with aux capture on.</p>"
        )
    runs = result["runs"]
    lines = runs.get("incident", {}).get("decode_lines") or [""]
    said = ACCEPT_FIELDS.search(lines[-1])
    verdict = ", ".join(f["code"] for f in result.get("verdict", []))
    after = "".join(
        f"<li>{escape(name)}: accept length {r['accept_len']:.2f}</li>"
        for name, r in runs.items()
        if name != "incident"
    )
    return (
        f"<p>{command} served the incident's draft on real {escape(result['engine'])} "
        f"({escape(result['device'])}); recorded in <code>{real_engine.INCIDENT_JSON}</code>:</p>"
        f"<ul><li>the engine's own decode line: <code>{escape(said[0] if said else lines[-1])}"
        f"</code></li><li>the kit's verdict on that draft and log: {escape(verdict)}</li>"
        f"{after}</ul>"
    )


def render(run: Run) -> str:
    """The whole postmortem page."""
    failed = sum(s.status == Status.FAILED for s in run.steps)
    engine = run.inputs.get("engine") or ""
    state = f"<span class=bad>{failed} step(s) failed</span>" if failed else "all steps ran"
    body = (
        "<h1>EAGLE-3 draft postmortem</h1>"
        f"<p class=meta>engine <code>{escape(engine)}</code> · {state} · run took "
        f"{run.seconds:.1f} s</p>"
        f"{verdict_html(run)}"
        f"{observed_html(run)}"
        f"{engine_check_html(run)}"
        f"{real_engine_html(run)}"
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
