"""Offline acceptance of the bundled pair: seconds per full evaluation, against target-only greedy.

Each measurement runs in a fresh interpreter with one torch thread (the evaluation's own
setting, so the figures repeat on a busy machine):
  * baseline: load the target and generate the same bounded greedy completions of the 300
    held-out prompts with the target alone (what the evaluation cannot avoid);
  * healthy: `kit.organism.evaluate` on the bundled pair, all 300 prompts, k = 5;
  * incident: the same, loaded as sglang==0.5.10 with aux capture off.
Wall and CPU seconds are reported (other jobs share the cores; CPU time is the steadier figure).
Run: `python -m bench.bench_offline`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORGANISM = ROOT / "data" / "organism"

_CHILD = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import torch
torch.set_num_threads(1)
from kit.organism import _greedy, evaluate, load_prompts, load_target
case = json.loads(sys.argv[1])
org = case["organism"]
out = {}
if case["mode"] == "baseline":
    target = load_target(org + "/target")
    prompts = load_prompts(org + "/prompts.jsonl")
    groups = {}
    for p in prompts:
        groups.setdefault(len(p.ids), []).append(p.ids)
    with torch.inference_mode():
        for ids in groups.values():
            _greedy(target, torch.tensor(ids), 24)  # evaluate's max_new_tokens
else:
    r = evaluate(org + "/target", org + "/draft", k=5, progress=False, **case["args"])
    out.update(accept_len=r.accept_len, step0=r.step0_accuracy)
out.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
print(json.dumps(out))
"""

CASES = {
    "baseline (target-only greedy)": {"mode": "baseline", "args": {}},
    "healthy": {"mode": "eval", "args": {}},
    "incident (sglang==0.5.10, aux off)": {
        "mode": "eval",
        "args": {"as_loaded_by": "sglang==0.5.10", "aux_capture": False},
    },
}


def measure(case: dict) -> dict:
    arg = json.dumps(case | {"organism": str(ORGANISM)})
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, arg], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    results = {name: measure(case) for name, case in CASES.items()}
    base = results["baseline (target-only greedy)"]
    print(f"{'case':38} {'wall s':>7} {'cpu s':>7} {'x base (cpu)':>13} {'accept len':>10}")
    for name, r in results.items():
        al = f"{r['accept_len']:.3f}" if "accept_len" in r else "-"
        ratio = r["cpu_s"] / base["cpu_s"]
        print(f"{name:38} {r['wall_s']:7.1f} {r['cpu_s']:7.1f} {ratio:13.2f} {al:>10}")
    worst = max(r["wall_s"] for n, r in results.items() if n != "baseline (target-only greedy)")
    print(f"slowest evaluation: {worst:.1f} s wall (budget 30 s on 2 cores)")


if __name__ == "__main__":
    main()
