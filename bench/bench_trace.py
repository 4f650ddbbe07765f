"""Full-scale meta-device trace: seconds and peak RSS, against an import-only baseline.

Each measurement runs in a fresh interpreter that imports torch and the kit, notes its peak RSS
(`getrusage(RUSAGE_SELF).ru_maxrss`), then runs `trace_draft` and notes the time and the new
peak:
  * baseline: the same imports, no trace; and the same plus `import sympy`, which torch's
    meta kernels import lazily on their first call (torch/_prims_common elementwise_dtypes);
  * the bundled tiny sample (H = 32) on meta, the smallest possible trace;
  * the Kimi-K2.5-sized incident pair (H = 7168, 61 layers, vocab 163840) on meta, with the aux
    capture off (the incident) and on; its parameters would take the bytes printed as
    "on cpu" if they were real.
The trace is timed twice in the same process: the first call pays torch's one-off lazy imports
for meta kernels (sympy), the second shows the steady cost. Run: `python -m bench.bench_trace`.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIMI = ROOT / "data" / "incident" / "kimi-k2.5"
SAMPLE = ROOT / "data" / "samples" / "speculators-0.9.0-tiny"
REPEATS = 3

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
import torch
from kit.config import load_draft_config, load_target_config, parse_target_config
from kit.trace import trace_draft
import kit.draft
torch.set_num_threads(1)
case = json.loads(sys.argv[1])
if case.get("sympy"):
    import sympy  # what torch's meta kernels import lazily on their first call
imported = time.perf_counter() - t0
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"import_s": imported, "rss_import_kb": rss0}
if case["draft"]:
    draft = load_draft_config(case["draft"])
    target = (load_target_config(case["target"]) if case["target"] else parse_target_config(
        {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 32}))
    times, cpu = [], []
    for _ in range(2):
        t, c = time.perf_counter(), time.process_time()
        r = trace_draft(target, draft, case["engine"], aux_capture=case["aux"], device="meta")
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    from kit.draft import build_draft
    with torch.device("meta"):
        m = build_draft(draft, r.capture.engine.split("==")[0], r.capture.engine)
    out.update(first_s=times[0], second_s=times[1], first_cpu_s=cpu[0], width=r.hidden_width,
               fc=r.fc_applied, hooks=len(r.hooks),
               cpu_bytes=sum(p.numel() for p in m.parameters()) * 2)
out["rss_peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""

CASES = {
    "baseline (imports only)": {"draft": None, "target": None, "engine": None, "aux": None},
    "baseline + import sympy": {
        "draft": None,
        "target": None,
        "engine": None,
        "aux": None,
        "sympy": True,
    },
    "tiny sample, meta": {
        "draft": str(SAMPLE),
        "target": None,
        "engine": "sglang==0.5.10",
        "aux": None,
    },
    "Kimi-K2.5, meta, aux off": {
        "draft": str(KIMI / "draft"),
        "target": str(KIMI / "target"),
        "engine": "sglang==0.5.10",
        "aux": False,
    },
    "Kimi-K2.5, meta, aux on": {
        "draft": str(KIMI / "draft"),
        "target": str(KIMI / "target"),
        "engine": "sglang==0.5.10",
        "aux": None,
    },
}


def run_case(case: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(case)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    results = {name: [run_case(case) for _ in range(REPEATS)] for name, case in CASES.items()}
    base_rss = median(results["baseline (imports only)"], "rss_peak_kb") / 1024
    tiny = results["tiny sample, meta"]
    print(f"median of {REPEATS} fresh interpreters each; RSS = peak resident set size\n")
    print(
        f"{'case':28} {'1st trace s':>11} {'1st CPU s':>9} {'2nd trace s':>11} "
        f"{'peak RSS MB':>11} {'vs baseline':>11} {'trace adds MB':>13} {'x tiny time':>11}"
    )
    for name, runs in results.items():
        peak = median(runs, "rss_peak_kb") / 1024
        if "first_s" not in runs[0]:
            print(
                f"{name:28} {'-':>11} {'-':>9} {'-':>11} {peak:11.0f} {peak / base_rss:11.2f} "
                f"{'-':>13} {'-':>11}"
            )
            continue
        first, second = median(runs, "first_s"), median(runs, "second_s")
        grown = peak - median(runs, "rss_import_kb") / 1024
        print(
            f"{name:28} {first:11.3f} {median(runs, 'first_cpu_s'):9.3f} {second:11.3f} "
            f"{peak:11.0f} {peak / base_rss:11.2f} "
            f"{grown:13.0f} {first / median(tiny, 'first_s'):11.2f}"
        )
    kimi = results["Kimi-K2.5, meta, aux off"][0]
    print(
        f"\nKimi-K2.5 draft parameters if real (bf16, cpu): {kimi['cpu_bytes'] / 2**30:.2f} GiB; "
        f"imports alone: {median(results['baseline (imports only)'], 'import_s'):.2f} s"
    )
    for name in ("Kimi-K2.5, meta, aux off", "Kimi-K2.5, meta, aux on"):
        r = results[name][0]
        print(f"{name}: hidden width {r['width']}, fc applied {r['fc']}, {r['hooks']} hooks")


if __name__ == "__main__":
    main()
