"""Broken input through the CLI: one line naming the file and the problem, exit 2, no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_bad import CASES

ROOT = Path(__file__).resolve().parent.parent


def run_inspect(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "kit", "inspect", str(path), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2(case, tmp_path):
    path, problem = CASES[case](tmp_path)
    out = run_inspect(path)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, out.stderr
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert lines[0].startswith(f"error: {path}"), lines[0]  # the file (or one inside it)
    assert problem in lines[0]
    assert out.stdout == ""  # no partial report


@pytest.mark.parametrize("case", ["malicious_torch_zip", "malicious_legacy_pickle"])
def test_malicious_pickle_never_runs(case, tmp_path):
    path, _ = CASES[case](tmp_path)
    # prove the payload is live: a plain unpickle would create the marker
    assert not (tmp_path / "PWNED").exists()
    out = run_inspect(path)
    assert out.returncode == 2
    assert not (tmp_path / "PWNED").exists()


def test_payload_is_live_under_plain_unpickle(tmp_path):
    """The corpus pickle really runs code when unpickled without weights_only (so the test above
    is not vacuous)."""
    import pickle

    path, _ = CASES["malicious_legacy_pickle"](tmp_path)
    pickle.loads(path.read_bytes())
    assert (tmp_path / "PWNED").exists()
