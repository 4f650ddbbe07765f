"""The engine side of the engine check, run in the engine's own Python:

    python -m kit.engine_check.worker SPEC.json OUT.json

One engine start on the bundled pair with the plan's arguments and environment, then every run
of the spec (greedy, a temperature …) as requests to it, each prompt's counts read from the
engine's own counters. The kit's folder is on PYTHONPATH (`runner.py`), so the engine's Python
needs only what the kit's core imports, not the kit installed.

SPEC: {"engine", "target", "draft", "k", "seed", "prompts" (a JSONL file), "num_prompts",
"engine_args", "env", "setup" (["file.py:function", …], run in this process before the engine
starts: a patch to try, a plugin to load), "log", "runs": {name: measurement options}}.
OUT: {"release", "distribution", "cuda", "crash" (null or {"kind", "message", "stage"}),
"seconds": {"start", name: …}, "runs": {name: {"key", "per_prompt"}}}.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any


def run_setup(hooks: list[str]) -> None:
    """Each `file.py:function` called once, in this process, before the engine starts."""
    for hook in hooks:
        path, _, name = hook.rpartition(":")
        spec = importlib.util.spec_from_file_location(
            f"_engine_check_setup_{Path(path).stem}", path
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        getattr(module, name)()


def vllm_runs(spec: dict[str, Any], out: dict[str, Any], progress: Callable[[], None]) -> None:
    from kit.offline_acceptance import vllm_backend as backend

    out["release"] = backend.installed_release()
    out["distribution"] = (backend.installed_distribution() or ("vllm", ""))[0]
    args = dict(spec["engine_args"])
    settings = backend.EngineSettings(
        engine_dtype=args.pop("dtype", "auto"), engine_log=spec["log"], engine_args=args
    )
    _runs(spec, out, progress, backend, settings)


def sglang_runs(spec: dict[str, Any], out: dict[str, Any], progress: Callable[[], None]) -> None:
    """SGLang's own server (`offline --backend sglang`'s driver), started from this Python."""
    from kit.offline_acceptance import sglang_backend as backend

    out["release"], _ = backend.probe(sys.executable)
    out["distribution"] = "sglang"
    args = spec["engine_args"]
    settings = backend.EngineSettings(
        python=sys.executable, engine_dtype=args.get("dtype", "auto"), engine_log=spec["log"],
        extra_args=tuple(w for words in args["flags"].values() for w in words),
        radix_cache=bool(args.get("radix_cache")),
    )  # fmt: skip
    _runs(spec, out, progress, backend, settings)
    for run in out["runs"].values():  # the request's own histogram, past the stop too
        for c in run["per_prompt"]:  # (`kit.engine_check.sglang.REQUEST_COUNTING`)
            c["accepted"] = sum(c["per_position"])


def _runs(spec: dict[str, Any], out: dict[str, Any], progress: Callable[[], None], backend: Any,
          settings: Any) -> None:  # fmt: skip
    """One engine start, every run of the spec in it; the engine's exception is the crash."""
    from kit.checkpoint.config import load_target_config
    from kit.offline_acceptance.prompts import load_prompts

    vocab = load_target_config(spec["target"]).vocab_size
    prompts = load_prompts(spec["prompts"], vocab)[: spec.get("num_prompts") or None]
    t0 = time.perf_counter()
    progress()
    try:
        with backend.start(spec["target"], spec["draft"], spec["k"], spec["seed"], settings) as e:
            out["seconds"]["start"] = round(time.perf_counter() - t0, 2)
            for name, options in spec["runs"].items():
                out["stage"] = name
                progress()
                r = backend.measure(e, spec["target"], prompts, None, k=spec["k"], **options)
                out["runs"][name] = {
                    "key": r.prompts_key,
                    "per_prompt": [asdict(c) for c in r.per_prompt],
                }
                out["seconds"][name] = r.resources["seconds"]
    except backend.EngineCrash as crash:
        out["crash"] = {"kind": crash.kind, "message": crash.message, "stage": "start-up"}
    except Exception as crash:
        text = str(crash).strip()
        kind, message = type(crash).__name__, text.splitlines()[0] if text else ""
        server = getattr(backend, "startup_crash", None)  # a server's own log names its cause
        if server is not None:  # (a dropped connection is only the client's symptom)
            found = server(Path(spec["log"]))
            if found.kind != "EngineExit":
                kind, message = found.kind, found.message
        out["crash"] = {"kind": kind, "message": message, "stage": out["stage"]}


def cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


RUNNERS = {"vllm": vllm_runs, "sglang": sglang_runs}


def main(spec_path: str, out_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    os.environ.update(spec.get("env") or {})  # before the engine is imported
    out: dict[str, Any] = {"crash": None, "runs": {}, "seconds": {}, "stage": "start-up"}
    run_setup(spec.get("setup") or [])
    out["cuda"] = cuda_available()
    try:
        RUNNERS[spec["engine"]](spec, out, lambda: _write(out, out_path))
    finally:
        _write(out, out_path)


def _write(out: dict[str, Any], path: str) -> None:
    """What is known so far, replaced whole: an engine that kills the process (a signal, an
    abort in a kernel) leaves the stage it died in."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, path)


if __name__ == "__main__":  # an engine that spawns workers re-imports this module: main only here
    main(*sys.argv[1:3])
