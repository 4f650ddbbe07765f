"""One vLLM engine on one draft, measured under several settings: run as a script, so each engine
has a process of its own (vLLM keeps process-wide state) and several scenarios share one start.

    python engine_worker.py SPEC.json OUT.json

SPEC: {"target", "draft", "k", "log", "prompts" (a JSONL file), "runs": {name: options}}.
OUT: {"release", "crash": null or "Kind: message", "runs": {name: {"key", "per_prompt"}}}, each
prompt's counts as vLLM's own counters gave them (`kit.offline_acceptance.vllm_backend`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict


def main(spec_path: str, out_path: str) -> None:
    from kit.offline_acceptance.vllm_backend import (
        EngineCrash,
        EngineSettings,
        installed_release,
        measure,
    )
    from kit.offline_acceptance.vllm_backend import start as start_engine

    with open(spec_path) as f:
        spec = json.load(f)
    out: dict = {"release": installed_release(), "crash": None, "runs": {}}
    settings = EngineSettings(engine_log=spec["log"])
    try:
        with start_engine(spec["target"], spec["draft"], spec["k"], 0, settings) as engine:
            for name, options in spec["runs"].items():
                r = measure(engine, spec["target"], spec["prompts"], None, k=spec["k"], **options)
                out["runs"][name] = {
                    "key": r.prompts_key,
                    "seconds": r.resources["seconds"],
                    "per_prompt": [asdict(c) for c in r.per_prompt],
                }
    except EngineCrash as e:
        out["crash"] = str(e)
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":  # vLLM starts its workers with spawn: they re-import this module
    main(*sys.argv[1:3])
