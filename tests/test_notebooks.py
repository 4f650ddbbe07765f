"""The notebooks: percent scripts, parameterised like `make demo`, executed headless on the incident.

One run of every notebook (module-scoped, as `python -m kit run` does it) serves all the assertions
on recorded results; a failed notebook fails its tests with the notebook, the cell and the error.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from kit.report.notebook import NOTEBOOKS, ROOT, read_script, script_path
from kit.report.runbook import (
    RunInputs,
    Step,
    execute,
    execute_notebook,
    plan,
    run,
    with_release,
)
from kit.report.runs import TITLES, Run, Status, StepResult

pytestmark = pytest.mark.slow  # real kernels; still part of `make test`

EXPECTED = [*TITLES, "postmortem"]
SCRIPTS = sorted(NOTEBOOKS.glob("*.py"))
INCIDENT_LOGS = RunInputs.bundled_incident().logs
# the bundled pair, its offline acceptance feeding the incident logs' expectation: notebooks 4 and
# 5 in one run (the incident's own target cannot run here, so the demo skips notebook 5)
PAIR_RUN = RunInputs(
    draft=ROOT / "data/pair/draft", target=ROOT / "data/pair/target", logs=list(INCIDENT_LOGS),
    num_prompts=40,
)  # fmt: skip
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def defaults(name: str) -> dict:
    """The values a notebook's parameters cell assigns (literals, as papermill requires)."""
    [cell] = [
        c
        for c in read_script(script_path(name)).cells
        if "parameters" in c.metadata.get("tags", [])
    ]
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in ast.parse(cell.source).body
        if isinstance(node, ast.Assign)
    }


def test_every_step_has_its_notebook_script():
    assert {p.stem for p in SCRIPTS} >= set(EXPECTED)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_one_parameters_cell_with_interactive_off(path):
    nb = read_script(path)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged parameters"
    assert re.search(r"^interactive = False\b", tagged[0].source, re.M)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    # widgets only behind `if interactive:` so a headless run never waits on one
    for cell in nb.cells:
        if "ipywidgets" in cell.source:
            assert cell.source.startswith("if interactive:"), f"{path.name}: widgets outside"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_every_notebook_can_be_explored(path):
    """`interactive = True` gives each notebook a widget cell (notebook 5 had none)."""
    assert any(c.source.startswith("if interactive:") for c in read_script(path).cells)


def _planned(inputs: RunInputs) -> list[Step]:
    return plan(with_release(inputs)[0])[0]


@pytest.mark.parametrize("name", list(TITLES))
def test_defaults_are_what_make_demo_passes(name):
    """Opened in JupyterLab, a notebook measures what `make demo` measures: same parameters,
    so the same numbers as the postmortem. Notebook 5, which the demo skips (the incident's
    target cannot run here), defaults to what a run on the bundled pair passes it."""
    steps = _planned(RunInputs.bundled_incident()) + _planned(PAIR_RUN)
    step = next(s for s in steps if s.name == name)
    own = defaults(name)
    passed = {k: v for k, v in step.params.items() if k not in step.needs}
    if name == "05_offline_acceptance":
        passed = {k: v.removeprefix(f"{ROOT}/") if isinstance(v, str) else v
                  for k, v in passed.items()}  # fmt: skip
    assert {k: own[k] for k in passed} == passed
    assert set(own) == {*step.params, "interactive"}


def ok(result: Run, name: str):
    step = result.step(name)
    assert step is not None, f"{name} was not part of the run"
    if step.status != Status.OK:
        pytest.fail(f"notebook {name} {step.status}: {step.error or step.reason}")
    return step


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> tuple[Run, Path]:
    """Every notebook on the bundled incident, as `make demo` runs them."""
    out = tmp_path_factory.mktemp("demo")
    return run(RunInputs.bundled_incident(), out, timeout=300, progress=False), out


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Run, Path]:
    """The bundled pair's offline acceptance feeding the logs' expectation (notebooks 4 and 5)."""
    out = tmp_path_factory.mktemp("pair")
    return run(PAIR_RUN, out, timeout=300, progress=False), out


def _ran(result: Run) -> list[StepResult]:
    return [s for s in result.steps if s.status != Status.SKIPPED]


def _outputs(notebook: Path, mime: str) -> list[dict]:
    nb = nbformat.read(notebook, as_version=4)
    return [
        o["data"][mime] for c in nb.cells for o in c.get("outputs", []) if mime in o.get("data", {})
    ]


def test_key_inspection_records_the_keys(incident):
    records = ok(incident[0], "01_key_inspection").records
    assert records["summary"]["format"].startswith("speculators")
    keys = [row["name"] for row in records["table:keys"]]
    assert any(k.startswith("layers.0.") for k in keys)
    assert records["fig:tensors by module"]["data"][0]["type"] == "treemap"


def test_load_simulation_finds_the_dropped_decoder_layer(incident):
    run, _ = incident
    records = ok(run, "02_load_weights_simulation").records
    # the notebook alone: SGLang refuses the speculators config as saved (first root cause);
    # the dropped decoder layer holds once config.json is rewritten
    codes = [f["code"] for f in records["findings"]]
    assert codes[0] == "UNSUPPORTED_CONFIG" and "KEYS_SILENTLY_DROPPED" in codes
    # the run's verdict: the logs prove the server ran, so the keys are judged as served
    verdict = {f.code: f for f in run.findings}
    assert verdict["KEYS_SILENTLY_DROPPED"].root_cause and "CONFIG_NOT_SERVED" in verdict
    assert "UNSUPPORTED_CONFIG" not in verdict
    assert records["summary"]["keys dropped silently"] > 0
    rows = records["release matrix"]

    def row_of(engine, version):
        return next(r for r in rows if r["engine"] == engine and version in r["releases"])

    assert row_of("sglang", "0.5.10")["dropped silently"] == 10
    assert row_of("sglang", "0.5.12")["dropped silently"] == 0
    assert row_of("sglang", "0.5.12")["outcome"] == "refuses config.json"
    assert row_of("vllm", "0.11.2")["outcome"] == "loads fully"  # every engine is in the matrix
    shown = {r["releases"]: r for r in records["table:across releases"]}  # what a reader sees
    assert shown["sglang 0.4.9 … 0.5.11"]["keys dropped silently"] == 10
    assert all(isinstance(v, str | int) for r in shown.values() for v in r.values())


def test_tracing_predicts_and_the_verdict_does_not_claim(incident):
    """SGLang refuses the speculators config as saved, so the trace shows the data path under the
    config `kit fix` writes (fc runs, 3 × 7168 wide) and says so; the run's verdict leaves the
    data path unverified, the leading suspect, with `kit watch` on the launch line to settle it."""
    result, _ = incident
    records = ok(result, "03_hidden_state_tracing").records
    assert records["summary"]["fc_applied"] is True
    assert records["summary"]["hidden_width"] == 3 * 7168
    assert any(f["code"] == "TRACED_AS_REWRITTEN" for f in records["findings"])
    assert "fig:data path as deployed" in records
    lead = result.differential.leading
    assert (
        lead.cause.key == "data_path" and "kit watch -- sh data/incident/launch.sh" in lead.settle
    )


def test_offline_acceptance_sets_the_expectation(pair):
    """Healthy and as deployed (the pair's speculators keys on the release the logs give) with
    their intervals, then the what-if section apart: each fault and each fix on its own."""
    result, _ = pair
    assert result.inputs["engine"] == "sglang==0.5.10"  # from the incident logs
    records = ok(result, "05_offline_acceptance").records
    healthy, deployed = records["table:wirings"]
    assert healthy["wiring"] == "healthy" and "sglang==0.5.10" in deployed["wiring"]
    assert deployed["95% interval"][1] < healthy["95% interval"][0]  # beyond the noise
    assert records["expected_accept_len"] == pytest.approx(healthy["accept len"], abs=5e-4)
    lo, hi = records["expected_accept_len_ci"]
    assert lo < records["expected_accept_len"] < hi
    what_if = {row["wiring"]: row for row in records["table:what-if"]}
    both = next(v for w, v in what_if.items() if "after kit fix" in w and "capture on" in w)
    # both fixes: healthy again once the draft steps run where trained; sglang 0.5.10 runs them
    # one position late, which keeps its own figure below (DRAFT_POSITIONS_LATE)
    assert both["steps where trained"] == healthy["accept len"]
    assert both["accept len"] < healthy["accept len"] and healthy["steps where trained"] is None


def test_acceptance_takes_the_offline_expectation_and_compares_runs(pair):
    result, out = pair
    step = ok(result, "04_acceptance_rate")
    expected = result.step("05_offline_acceptance").records["expected_accept_len"]
    assert step.params["expected_accept_len"] == expected  # fed from notebook 5
    [figure] = _outputs(out / step.notebook, PLOTLY_MIME)[:1]
    lines = [s for s in figure["layout"].get("shapes", []) if s.get("y0") == expected]
    assert len(lines) == 1, "the offline expectation is drawn in the accept length chart"
    runs = {row["run"]: row for row in step.records["table:runs compared"]}
    assert runs["before.log"]["accept len"] == pytest.approx(1.0)
    assert runs["after-both-fixes.log"]["accept len"] > 1.5
    assert any(f["code"] == "ZERO_ACCEPTANCE" for f in step.records["findings"])


def test_postmortem_names_the_key_drop_and_the_leading_suspect(incident):
    result, out = incident
    findings = json.loads((out / "findings.json").read_text())
    causes = [f["code"] for f in findings if f["root_cause"]]
    assert "KEYS_SILENTLY_DROPPED" in causes and "FC_BYPASSED" not in causes  # found, not given
    assert [f["code"] for f in findings[: len(causes)]] == causes
    page = (out / "postmortem.html").read_text(encoding="utf-8")
    verdict = page[page.index("<h2>Verdict</h2>") : page.index("<h2>What ran</h2>")]
    assert (
        "Judged as <code>sglang==0.5.10</code>, the newest release the evidence allows" in verdict
    )
    assert "KEYS_SILENTLY_DROPPED" in verdict and "Leading remaining suspect" in verdict
    assert "python -m kit watch -- sh data/incident/launch.sh" in verdict
    assert verdict.index("Leading remaining suspect") < verdict.index(
        "KEYS_SILENTLY_DROPPED</code></h3>"
    )
    assert "CKPT" not in verdict  # every fix on the user's own paths
    figures = sum(k.startswith("fig:") for s in result.steps for k in s.records)
    symptom = page.index("<h3>The symptom</h3>")  # the served accept length, in the verdict
    assert page.index("plotly-graph-div", symptom) < page.index("<h2>What ran</h2>")
    assert page.count('class="plotly-graph-div"') == figures + 1 >= 6
    assert page.count("<script>/**") == 1  # plotly.js once, inline


def test_no_widgets_unless_interactive(incident):
    """With `interactive = False` no cell leaves a widget (a library's loading bar is one): the
    executed copies hold nothing that needs a live kernel to draw."""
    result, out = incident
    for step in _ran(result):
        assert not _outputs(out / ok(result, step.name).notebook, WIDGET_MIME), step.name


def test_executed_notebooks_carry_their_figures_not_plotly_js(incident):
    """JupyterLab draws plotly's MIME type itself: an executed notebook is its figures and
    tables (tens of KB), not a 5 MB copy of plotly.js; the postmortem embeds it once."""
    result, out = incident
    for step in _ran(result):
        notebook = out / ok(result, step.name).notebook
        figures = sum(name.startswith("fig:") for name in step.records)
        assert len(_outputs(notebook, PLOTLY_MIME)) == figures, step.name
        assert not any("Plotly" in html for html in _outputs(notebook, "text/html"))
        assert notebook.stat().st_size < 1_000_000, f"{step.name}: {notebook.stat().st_size} B"


def test_findings_in_a_notebook_read_without_colour(incident):
    """Colours go when an executed copy is opened untrusted; the severity marker stays."""
    result, out = incident
    tables = _outputs(out / ok(result, "02_load_weights_simulation").notebook, "text/html")
    findings = next(t for t in tables if "KEYS_SILENTLY_DROPPED" in t)
    assert "✖ critical" in findings and 'data-label="fix"' in findings


def test_without_an_expectation_notebook_4_says_so_and_draws_none(tmp_path):
    executed = tmp_path / "04.ipynb"
    error = execute_notebook(
        script_path("04_acceptance_rate"), executed, {"expected_accept_len": None}, timeout=60
    )
    assert error is None, f"failed at {error}"
    figure = _outputs(executed, PLOTLY_MIME)[0]
    labels = [a.get("text", "") for a in figure["layout"].get("annotations", [])]
    assert not any("expected" in label for label in labels), labels
    notes = _outputs(executed, "text/markdown")
    assert any("No expectation line" in note for note in notes), notes


def test_a_wrong_path_is_one_clear_line(tmp_path):
    """A typo in a parameter: the kit's one-line error, with the cell line that raised, not a
    traceback through the library; the notebook still stops there and the run says where."""
    executed = tmp_path / "01.ipynb"
    error = execute_notebook(
        script_path("01_key_inspection"), executed, {"draft": "no/such/draft"}, timeout=60
    )
    assert error.ename == "KitError" and "no/such/draft" in error.evalue
    assert error.source == "report = inspect_checkpoint(draft)"
    [shown] = [o for c in nbformat.read(executed, as_version=4).cells for o in c.get("outputs", [])
               if o.output_type == "error"]  # fmt: skip
    assert len(shown.traceback) == 1 and "\n" not in shown.traceback[0]
    assert re.search(r"KitError.*no/such/draft.*\(Cell In\[\d+\], line 1\)", shown.traceback[0])


def test_figures_fit_the_notebook_width(incident):
    """JupyterLab cuts a figure wider than the output area off at its edge, without a scrollbar:
    every figure takes the width it is given."""
    for step in incident[0].steps:
        for name, figure in step.records.items():
            if name.startswith("fig:"):
                width = figure["layout"].get("width")
                assert width is None, f"{step.name} {name}: fixed width {width}"


def test_postmortem_notebook_reads_the_run_back(incident, tmp_path):
    """Its figures, the symptom included, are plotly's own MIME type: no plotly.js in the page."""
    result, out = incident
    from kit.report.record import read_records

    executed = tmp_path / "postmortem.ipynb"
    error = execute_notebook(
        script_path("postmortem"), executed, {"run_dir": str(out)}, timeout=120
    )
    assert error is None, f"postmortem notebook failed at {error}"
    records = read_records(executed)
    assert {f["code"] for f in records["verdict"]} == {
        f.code for f in result.findings if f.root_cause
    }
    assert set(records["steps"].values()) == {Status.OK, Status.SKIPPED}
    figures = sum(k.startswith("fig:") for s in result.steps for k in s.records)
    assert len(_outputs(executed, PLOTLY_MIME)) == figures + 1  # every figure and the symptom
    assert executed.stat().st_size < 1_000_000


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kit", "run", "--quiet", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_a_missing_input_is_one_clear_error_and_writes_nothing(sample_dir, tmp_path):
    """A mistyped log path stops the run before any kernel starts: one line naming the file,
    exit 2, no run folder (a notebook failing on it would look like a finding of the run)."""
    out = tmp_path / "run"
    missing = tmp_path / "missing.log"
    cli = _cli("--draft", str(sample_dir), "--log", str(missing), "--out", str(out))
    assert cli.returncode == 2
    assert cli.stderr == f"error: {missing}: no such file or directory\n"
    assert not out.exists()


def test_the_gate_passes_below_its_threshold(sample_dir, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "05_offline_acceptance.ipynb").write_text("{}")  # left by an earlier run
    cli = _cli("--draft", str(sample_dir), "--engine", "vllm==0.11.0", "--out", str(out),
               "--fail-on", "critical")  # fmt: skip
    findings = json.loads((out / "findings.json").read_text())
    assert findings and all(f["severity"] != "critical" for f in findings)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert not (out / "05_offline_acceptance.ipynb").exists()  # skipped now: stale copy gone


@pytest.fixture(scope="module")
def sampled_chat(tmp_path_factory) -> tuple[StepResult, Path]:
    """Notebook 5 as `run --temperature 0.8 --prompt-format chat` plans it, with its widgets on:
    one offline run (the target loaded in its kernel) for the sampling and the widget tests."""
    inputs = RunInputs(
        draft=ROOT / "data/pair/draft", target=ROOT / "data/pair/target",
        engine="sglang==0.5.12", k=2, num_prompts=8, temperature=0.8, top_p=0.95, seed=3,
        prompt_format="chat",
    )  # fmt: skip
    [step] = [s for s in plan(inputs)[0] if s.name == "05_offline_acceptance"]
    out = tmp_path_factory.mktemp("sampled-chat")
    [result] = execute([replace(step, params=step.params | {"interactive": True})], out,
                       timeout=300, progress=False)  # fmt: skip
    return result, out / result.notebook


def test_widgets_run_headless_without_waiting(sample_dir, sampled_chat, tmp_path):
    """`interactive = True` builds the widgets (filter, run selector) and still completes."""
    logs = [str(p) for p in INCIDENT_LOGS]
    steps = [
        Step("01_key_inspection", {"draft": str(sample_dir), "interactive": True}),
        Step("04_acceptance_rate", {"logs": logs, "baseline": None, "interactive": True}),
        Step("06_deployment_check", {"interactive": True}),
    ]
    executed = [
        (r, tmp_path / r.notebook) for r in execute(steps, tmp_path, timeout=120, progress=False)
    ]
    for result, notebook in [*executed, sampled_chat]:
        assert result.status == Status.OK, f"{result.name} failed at {result.error}"
        assert _outputs(notebook, WIDGET_MIME), f"{result.name}: no widget"
    release = _dropdown(tmp_path / "06_deployment_check.ipynb", "release")
    assert release == defaults("06_deployment_check")["engine"].partition("==")[2]


def _dropdown(notebook: Path, description: str) -> str:
    """The label a dropdown of an executed notebook shows, from the widget state it saved."""
    meta = nbformat.read(notebook, as_version=4).metadata
    models = meta["widgets"]["application/vnd.jupyter.widget-state+json"]["state"].values()
    [state] = [m["state"] for m in models if m["state"].get("description") == description]
    return state["_options_labels"][state["index"]]


def test_run_probe_reads_a_live_server_beside_the_expectation(tmp_path):
    """`run --probe URL`: notebook 4 asks a live (SGLang-shaped, on 127.0.0.1) server for its
    figures and settings and judges zero acceptance, with no log at all."""
    from engine_servers import SGLang, serve

    with serve(SGLang(accepted=0.0).routes()) as url:
        result = run(
            RunInputs(probe=url, probe_interval=0.1, engine="sglang==0.5.10"),
            tmp_path / "out", timeout=120, progress=False,
        )  # fmt: skip
    records = ok(result, "04_acceptance_rate").records
    rows = records["table:live server"]
    assert rows and all(r["accept len (mean)"] == 1.0 for r in rows if r["accept len (mean)"])
    codes = {f["code"] for f in records["findings"]}
    assert "ZERO_ACCEPTANCE" in codes or "NEAR_ZERO_ACCEPTANCE" in codes


def test_run_measures_offline_as_a_sampling_chat_server_when_asked(sampled_chat):
    """`run --temperature 0.8 --prompt-format chat`: notebook 5 verifies by speculative sampling
    on chat-rendered prompts, says so, and its findings' evidence says so too."""
    result = sampled_chat[0]
    assert result.status == Status.OK, result.error
    summary = result.records["summary"]
    assert summary["verification"] == "sampled, temperature 0.8, top-p 0.95, seed 3"
    assert summary["prompts"] == "8 chat"
