"""`doctor` and `run` with `--engine lmdeploy==X`: the engine-independent verdict and the
postmortem, on the bundled pair as trained and in LMDeploy's form."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.findings import Severity
from kit.load.rewrite import plan_fix, write_fixed
from kit.verdict import diagnose
from tests.conftest import PAIR, ROOT

ENGINE = "lmdeploy==0.18.0"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    ck = open_checkpoint(PAIR / "draft")
    out = tmp_path_factory.mktemp("lmd") / "draft"
    return write_fixed(ck, plan_fix(ck, load_draft_config(PAIR / "draft"), ENGINE), out=out)


def test_speculators_draft_first_root_cause_is_the_refused_config():
    """As trained (speculators format), 0.18.0 stops at configurations/default.py:18: that is the
    first root cause."""
    report = diagnose(PAIR / "draft", target_config=PAIR / "target", engine=ENGINE)
    assert report.root_causes[0].code == "UNSUPPORTED_CONFIG"
    assert "PretrainedConfig" in report.root_causes[0].title


def test_draft_in_lmdeploy_form_has_no_root_cause(fixed):
    """In LMDeploy's form nothing is wrong with the pair: the target is a LlamaForCausalLM, whose
    builder captures (2, 4, 5) (configurations/llama.py:26-28), the layers the draft learnt."""
    report = diagnose(fixed, target_config=PAIR / "target", engine=ENGINE)
    assert report.root_causes == [] and report.facts["fc_applied"] is True
    assert all(f.severity < Severity.ERROR for f in report.findings)
    assert "AUX_IDS_IGNORED" in {f.code for f in report.findings}  # info: ids match


def test_run_writes_a_postmortem(fixed, tmp_path):
    out = tmp_path / "run"
    cli = subprocess.run(
        [sys.executable, "-m", "kit", "run", "--quiet", "--draft", str(fixed), "--target-config",
         str(PAIR / "target"), "--engine", ENGINE, "--out", str(out), "--fail-on", "error"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stdout + cli.stderr
    page = (out / "postmortem.html").read_text(encoding="utf-8")
    assert ENGINE in page
    findings = json.loads((out / "findings.json").read_text())
    assert findings and all(f["engine"] == ENGINE for f in findings if f["engine"])


def test_doctor_outside_the_range_is_exit_2():
    cli = subprocess.run(
        [sys.executable, "-m", "kit", "doctor", "--draft", str(PAIR / "draft"),
         "--engine", "lmdeploy==0.10.2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 2 and "0.11.0 … 0.18.0" in cli.stderr
    assert "Traceback" not in cli.stderr
