"""`python -m kit offline --backend vllm`, as a user runs it: the kit's rows, the engine's row,
the verdict on the pair, and vLLM's own log of the run, read back by `kit acceptance`."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import RELEASE
from drafts import DRAFT, TARGET


def test_offline_backend_vllm_on_the_bundled_pair(tmp_path):
    log = tmp_path / "vllm.log"
    cmd = [sys.executable, "-m", "kit", "offline", "--target", str(TARGET), "--draft", str(DRAFT),
           "--backend", "vllm", "--engine-log", str(log), "--json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    healthy, predicted, measured = json.loads(done.stdout)["rows"]  # stdout is the JSON alone
    assert healthy["label"] == "healthy"
    assert predicted["label"].startswith(f"as deployed: {RELEASE}")
    assert measured["label"] == f"measured in {RELEASE}"
    verdict = measured["findings"][0]
    assert verdict["code"] == "OFFLINE_ENGINE_AGREES", verdict
    got, want = measured["result"]["counts"], predicted["result"]["counts"]
    assert got["drafted"] > 0 and got == want  # float32 greedy: the same counts
    assert measured["vs_healthy"]["beyond_noise"] is False

    import kit

    (run,) = kit.analyze_logs([log]).runs  # vLLM's own SpecDecoding lines of that run
    assert sum(w.accepted for w in run.windows) == got["accepted"]
    assert sum(w.drafted for w in run.windows) == got["drafted"]
