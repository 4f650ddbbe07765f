"""The real-engine suite: vLLM 0.32.0 (CPU build) on the bundled pair, against the kit.

Run by `make test-engine` in .venv-vllm/ (never by `make test`). Every engine runs in a process
of its own (`engine_worker.py`), at most one per scenario, shared by the scenarios that differ
only in their requests (greedy, sampled, chat). The kit's predictions run here, on the same
prompts: all 300 of the bundled pair's held-out prompts, k = 5 unless a scenario says otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from drafts import DRAFT, PROMPTS, TARGET  # noqa: E402

RELEASE = "vllm==0.32.0"
ENGINE_TIMEOUT_S = 600


def pytest_collection_modifyitems(session, config, items) -> None:
    """Without vLLM, stop before any test that needs it (every file but those that say
    `NEEDS_VLLM = False`, which bring their own engine), naming the files."""
    if importlib.util.find_spec("vllm") is not None:
        return
    needing = sorted({i.path.name for i in items if getattr(i.module, "NEEDS_VLLM", True)})
    if needing:
        names = ", ".join(needing)
        pytest.exit(f"{names} need vLLM, not importable here: run `make test-engine`", returncode=2)


@dataclass
class EngineRun:
    """What one engine process measured: per run, the counts per prompt; or its crash."""

    release: str
    crash: str | None
    runs: dict
    log: Path

    def measured(self, name: str, predicted):
        """Run `name` as a kit row, beside `predicted` (same prompts, same settings)."""
        from kit.offline_acceptance import OfflineRow
        from kit.offline_acceptance.counts import Counts
        from kit.offline_acceptance.result import OfflineResult

        if self.crash is not None:
            return None
        run = self.runs[name]
        counts = [Counts(**c) for c in run["per_prompt"]]
        result = OfflineResult(predicted.wiring, predicted.result.settings, counts, run["key"])
        return OfflineRow(f"measured in {self.release}", predicted.wiring, result)


def run_engine(
    draft: Path,
    out: Path,
    runs: dict,
    k: int = 5,
    correct_cpu_expand: bool = False,
    target: Path = TARGET,
) -> EngineRun:
    """One engine process on `draft` (and `target`): every run of `runs` ({name: kit options})
    in it; with `correct_cpu_expand`, the CPU build's temperature expansion written as on GPU
    (`engine_worker.correct_cpu_expand`)."""
    out.mkdir(parents=True, exist_ok=True)
    spec = {
        "target": str(target),
        "draft": str(draft),
        "k": k,
        "log": str(out / "vllm.log"),
        "prompts": str(PROMPTS),
        "runs": runs,
        "correct_cpu_expand": correct_cpu_expand,
    }
    (out / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [sys.executable, str(HERE / "engine_worker.py"), out / "spec.json", out / "out.json"],
        capture_output=True,
        text=True,
        timeout=ENGINE_TIMEOUT_S,
    )
    (out / "stderr.txt").write_text(done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads((out / "out.json").read_text())
    return EngineRun(got["release"], got["crash"], got["runs"], out / "vllm.log")


@pytest.fixture(scope="session")
def target():
    from kit.offline_acceptance import load_target

    return load_target(TARGET)


@pytest.fixture(scope="session")
def predict(target):
    """The kit's rows for a draft as vLLM 0.32.0 deploys it, judged against healthy (the
    healthy row measured once per setting)."""
    from kit.offline_acceptance import as_deployed, healthy

    references: dict = {}

    def rows(draft: Path, k: int = 5, **options):
        common = {"prompts": PROMPTS, "target": target, "progress": False, "k": k, **options}
        common["count_as"] = RELEASE
        key = json.dumps({n: v for n, v in common.items() if n != "target"}, default=str)
        if key not in references:
            references[key] = healthy(TARGET, DRAFT, **common)
        return as_deployed(TARGET, draft, RELEASE, against=references[key], **common)

    return rows
