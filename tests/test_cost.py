"""Findings at error carry their cost (kit/cost.py): unmeasured by a replay or a trace, and, when
`doctor` measures the deployment offline on the user's own pair, a severity that follows it.

The control and the fault are the same kind of finding on real trainer exports: ModelOpt's ids
read verbatim by vLLM cost nothing measurable on its export (the real vLLM 0.32.0 agrees:
tests_engine/test_vllm_trainer_exports.py), SpecForge's ids read the same way cost a lot."""

from __future__ import annotations

import json
import shutil

import pytest
from tiny_layouts import DATA

import kit
from kit.cost import COSTED, priced, unmeasured
from kit.findings import Finding, Severity

SAMPLES = DATA / "samples"
TARGET = DATA / "pair" / "target"
RELEASE = "vllm==0.32.0"


def offset(doctor) -> Finding:
    return next(f for f in doctor.findings if f.code == "AUX_LAYER_OFFSET")


def test_a_replay_or_trace_says_the_cost_is_unmeasured():
    mo = SAMPLES / "modelopt-0.47.0"
    f = offset(kit.doctor(mo, target_config=mo / "target", engine=RELEASE))
    assert f.severity is Severity.ERROR and f.data["cost"] == {"measured": False}
    assert any(e.startswith("cost unmeasured") and "--target" in e for e in f.evidence)


def test_only_costed_findings_at_error_are_marked():
    crash = Finding("STARTUP_CRASH", Severity.ERROR, "fails at start-up")
    flag = Finding("TRAINED_FLAG_IGNORED", Severity.WARNING, "a flag")
    assert unmeasured(crash) is crash and unmeasured(flag) is flag
    assert "STARTUP_CRASH" not in COSTED


def _comparison(difference: float, lo: float, hi: float) -> dict:
    return {"a": "healthy", "b": "as deployed", "a_value": 3.0, "b_value": 3.0 + difference,
            "difference": difference, "difference_ci": [lo, hi],
            "beyond_noise": not lo <= 0 <= hi}  # fmt: skip


@pytest.mark.parametrize(
    ("comparison", "severity", "loss"),
    [(_comparison(-0.02, -0.05, 0.01), Severity.WARNING, False),
     (_comparison(-0.9, -1.1, -0.7), Severity.ERROR, True),
     (_comparison(0.04, 0.01, 0.07), Severity.WARNING, False)],
)  # fmt: skip
def test_severity_follows_the_measurement(comparison, severity, loss):
    f = unmeasured(Finding("AUX_LAYER_OFFSET", Severity.ERROR, "off by one", root_cause=True))
    [got] = priced([f], comparison)
    assert got.severity is severity and got.root_cause is loss
    assert got.data["cost"]["loss"] is loss and got.data["cost"]["measured"] is True
    assert not any(e.startswith("cost unmeasured") for e in got.evidence)
    assert got.evidence[-1].startswith("measured offline")


def test_priced_leaves_other_findings_and_no_measurement_alone():
    crash = Finding("STARTUP_CRASH", Severity.ERROR, "fails at start-up")
    assert priced([crash], _comparison(0.0, -0.1, 0.1)) == [crash]
    f = Finding("AUX_LAYER_OFFSET", Severity.ERROR, "off by one")
    assert priced([f], None) == [f]


def test_modelopt_ids_on_vllm_cost_nothing_measurable():
    """The issue's case: ModelOpt's output-of-layer ids read verbatim by vLLM 0.32.0 capture
    one layer early, and on its own export that loses nothing beyond the noise (kit and engine:
    2.053 as written, 2.070 shifted): a warning, with the measurement as evidence."""
    mo = SAMPLES / "modelopt-0.47.0"
    report = kit.doctor(mo, target=TARGET, engine=RELEASE, num_prompts=120)
    f = offset(report)
    assert f.severity is Severity.WARNING and not f.root_cause
    assert f.data["cost"]["measured"] and not f.data["cost"]["loss"]
    assert "no loss beyond the prompts' noise" in f.evidence[-1]
    assert "AUX_LAYER_OFFSET" not in {c.code for c in report.root_causes}


def test_specforge_ids_one_layer_early_cost_a_lot(tmp_path):
    """The fault: SpecForge's export given its trained ids in eagle_config ([1, 3, 4], outputs
    of layers), which vLLM reads as states after 1, 3, 4 layers: the loss is measured, the
    finding stays at error with the figure."""
    draft = tmp_path / "specforge-ids"
    shutil.copytree(SAMPLES / "specforge-0.2.0-sglang", draft)
    cfg = json.loads((draft / "config.json").read_text())
    cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [1, 3, 4]}
    (draft / "config.json").write_text(json.dumps(cfg))
    f = offset(kit.doctor(draft, target=TARGET, engine=RELEASE, num_prompts=120))
    assert f.severity is Severity.ERROR and f.data["cost"]["loss"] is True
    assert "loses acceptance beyond the prompts' noise" in f.evidence[-1]
