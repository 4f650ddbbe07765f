"""The incident reproduced on real SGLang 0.5.10 by its documented command (README, "The real
engine"), as a user runs it: SGLang's own `accept len: 1.00, accept rate: 0.20`, then the kit's
verdict on that log and draft, then the engine after `kit fix` and with aux capture on."""

from __future__ import annotations

import json
import subprocess

import pytest
from sglang_engine import ROOT, python_for

NEEDS_VLLM = False  # the suite's conftest lets this file run where vLLM is not installed
PYTHON = python_for("sglang==0.5.10")


@pytest.mark.skipif(PYTHON is None, reason="no interpreter with sglang==0.5.10: make test-engine")
def test_the_incident_command_shows_the_engine_then_the_verdict_then_the_fix(tmp_path):
    from kit.offline_acceptance.sglang_incident import FAULTS, INCIDENT_LINE

    cmd = [PYTHON, "-m", "kit.offline_acceptance.sglang_incident", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    out = done.stdout
    engine, verdict, fixed = out.index("1. "), out.index("2. "), out.index("3. ")
    assert engine < out.index(INCIDENT_LINE) < verdict < fixed  # SGLang's own line, first
    for code in FAULTS:
        assert verdict < out.index(f"{code}: ") < fixed
    result = json.loads((tmp_path / "incident.json").read_text())
    runs = result["runs"]
    assert result["reproduced"] and runs["incident"]["accept_len"] < 1.05
    after_fix, aux_on = runs["after kit fix"], runs["after kit fix, aux capture on"]
    assert 1.3 < after_fix["accept_len"] < aux_on["accept_len"]  # fc bypassed, then healthy
    assert INCIDENT_LINE not in " ".join(aux_on["decode_lines"])
