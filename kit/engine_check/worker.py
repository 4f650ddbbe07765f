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
    from kit.checkpoint.config import load_target_config
    from kit.offline_acceptance.prompts import load_prompts
    from kit.offline_acceptance.vllm_backend import (
        EngineCrash,
        EngineSettings,
        installed_distribution,
        installed_release,
        measure,
        start,
    )

    out["release"] = installed_release()
    out["distribution"] = (installed_distribution() or ("vllm", ""))[0]
    vocab = load_target_config(spec["target"]).vocab_size
    prompts = load_prompts(spec["prompts"], vocab)[: spec.get("num_prompts") or None]
    args = dict(spec["engine_args"])
    settings = EngineSettings(
        engine_dtype=args.pop("dtype", "auto"), engine_log=spec["log"], engine_args=args
    )
    t0 = time.perf_counter()
    progress()
    try:
        with start(spec["target"], spec["draft"], spec["k"], spec["seed"], settings) as engine:
            out["seconds"]["start"] = round(time.perf_counter() - t0, 2)
            for name, options in spec["runs"].items():
                out["stage"] = name
                progress()
                r = measure(engine, spec["target"], prompts, None, k=spec["k"], **options)
                out["runs"][name] = {
                    "key": r.prompts_key,
                    "per_prompt": [asdict(c) for c in r.per_prompt],
                }
                out["seconds"][name] = r.resources["seconds"]
    except EngineCrash as e:
        out["crash"] = {"kind": e.kind, "message": e.message, "stage": "start-up"}
    except Exception as e:
        message = str(e).strip().splitlines()[0] if str(e).strip() else ""
        out["crash"] = {"kind": type(e).__name__, "message": message, "stage": out["stage"]}


def cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


RUNNERS = {"vllm": vllm_runs}


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
