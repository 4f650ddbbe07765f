"""`kit watch` against the same command without it, in the same run: start-up and decode.

The command is an offline `vllm.LLM` on the bundled pair (float32, eager, k = 5), 32 greedy
prompts of 64 tokens. Plain and watched runs alternate, REPEATS of each; the script itself times
the engine's start-up (the `LLM(...)` call: every process the engine spawns, each instrumented
under watch) and decode throughput (generated tokens / `generate` time); the wall time of the whole
command includes `watch`'s own start. Medians are reported. Needs the engine's venv
(`.venv-vllm/`, or VLLM_PYTHON); without it the bench says so and does nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VLLM_PYTHON = Path(os.environ.get("VLLM_PYTHON", ROOT / ".venv-vllm/bin/python"))
REPEATS = int(os.environ.get("BENCH_WATCH_REPEATS", "3"))

SCRIPT = """
import json, sys, time
if __name__ == "__main__":
    t0 = time.perf_counter()
    from vllm import LLM, SamplingParams
    t1 = time.perf_counter()
    llm = LLM(model=sys.argv[1], dtype="float32", enforce_eager=True, max_model_len=256,
              gpu_memory_utilization=0.3, seed=0,
              speculative_config={"model": sys.argv[2], "method": "eagle3",
                                  "num_speculative_tokens": 5})
    t2 = time.perf_counter()
    params = SamplingParams(temperature=0, max_tokens=64, ignore_eos=True)
    outs = llm.generate([f"Story {i}: once upon a time" for i in range(32)], params)
    t3 = time.perf_counter()
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    print("BENCH " + json.dumps({"import": t1 - t0, "startup": t2 - t1, "tokens": tokens,
                                 "decode_tok_s": tokens / (t3 - t2)}), flush=True)
"""


def one(script: Path, watched: bool, report: Path) -> dict[str, float]:
    target, draft = ROOT / "data/pair/target", ROOT / "data/pair/draft"
    cmd = [str(VLLM_PYTHON), str(script), str(target), str(draft)]
    if watched:
        cmd = [sys.executable, "-m", "kit", "watch", "--report", str(report), "--", *cmd]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    line = next((x for x in out.stdout.splitlines() if x.startswith("BENCH ")), None)
    if out.returncode != 0 or line is None:
        raise RuntimeError(f"bench command failed ({out.returncode}): {out.stderr[-2000:]}")
    return {**json.loads(line[6:]), "wall": wall}


def main() -> None:
    if not VLLM_PYTHON.exists():
        print(f"skipped: no vLLM interpreter at {VLLM_PYTHON} (set VLLM_PYTHON)")
        return
    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bench_llm.py"
        script.write_text(SCRIPT)
        for i in range(REPEATS):
            for watched in (False, True) if i % 2 == 0 else (True, False):
                runs[watched].append(one(script, watched, Path(tmp) / "kit-watch.json"))
        report = json.loads((Path(tmp) / "kit-watch.json").read_text())
    print(f"{REPEATS} runs each, alternating; tokens per run: {runs[True][0]['tokens']:.0f}")
    print("| figure | plain | watched | watched / plain |\n|---|---|---|---|")
    for key, label in (("startup", "engine start-up, s"), ("wall", "whole command, s"),
                       ("decode_tok_s", "decode, tokens/s")):  # fmt: skip
        plain = statistics.median(r[key] for r in runs[False])
        watched = statistics.median(r[key] for r in runs[True])
        print(f"| {label} | {plain:.2f} | {watched:.2f} | {watched / plain:.3f} |")
    ff = report.get("first_forward", {})
    print(f"watched report: width {ff.get('width')}, fc ran {ff.get('fc_ran')}, "
          f"acceptance {report.get('acceptance', {}).get('totals')}")  # fmt: skip


if __name__ == "__main__":
    main()
