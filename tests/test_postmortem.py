"""The postmortem page: verdict first, every step stated (even a failed or skipped one), offline.

Built here from a run assembled in memory, so each property is checked on its own; the postmortem
of the real bundled incident is checked in `test_notebooks.py`.
"""

from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import pytest

from kit.findings import Finding, Severity
from kit.report.html import table_html
from kit.report.postmortem import FIXES_TABLE, RUNS_TABLE, render, write
from kit.report.record import to_jsonable
from kit.report.runs import Run, Status, StepError, StepResult

DROPPED = Finding(
    "KEYS_SILENTLY_DROPPED",
    Severity.CRITICAL,
    "10 decoder-layer keys dropped silently",
    ("layers.0.self_attn.q_proj.weight: no parameter <script>",),
    fix="rename layers.0. to midlayer.",
    engine="sglang==0.5.10",
    source="llama_eagle3.py:243",
    root_cause=True,
)
INFO = Finding("EMBED_REPLACED_BY_TARGET", Severity.INFO, "embed replaced by the target's")


@pytest.fixture
def run() -> Run:
    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[1.0, 1.0, 2.9], name="accept len"))
    steps = [
        StepResult(
            "02_load_weights_simulation",
            Status.OK,
            {"draft": "data/pair/draft", "engine": "sglang==0.5.10"},
            "02_load_weights_simulation.ipynb",
            1.5,
            records=to_jsonable(
                {
                    "findings": [INFO, DROPPED],
                    "summary": {"keys dropped silently": 10},
                    "fig:key fates": fig,
                    "table:key fates": [{"key": "layers.0.mlp.up_proj.weight", "outcome": "x"}],
                }
            ),
        ),
        StepResult(
            "04_acceptance_rate",
            Status.FAILED,
            {"logs": ["missing.log"]},
            "04_acceptance_rate.ipynb",
            0.8,
            StepError(4, "KitError", "missing.log: no such file", "runs = parse_files(logs)"),
        ),
        StepResult("05_offline_acceptance", Status.SKIPPED, reason="needs --draft and --target"),
    ]
    return Run({"engine": "sglang==0.5.10", "draft": "data/pair/draft"}, steps, 4.2)


def test_verdict_comes_first_with_root_cause_evidence_and_fix(run):
    page = render(run)
    verdict = page.index("<h2>Verdict</h2>")
    assert verdict < page.index("Load-weights simulation</h2>")
    cause = page.index("10 decoder-layer keys dropped silently")
    assert verdict < cause < page.index("<h2>What ran</h2>")
    assert "rename layers.0. to midlayer." in page and "llama_eagle3.py:243" in page
    assert "&lt;script&gt;" in page and "no parameter <script>" not in page  # evidence escaped


def test_a_failed_step_says_what_is_missing(run):
    page = render(run)
    assert "This step did not complete" in page
    assert "missing.log: no such file" in page
    assert "STEP_FAILED" in page  # and it is a finding of the run
    assert "Not run: needs --draft and --target" in page
    assert "No runs to compare" in page


def test_plotly_js_is_embedded_once_and_nothing_is_fetched(run):
    page = render(run)
    assert page.count("<script>/**") == 1  # the plotly.js bundle (licence banner first)
    assert len(re.findall(r'class="plotly-graph-div"', page)) == 1
    assert not re.search(r"<script[^>]+src=", page)  # no CDN, no external file
    assert page.index("<script>/**") < page.index("plotly-graph-div")  # defined before use


def test_parameters_and_tables_are_shown(run):
    page = render(run)
    params = page.index("<h2>Parameters used</h2>")
    assert page.index("data/pair/draft", params) > params
    assert "layers.0.mlp.up_proj.weight" in page


def test_tables_never_widen_the_page(run):
    """Notebooks take different parameters: one row per (notebook, parameter), not a column per
    parameter of any notebook, which widened the page past the window in the demo run."""
    page = render(run)
    section = page[page.index("<h3>Per notebook</h3>") :]
    head = section[: section.index("</thead>")]
    assert re.findall(r"<th[^>]*>(\w+)</th>", head) == ["notebook", "parameter", "value"]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section)
    assert cells[:2] == ["02_load_weights_simulation", "draft"]
    assert "04_acceptance_rate" in cells and "logs" in cells
    assert "05_offline_acceptance" not in section  # skipped: it used no parameters


def test_every_step_says_how_it_ended_in_words(run):
    """The status reads without colour: a marker and the word, then why."""
    page = render(run)
    section = page[page.index("<h2>What ran</h2>") : page.index("Load-weights simulation</h2>")]
    assert "✅ ok" in section and "❌ failed" in section and "⏭️ skipped" in section
    assert "cell In [4] (runs = parse_files(logs)): KitError: missing.log: no such file" in section
    assert "needs --draft and --target" in section


def test_runs_compared_come_from_the_acceptance_records(run):
    run.steps[1] = StepResult(
        "04_acceptance_rate",
        Status.OK,
        records={
            RUNS_TABLE: [{"run": "before.log", "accept len": 1.0}],
            FIXES_TABLE: [{"before": "before.log", "after": "after-rename.log"}],
        },
    )
    page = render(run)
    section = page[page.index("<h2>The runs compared</h2>") :]
    assert "before.log" in section and "No runs to compare" not in section
    assert "after-rename.log" in section and page.count("after-rename.log") == 1


def test_long_root_cause_evidence_is_cut_with_a_count(run):
    many = Finding("FC_BYPASSED", Severity.CRITICAL, "fc bypassed", tuple(f"e{i}" for i in range(12)),
                   root_cause=True)  # fmt: skip
    run.steps[0].records["findings"].append(many.to_dict())
    verdict = render(run).split("<h2>What ran</h2>")[0]
    assert "<li>e7</li>" in verdict and "<li>e8</li>" not in verdict
    assert "… 4 more in the step's findings" in verdict


def test_long_tables_say_how_many_rows_were_left_out():
    rows = [{"key": f"k{i}"} for i in range(75)]
    out = table_html(rows, max_rows=60)
    assert out.count("<tr>") == 61 and "15 more rows" in out


def test_write_replaces_the_page_atomically(run, tmp_path):
    path = write(run, tmp_path / "postmortem.html")
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["postmortem.html"]


def test_findings_of_a_run_are_ranked_and_deduplicated(run):
    run.steps.append(
        StepResult("01_key_inspection", Status.OK, records=to_jsonable({"findings": [INFO]}))
    )
    codes = [f.code for f in run.findings]
    assert codes[0] == "KEYS_SILENTLY_DROPPED"
    assert codes.count("EMBED_REPLACED_BY_TARGET") == 1
    assert json.dumps([f.to_dict() for f in run.findings])


def test_an_engine_check_is_a_section_and_its_loss_a_root_cause(run):
    """`run --engine-check`: the engine build's own section, its loss ranked with the root causes,
    and the run's evidence says the engine was checked (the differential assesses it)."""
    loss = Finding(
        "ENGINE_UNEXPLAINED_LOSS",
        Severity.ERROR,
        "unexplained engine-side loss of 0.17 accept length (4%) in sglang==0.5.10's greedy run",
        root_cause=True,
    )
    assert "The engine build, checked" not in render(run)
    run.inputs["engine_check"] = "engine-check.json"
    run.engine_checked, run.engine_check_applies = [loss], True
    page = render(run)
    assert "The engine build, checked" in page and "engine-check.json" in page
    assert loss in run.findings and run.seen().engine_checked
    assert json.loads(json.dumps(run.to_dict()))["engine_checked"] == [loss.to_dict()]
