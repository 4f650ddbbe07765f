"""Real SGLang servers on the bundled pair, and the kit's predictions for the same runs.

SGLang serves from its own process tree, so each run is a server on 127.0.0.1 started from
the interpreter that has the release (`SGLANG_PYTHON`: interpreters, os.pathsep-separated, as
`make test-engine` sets them; else the Makefile's venvs when they exist), on the CPU with the
kit's stand-ins, driven by `kit.offline_acceptance.sglang_backend` as `offline --backend sglang`
drives it. The kit's rows run here, in the test's own Python, on the same prompts.

Runs are independent servers: `serve_all` starts two at a time (each on one thread: the kit's
measurement is single-threaded too, so the figures repeat), which halves the suite on 2 cores.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from drafts import PROMPTS, TARGET

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-sglang"
DEFAULT_PYTHONS = [
    VENV,
    *(VENV.parent / f"{VENV.name}-{v}" for v in ("0.5.11", "0.5.12", "0.5.23")),
]
PARALLEL = 2
FIRST_FIXED = "sglang==0.5.12"  # sgl-project/sglang PR #25015, "Fix Eagle draft decode positions"


def pythons() -> list[str]:
    given = os.environ.get("SGLANG_PYTHON")
    if given:
        return [p for p in given.split(os.pathsep) if p]
    return [str(v / "bin" / "python") for v in DEFAULT_PYTHONS if (v / "bin" / "python").exists()]


@functools.cache
def release_of(python: str) -> str:
    """`sglang==X` for an interpreter (from its metadata: importing sglang is slow)."""
    ask = "import importlib.metadata as m; print(m.version('sglang'))"
    out = subprocess.run([python, "-c", ask], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{python}: no sglang: {out.stderr[-500:]}"
    return f"sglang=={out.stdout.strip()}"


@functools.cache
def python_for(release: str) -> str | None:
    return next((p for p in pythons() if release_of(p) == release), None)


@dataclass
class Run:
    """One server start on one draft: per-prompt counts and outputs, or its crash."""

    name: str
    release: str
    draft: Path
    k: int
    log: Path
    crash: str | None = None
    result: object = None  # OfflineResult, counted as the release's scheduler counts
    outputs: list[list[int]] = field(default_factory=list)
    watch: Path | None = None
    seconds: float = 0.0

    def measured(self, predicted):
        """The engine's run as a kit row beside `predicted` (same prompts, same settings)."""
        from kit.offline_acceptance import OfflineRow
        from kit.offline_acceptance.result import OfflineResult

        r = self.result
        again = OfflineResult(
            predicted.wiring, predicted.result.settings, r.per_prompt, r.prompts_key
        )
        return OfflineRow(f"measured in {self.release}", predicted.wiring, again)


@dataclass(frozen=True)
class Scenario:
    name: str
    release: str
    draft: Callable[[Path], Path]  # writes the draft into the folder it is given
    k: int = 4
    dtype: str = "float32"
    watch: bool = False


def serve(s: Scenario, out: Path) -> Run:
    """Start the server on the scenario's draft, send every prompt, stop it; what it counted
    and the seconds each part took in run.json beside its log."""
    from kit.offline_acceptance.sglang_backend import EngineCrash, EngineSettings, measure, start

    out.mkdir(parents=True, exist_ok=True)
    draft = s.draft(out / "draft")
    run = Run(s.name, s.release, draft, s.k, out / "sglang.log")
    settings = EngineSettings(
        python=python_for(s.release),
        engine_dtype=s.dtype,
        engine_log=run.log,
        watch_report=out / "kit-watch.json" if s.watch else None,
    )
    run.watch = settings.watch_report
    clock = {"start": time.perf_counter()}
    try:
        with start(TARGET, draft, s.k, 0, settings) as engine:
            clock["ready"] = time.perf_counter()
            run.result = measure(engine, TARGET, PROMPTS, None, k=s.k, progress=False)
            run.outputs = engine.outputs
            clock["served"] = time.perf_counter()
    except EngineCrash as e:
        run.crash = str(e)
    clock["stopped"] = time.perf_counter()
    run.seconds = round(clock["stopped"] - clock["start"], 1)
    seen = {
        "crash": run.crash,
        "seconds": {k: round(v - clock["start"], 1) for k, v in clock.items()},
    }
    if run.result is not None:
        r = run.result
        seen.update(verify_steps=r.verify_steps, accepted=r.accepted, accept_len=r.accept_len)
    (out / "run.json").write_text(json.dumps(seen, indent=1))
    return run


def serve_all(scenarios: list[Scenario], base: Path) -> dict[str, Run]:
    """Every scenario's server, `PARALLEL` at a time."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {s.name: pool.submit(serve, s, base / s.name) for s in scenarios}
        return {name: f.result() for name, f in futures.items()}
