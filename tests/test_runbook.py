"""The runbook: plans, parallel steps with dependencies, captured failures, records read back.

These use tiny notebook scripts written into `tmp_path`, so they test the machinery (jupytext,
papermill, kernels, records) in a few seconds; `test_notebooks.py` runs the real notebooks.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from kit.findings import Finding, Severity
from kit.report.record import MIME, read_records, to_jsonable
from kit.report.runbook import ROOT, RunInputs, Step, execute, plan
from kit.report.runs import Run, Status, load_run

pytestmark = pytest.mark.slow  # real kernels; still part of `make test`


def write_notebook(folder: Path, name: str, params: str, body: str) -> None:
    """A percent script as a person writes one: no header, a cell tagged `parameters`."""
    cells = [
        f'# %% tags=["parameters"]\n{params}',
        "# %%\nfrom kit.report.record import record",
        *(f"# %%\n{src}" for src in body.split("\n---\n")),
    ]
    (folder / f"{name}.py").write_text("\n\n".join(cells) + "\n")


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Three steps: two independent (one fails), one fed by a record of the first."""
    src = tmp_path_factory.mktemp("notebooks")
    write_notebook(
        src, "01_key_inspection", "x = 1", "import os\nrecord('answer', x * 7)\n"
        "record('renderer', os.environ.get('PLOTLY_RENDERER'))\n"
        "from kit.report.notebook import watched\nrecord('watched', watched())\n"
        "record('row', {'name': 'fc.weight', 'dtype': 'BF16', 'bytes': 3})\n---\n"
        "import sys\nimport plotly.graph_objects as go\nfrom kit.report.notebook import show\n"
        "fig = go.Figure(go.Bar(x=['fc', 'midlayer'], y=[1, 2]))\nshow(fig)\n"
        "record('nbformat imported', 'nbformat' in sys.modules)\n---\n"
        "import plotly.io as pio\n"
        "record('plotly bundle', pio.renderers._build_mime_bundle(fig.to_dict(), 'plotly_mimetype'))"
    )  # fmt: skip
    write_notebook(
        src, "02_load_weights_simulation", "path = None",
        "y = 2\n---\nz = 1\nopen(path).read()\n---\nrecord('never', True)",
    )  # fmt: skip
    write_notebook(src, "04_acceptance_rate", "expected = None", "record('got', expected)")
    steps = [
        Step("01_key_inspection", {"x": 6}),
        Step("02_load_weights_simulation", {"path": "no/such/file.log"}),
        Step(
            "04_acceptance_rate", {"expected": None}, {"expected": ("01_key_inspection", "answer")}
        ),
    ]
    out = tmp_path_factory.mktemp("run")
    return execute(steps, out, timeout=60, workers=2, progress=False, notebooks=src), out


def test_parameters_reach_the_kernel_and_records_come_back(executed):
    results, out = executed
    first = results[0]
    assert first.status == Status.OK and first.records["answer"] == 42
    assert read_records(out / "01_key_inspection.ipynb")["answer"] == 42


def test_records_keep_their_key_order_through_the_notebook_file(executed):
    """nbformat writes sorted keys; a table's columns must still come back in their order."""
    _, out = executed
    row = read_records(out / "01_key_inspection.ipynb")["row"]
    assert list(row) == ["name", "dtype", "bytes"]


def test_kernels_draw_figures_as_plotly_mime_only(executed):
    """JupyterLab draws plotly's MIME type itself; plotly.js goes into the postmortem, once."""
    assert executed[0][0].records["renderer"] == "plotly_mimetype"


def test_a_headless_figure_is_plotlys_own_bundle_without_nbformat_in_the_kernel(executed):
    """`show(fig)` in a headless kernel displays what plotly's `plotly_mimetype` renderer gives,
    and the kernel never imports nbformat (about a second of its start: jsonschema's IRI
    grammars, python-jsonschema/jsonschema#1428)."""
    results, out = executed
    assert results[0].records["nbformat imported"] is False
    nb = nbformat.read(out / "01_key_inspection.ipynb", as_version=4)
    [shown] = [o.data for c in nb.cells for o in c.get("outputs", [])
               if "application/vnd.plotly.v1+json" in o.get("data", {})]  # fmt: skip
    assert shown == results[0].records["plotly bundle"]


def test_nobody_watches_a_headless_kernel(executed, monkeypatch):
    """Progress bars are widgets: a headless kernel shows none (they would sit in the executed
    copy, drawing nothing); JupyterLab's kernels, without the run's environment, show them."""
    from kit.report.notebook import HEADLESS, watched

    assert executed[0][0].records["watched"] is False
    monkeypatch.delenv(HEADLESS, raising=False)
    assert watched() is True


def test_a_step_takes_a_record_of_the_step_it_needs(executed):
    assert executed[0][2].records["got"] == 42


def test_a_failure_names_the_cell_and_the_error_and_the_others_still_run(executed):
    results, out = executed
    failed = results[1]
    assert failed.status == Status.FAILED
    assert failed.error.ename == "FileNotFoundError"
    assert "no/such/file.log" in failed.error.evalue
    # In [5]: parameters, injected parameters, import, `y = 2`, then the failing cell
    assert failed.error.cell == 5
    assert failed.error.source == "open(path).read()"  # the line that raised, not the first
    assert "never" not in failed.records  # later cells did not run
    assert (out / "02_load_weights_simulation.ipynb").is_file()  # the traceback is kept
    assert [r.status for r in results] == [Status.OK, Status.FAILED, Status.OK]


def test_a_cell_timeout_is_a_step_failure(tmp_path):
    write_notebook(tmp_path, "01_key_inspection", "x = 1", "import time\ntime.sleep(30)")
    [result] = execute(
        [Step("01_key_inspection", {})], tmp_path / "out", timeout=2, progress=False,
        notebooks=tmp_path,
    )  # fmt: skip
    assert result.status == Status.FAILED
    assert "Timeout" in result.error.ename


def test_plan_of_the_bundled_incident_runs_what_the_team_held():
    """The team held a checkpoint, configs, a launch line and logs; no target that runs here,
    so offline acceptance is skipped with the input it needs, and nothing else is."""
    steps, skipped = plan(RunInputs.bundled_incident())
    assert [(s.name, s.reason) for s in skipped] == [
        ("05_offline_acceptance", "needs --target (a transformers target folder)")
    ]
    names = {s.name for s in steps}
    assert names == {
        "01_key_inspection",
        "02_load_weights_simulation",
        "03_hidden_state_tracing",
        "04_acceptance_rate",
        "06_deployment_check",
    }
    deployment = next(s for s in steps if s.name == "06_deployment_check")
    assert deployment.params["launch"] == "data/incident/launch.sh"  # the incident's server line
    for step in steps:  # the kernel runs in the repository root: paths resolve from there,
        for key in ("draft", "target", "target_config"):  # and bundled ones stay relative
            if step.params.get(key):
                assert not Path(step.params[key]).is_absolute()
                assert (ROOT / step.params[key]).exists()


def test_the_bundled_incident_gives_nothing_away():
    """No release, no aux capture, no chain length: what the team held, nothing more."""
    inputs = RunInputs.bundled_incident()
    assert inputs.engine is None and inputs.aux_capture is None
    assert inputs.num_draft_tokens is None and inputs.target is None
    assert (inputs.draft / "model.safetensors").is_file()  # the checkpoint their trainer wrote


def test_the_run_judges_by_the_release_the_evidence_gives():
    from kit.report.runbook import with_release

    inputs, choice = with_release(RunInputs.bundled_incident())
    assert inputs.engine == "sglang==0.5.10" and choice.basis == "evidence"
    given, chosen = with_release(RunInputs(engine="sglang==0.5.12").with_bundled_incident())
    assert given.engine == "sglang==0.5.12" and chosen.basis == "given"


def test_paths_outside_the_repository_reach_the_kernel_absolute(tmp_path, sample_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps, _ = plan(RunInputs(draft=Path("..") / tmp_path.name / "nowhere", engine=None))
    assert Path(steps[0].params["draft"]).is_absolute()


def test_plan_skips_what_the_inputs_do_not_allow(sample_dir):
    steps, skipped = plan(RunInputs(draft=sample_dir))
    assert [s.name for s in steps] == ["01_key_inspection", "02_load_weights_simulation"]
    reasons = {s.name: s.reason for s in skipped}
    assert "--log" in reasons["04_acceptance_rate"]
    assert "--target" in reasons["05_offline_acceptance"]


def test_run_summary_round_trips(tmp_path, executed):
    results, out = executed
    run = Run({"engine": "sglang==0.5.10"}, results, 3.0)
    (out / "run.json").write_text(json.dumps(run.to_dict()))
    back = load_run(out)
    assert [s.status for s in back.steps] == [Status.OK, Status.FAILED, Status.OK]
    assert back.steps[0].records["answer"] == 42  # read again from the executed notebook
    assert back.steps[1].error == results[1].error
    [failure] = back.failures()
    assert failure.code == "STEP_FAILED" and "no/such/file.log" in failure.title


def test_load_run_of_a_folder_without_a_run_is_a_clear_error(tmp_path):
    from kit.errors import KitError

    with pytest.raises(KitError, match="no run here"):
        load_run(tmp_path)


def test_records_turn_kit_and_array_values_into_json():
    f = Finding("FC_BYPASSED", Severity.CRITICAL, "fc bypassed", ("width 7168",), root_cause=True)
    fig = go.Figure(go.Bar(x=np.arange(3), y=np.array([1.0, 2.0, 3.0])))
    value = to_jsonable(
        {"finding": f, "fig": fig, "t": torch.tensor([1, 2]), "n": np.float32(0.5), "p": Path("a")}
    )
    assert value["finding"]["severity"] == "critical" and value["finding"]["root_cause"] is True
    assert value["fig"]["data"][0]["type"] == "bar"
    assert value["t"] == [1, 2] and value["n"] == 0.5 and value["p"] == "a"
    json.dumps(value)  # plain JSON all the way down
    assert Finding.from_dict(value["finding"]) == f


def test_read_records_ignores_other_outputs_and_keeps_the_last():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [
        nbformat.v4.new_output("display_data", {"text/plain": "x"}),
        nbformat.v4.new_output("display_data", {MIME: {"name": "a", "json": "1"}}),
        nbformat.v4.new_output("display_data", {MIME: {"name": "a", "json": "2"}}),
    ]
    nb.cells = [cell]
    assert read_records(nb) == {"a": 2}


def test_the_bundled_incident_keeps_the_options_given():
    """`python -m kit run --engine sglang==0.5.12`: the incident's data, judged on 0.5.12."""
    inputs = RunInputs(engine="sglang==0.5.12", k=3).with_bundled_incident()
    assert inputs.engine == "sglang==0.5.12" and inputs.k == 3
    assert len(inputs.logs) == 3
    assert all(p.is_file() for p in [*inputs.logs, inputs.baseline_log])


def test_offline_chain_matches_the_deployment():
    """A topk=1 chain of D draft tokens drafts D - 1 per step, so the offline expectation is
    measured at that k and not above the server's cap of D accepted per step."""
    assert RunInputs(num_draft_tokens=5).chain_length == 4
    assert RunInputs(num_draft_tokens=8).chain_length == 7
    assert RunInputs().chain_length == 5 and RunInputs(k=3, num_draft_tokens=8).chain_length == 3


def test_bundled_inputs_name_no_machine_path():
    """The postmortem is shared: the bundled incident's inputs read `data/…`, wherever the
    repository was cloned, as the notebooks' own parameters do."""
    d = RunInputs.bundled_incident().to_dict()
    paths = [d[k] for k in ("draft", "target_config", "baseline_log", "launch")]
    assert all(p.startswith("data/") for p in paths + d["logs"]), d


def test_the_executed_copy_is_a_plain_notebook(executed):
    """Run from the script, written as .ipynb: no jupytext pairing, so opening the copy in
    JupyterLab can never write over the source script."""
    _, out = executed
    nb = nbformat.read(out / "01_key_inspection.ipynb", as_version=4)
    assert "jupytext" not in nb.metadata
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert ["parameters"] in tags and ["injected-parameters"] in tags


def test_a_missing_script_is_a_failed_step_naming_it(tmp_path):
    [result] = execute(
        [Step("01_key_inspection", {})], tmp_path / "out", progress=False, notebooks=tmp_path
    )
    assert result.status == Status.FAILED and result.error.ename == "KitError"
    assert str(tmp_path / "01_key_inspection.py") in result.error.evalue
    assert "cannot read the notebook script" in result.error.evalue


def test_plan_wires_launch_and_probe_into_their_notebooks(sample_dir):
    """`run --launch` adds the deployment check; `run --probe URL` makes notebook 4 read a live
    server even without logs; a launch line given as text reaches the notebook as text."""
    line = 'vllm serve m --speculative-config \'{"method": "eagle3"}\''
    steps, skipped = plan(RunInputs(launch=line, probe="http://127.0.0.1:1", engine="vllm==0.11.2"))
    by_name = {s.name: s for s in steps}
    assert by_name["06_deployment_check"].params["launch"] == line
    assert by_name["04_acceptance_rate"].params["probe_url"] == "http://127.0.0.1:1"
    assert by_name["04_acceptance_rate"].params["logs"] == []
    reasons = {s.name: s.reason for s in skipped}
    assert reasons["01_key_inspection"] == "no --draft given"
    steps, skipped = plan(RunInputs(draft=sample_dir))
    assert "06_deployment_check" in {s.name for s in skipped}


def test_kernels_start_in_the_repository_and_the_caller_keeps_its_directory(tmp_path, monkeypatch):
    """Two notebooks at once, called from elsewhere: each kernel runs in the repository root
    (relative data paths resolve), and the caller's working directory is never changed (papermill's
    `cwd` would chdir the whole process under the other thread's feet)."""
    from kit.report.notebook import ROOT

    src = tmp_path / "notebooks"
    src.mkdir()
    for name in ("01_key_inspection", "04_acceptance_rate"):
        write_notebook(
            src, name, "x = 1", "import os, time\ntime.sleep(1)\nrecord('cwd', os.getcwd())"
        )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    steps = [Step("01_key_inspection", {}), Step("04_acceptance_rate", {})]
    results = execute(steps, tmp_path / "out", timeout=60, workers=2, progress=False, notebooks=src)
    assert [r.records["cwd"] for r in results] == [str(ROOT), str(ROOT)]
    assert Path.cwd() == elsewhere
