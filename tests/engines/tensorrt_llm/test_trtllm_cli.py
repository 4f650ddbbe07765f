"""TensorRT-LLM through the command line: simulate (one release, `all`), fix, doctor, run and the
one-line errors of bad input (exit 2, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tiny_layouts import DATA

from tests.conftest import PAIR

TRT = "tensorrt_llm==1.2.0rc2"
SAMPLE = DATA / "samples" / "speculators-0.9.0-tiny"


def kit(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kit", *args], capture_output=True, text=True, timeout=timeout
    )


def test_matrix_names_the_release_and_what_a_rewrite_would_do():
    """`simulate --engine all`: the speculators sample is refused by TensorRT-LLM as saved, and
    would still fail to load once rewritten (its layers.0.* keys are read by no module)."""
    out = kit("simulate", str(SAMPLE), "--engine", "all", "--json")
    assert out.returncode == 0, out.stderr
    rows = [r for r in json.loads(out.stdout)["matrix"] if r["engine"] == "tensorrt_llm"]
    assert [r["releases"] for r in rows] == [["1.2.0rc2"]]
    assert rows[0]["outcome"] == "refuses config.json"
    assert rows[0]["if_config_rewritten"].startswith("crashes")


def test_fix_then_simulate_loads_cleanly(tmp_path):
    """`fix --for` writes the form the release reads; the simulator then finds no lost key."""
    out = kit("fix", str(SAMPLE), "--for", TRT, "--out", str(tmp_path / "fixed"))
    assert out.returncode == 0, out.stderr
    sim = kit("simulate", str(tmp_path / "fixed"), "--engine", TRT, "--json")
    data = json.loads(sim.stdout)
    assert data["loads_cleanly"] and data["config_refused"] is None


def test_fix_refuses_a_modelopt_multi_layer_draft_in_one_line(tmp_path):
    out = kit(
        "fix", str(DATA / "layouts" / "modelopt-layers"), "--for", TRT, "--out", str(tmp_path)
    )
    assert out.returncode == 2 and "no rename makes every tensor load" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "engine, message",
    [
        ("tensorrt_llm==1.2.0", "outside the supported range 1.2.0rc2"),
        ("tensorrt_llm==v1.2.0rc2", "use tensorrt_llm==1.2.0rc2"),
        ("tensorrt_llm", "has no version"),
    ],
)
def test_bad_release_is_one_line_exit_2(engine, message):
    out = kit("trace", "--draft", str(SAMPLE), "--target-config", str(PAIR / "target"),
              "--engine", engine)  # fmt: skip
    assert out.returncode == 2 and message in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_doctor_ranks_the_refused_config_first():
    out = kit("doctor", "--draft", str(PAIR / "draft"), "--target-config",
              str(PAIR / "target"), "--engine", TRT, "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    findings = json.loads(out.stdout)["findings"]
    assert findings[0]["code"] == "UNSUPPORTED_CONFIG" and findings[0]["root_cause"]
    # the bundled target captures the states the draft was trained on by default
    assert not any(f["code"] in ("AUX_LAYER_OFFSET", "AUX_WIDTH_MISMATCH") for f in findings)


@pytest.mark.slow
def test_run_writes_a_postmortem(tmp_path):
    """`run --engine tensorrt_llm==X`: the notebooks run headless and the postmortem names it."""
    out = kit("run", "--draft", str(PAIR / "draft"), "--target-config",
              str(PAIR / "target"), "--engine", TRT, "--out", str(tmp_path / "run"),
              timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "run" / "postmortem.html").read_text()
    assert TRT in html and "UNSUPPORTED_CONFIG" in html
