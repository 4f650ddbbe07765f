"""`python -m kit offline --backend sglang`, as a user runs it in the Python that has SGLang: the
kit's rows, the engine's row, the verdict on the pair, and SGLang's own log of the run, read back
by `kit acceptance`. On the first release with the draft-position fix (sgl-project/sglang PR
#25015), so the verdict does not hang on that rule; the kit's rows are computed in that venv,
on its torch and transformers."""

from __future__ import annotations

import json
import subprocess

import pytest
from drafts import TARGET
from sglang_drafts import fixed
from sglang_engine import FIRST_FIXED, ROOT, python_for

NEEDS_VLLM = False  # the suite's conftest lets this file run where vLLM is not installed
PYTHON = python_for(FIRST_FIXED)


@pytest.mark.skipif(PYTHON is None, reason=f"no interpreter with {FIRST_FIXED}: make test-engine")
def test_offline_backend_sglang_on_the_bundled_pair(tmp_path):
    draft, log = fixed(tmp_path / "draft", FIRST_FIXED), tmp_path / "sglang.log"
    cmd = [PYTHON, "-m", "kit", "offline", "--target", str(TARGET), "--draft", str(draft),
           "--backend", "sglang", "--k", "4", "--engine-log", str(log), "--json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    healthy, predicted, measured = json.loads(done.stdout)["rows"]  # stdout is the JSON alone
    assert healthy["label"] == "healthy"
    assert predicted["label"].startswith(f"as deployed: {FIRST_FIXED}")
    assert measured["label"] == f"measured in {FIRST_FIXED}"
    assert "CPU with the kit stand-ins" in measured["result"]["settings"]["device"]
    verdict = measured["findings"][0]
    assert verdict["code"] == "OFFLINE_ENGINE_AGREES", verdict
    got, want = measured["result"]["counts"], predicted["result"]["counts"]
    assert abs(got["verify_steps"] - want["verify_steps"]) <= 0.01 * got["verify_steps"]
    assert measured["vs_healthy"]["beyond_noise"] is False

    import kit
    from kit.engines import parse_engine, pick
    from kit.engines.sglang.acceptance import ACCEPT_RATE

    (run,) = kit.analyze_logs([log], engine=FIRST_FIXED).runs  # SGLang's own decode lines
    formula = pick(ACCEPT_RATE, parse_engine(FIRST_FIXED)).value  # accepted over proposed
    assert run.windows
    for w in run.windows:  # each printed rate is the kit's formula of the printed length, D = 5
        assert formula.fits(w.accept_len, w.accept_rate, 5), (w.accept_len, w.accept_rate)
