"""The postmortem's "Seen on the real engine": every row names a real-engine test that exists and
asserts that finding, and the page shows the rows behind its own root causes, the healthy runs
for a healthy verdict, and the incident served on real SGLang where its faults are this run's."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kit.engine_check import verdict as engine_verdict
from kit.findings import Finding, Severity
from kit.report import postmortem, real_engine
from kit.report.record import to_jsonable
from kit.report.runs import Run, Status, StepResult

REPO = Path(__file__).resolve().parents[1]
# names a test may use for a code instead of the literal (the engine check's verdict constants)
CONSTANTS = {name: value for name, value in vars(engine_verdict).items() if name.isupper()}


def function_of(node_id: str) -> ast.FunctionDef:
    path, name = node_id.split("::")
    tree = ast.parse((REPO / path).read_text())
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert found, f"{node_id}: no such test"
    return found[0]


def asserted(fn: ast.FunctionDef) -> set[str]:
    """The strings a test's body compares against: literals, and the constants it names."""
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            names.add(n.value)
        elif isinstance(n, ast.Name) and n.id in CONSTANTS:
            names.add(CONSTANTS[n.id])
    return names


@pytest.mark.parametrize(
    ("code", "seen"),
    [(code, s) for code, rows in real_engine.SEEN.items() for s in rows],
    ids=lambda v: v if isinstance(v, str) else v.test.split("::")[-1],
)
def test_each_row_is_a_real_engine_test_that_asserts_its_code(code, seen):
    fn = function_of(seen.test)
    if code != real_engine.HEALTHY:
        assert code in asserted(fn), f"{seen.test} never compares against {code}"


def cause(code: str) -> Finding:
    return Finding(code, Severity.CRITICAL, f"{code} title", root_cause=True)


def run_with(findings: list[Finding], engine: str = "sglang==0.5.10") -> Run:
    step = StepResult(
        "02_load_weights_simulation",
        Status.OK,
        {"engine": engine},
        records=to_jsonable({"findings": findings}),
    )
    return Run({"engine": engine}, [step], 1.0)


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A clone with no incident run yet."""
    monkeypatch.setattr(postmortem, "ROOT", tmp_path)
    return tmp_path


def section(page: str) -> str:
    start = page.index("<h2>Seen on the real engine</h2>")
    return page[start : page.index("</section>", start)]


def test_a_root_cause_shows_the_engines_that_showed_it_and_the_command(root):
    page = section(postmortem.render(run_with([cause("D2T_MISSING")])))
    assert "sglang 0.5.10" in page and "vllm 0.32.0" in page
    assert "python -m pytest tests_engine/test_vllm_scenarios.py::test_no_d2t" in page
    assert "make incident-sglang" not in page  # not one of the incident's faults


def test_the_incident_command_where_its_faults_are_this_runs(root):
    page = section(postmortem.render(run_with([cause("FC_BYPASSED")])))
    assert "make incident-sglang" in page and "accept len: 1.00, accept rate: 0.20" in page


def test_the_incident_on_another_engine_is_not_this_runs_proof(root):
    page = postmortem.render(run_with([cause("FC_BYPASSED")], engine="vllm==0.32.0"))
    assert "make incident-sglang" not in page and "test_aux_capture_off" in section(page)


def test_the_incidents_figures_once_this_clone_ran_it(root):
    record = {
        "engine": "sglang==0.5.10",
        "device": "cpu",
        "reproduced": True,
        "verdict": [{"code": "KEYS_SILENTLY_DROPPED"}, {"code": "FC_BYPASSED"}],
        "runs": {
            "incident": {"decode_lines": ["Decode batch. accept len: 1.00, accept rate: 0.20"]},
            "after kit fix": {"accept_len": 1.6912},
            "after kit fix, aux capture on": {"accept_len": 2.9671},
        },
    }
    path = root / real_engine.INCIDENT_JSON
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    page = section(postmortem.render(run_with([cause("KEYS_SILENTLY_DROPPED")])))
    assert "decode line: <code>accept len: 1.00, accept rate: 0.20</code>" in page
    assert (
        "after kit fix: accept length 1.69" in page and "aux capture on: accept length 2.97" in page
    )
    record["reproduced"] = False  # a run that did not reproduce is not shown as proof
    path.write_text(json.dumps(record))
    page = section(postmortem.render(run_with([cause("KEYS_SILENTLY_DROPPED")])))
    assert "1.69" not in page and "make incident-sglang" in page


def test_a_run_with_no_cause_the_engines_showed_has_no_section(root):
    assert "Seen on the real engine" not in postmortem.render(
        run_with([cause("ROPE_THETA_DIFFERS")])
    )


def test_a_healthy_verdict_shows_the_healthy_runs(root):
    run = run_with([])
    assert run.verdict.healthy
    page = section(postmortem.render(run))
    assert "test_healthy_is_the_kits_prediction_for_the_release" in page
    assert "test_healthy_counts_equal_the_kits" in page and "make incident-sglang" not in page
