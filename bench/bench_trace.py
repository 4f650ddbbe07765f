"""Full-scale meta-device trace: seconds and peak RSS, against `import torch` in the same script.

Each measurement runs in a fresh interpreter that does its imports, notes its peak RSS
(`getrusage(RUSAGE_SELF).ru_maxrss`), then runs its work twice and notes the times, the CPU time
of the first run and the new peak:
  * `import torch` alone: the baseline every figure is compared with;
  * the kit's imports (torch, kit.tracing.shapes, kit.tracing.draft), no work; the same plus `import sympy`, and
    plus `import sympy, torch._dynamo`: what torch imports lazily on the first op it runs on the
    meta device (its Python meta kernels call `torch._check`, which imports sympy through
    torch.fx.experimental.symbolic_shapes, and the elementwise ones are wrapped in
    `torch._disable_dynamo`, which imports torch._dynamo);
  * one meta op (`x + 1` on a meta tensor), the floor that any meta-device trace pays;
  * the bundled tiny sample (H = 32) traced on cpu with real tensors, and on meta;
  * the Kimi-K2.5-sized incident pair (H = 7168, 61 target layers, vocab 163840) on meta, with
    the aux capture off (the incident) and on; its parameters would take the bytes printed as
    "if real" on cpu.
The first run pays torch's one-off lazy imports, the second shows the steady cost.
Run: `python -m bench trace`.
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
import importlib, json, resource, sys, time
case = json.loads(sys.argv[1])
t0 = time.perf_counter()
import torch
torch.set_num_threads(1)
if case["kit"]:
    from kit.checkpoint.config import load_draft_config, load_target_config, parse_target_config
    from kit.tracing.shapes import trace_draft
    import kit.tracing.draft
for name in case["imports"]:  # what torch imports lazily on its first meta op
    importlib.import_module(name)
imported = time.perf_counter() - t0
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"import_s": imported, "rss_import_kb": rss0}
if case["draft"]:
    draft = load_draft_config(case["draft"])
    target = (load_target_config(case["target"]) if case["target"] else parse_target_config(
        {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 32}))
    def work():
        return trace_draft(target, draft, case["engine"], aux_capture=case["aux"],
                           device=case["device"])
elif case["meta_op"]:
    x = torch.empty(4, device="meta")
    def work():
        return x + 1
else:
    work = None
if work is not None:
    times, cpu = [], []
    for _ in range(2):
        t, c = time.perf_counter(), time.process_time()
        r = work()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    out.update(first_s=times[0], second_s=times[1], first_cpu_s=cpu[0])
if case["draft"]:
    from kit.tracing.draft import build_draft
    with torch.device("meta"):
        m = build_draft(draft, r.capture.engine.split("==")[0], r.capture.engine)
    out.update(width=r.hidden_width, fc=r.fc_applied, hooks=len(r.hooks),
               cpu_bytes=sum(p.numel() for p in m.parameters()) * 2)
out["rss_peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def _case(kit=True, imports=(), meta_op=False, draft=None, target=None, engine=None, aux=None,
          device="meta") -> dict:  # fmt: skip
    return {"kit": kit, "imports": list(imports), "meta_op": meta_op, "draft": draft,
            "target": target, "engine": engine, "aux": aux, "device": device}  # fmt: skip


BASELINE = "`import torch` only"
CASES = {
    BASELINE: _case(kit=False),
    "kit imports": _case(),
    "kit + import sympy": _case(imports=["sympy"]),
    "kit + sympy + torch._dynamo": _case(imports=["sympy", "torch._dynamo"]),
    "one meta op (x + 1)": _case(kit=False, meta_op=True),
    "tiny sample, cpu": _case(draft=str(SAMPLE), engine="sglang==0.5.10", device="cpu"),
    "tiny sample, meta": _case(draft=str(SAMPLE), engine="sglang==0.5.10"),
    "Kimi-K2.5, meta, aux off": _case(
        draft=str(KIMI / "draft"), target=str(KIMI / "target"), engine="sglang==0.5.10", aux=False
    ),
    "Kimi-K2.5, meta, aux on": _case(
        draft=str(KIMI / "draft"), target=str(KIMI / "target"), engine="sglang==0.5.10"
    ),
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
    base = median(results[BASELINE], "rss_peak_kb") / 1024
    print(f"median of {REPEATS} fresh interpreters each; RSS = peak resident set size (MB)\n")
    print(
        f"{'case':28} {'1st s':>7} {'1st CPU s':>9} {'2nd s':>7} {'peak RSS':>8} "
        f"{'over torch':>10} {'work adds':>9}"
    )
    for name, runs in results.items():
        peak = median(runs, "rss_peak_kb") / 1024
        row = f"{name:28} "
        if "first_s" in runs[0]:
            row += (
                f"{median(runs, 'first_s'):7.3f} {median(runs, 'first_cpu_s'):9.3f} "
                f"{median(runs, 'second_s'):7.3f} "
            )
        else:
            row += f"{'-':>7} {'-':>9} {'-':>7} "
        grown = peak - median(runs, "rss_import_kb") / 1024
        row += f"{peak:8.0f} {peak - base:+10.0f} "
        row += f"{grown:9.0f}" if "first_s" in runs[0] else f"{'-':>9}"
        print(row)
    kimi = results["Kimi-K2.5, meta, aux off"][0]
    print(
        f"\n`import torch` alone: {base:.0f} MB peak RSS, "
        f"{median(results[BASELINE], 'import_s'):.2f} s; "
        f"Kimi-K2.5 draft parameters if real (bf16, cpu): {kimi['cpu_bytes'] / 2**30:.2f} GiB"
    )
    for name in ("Kimi-K2.5, meta, aux off", "Kimi-K2.5, meta, aux on"):
        r = results[name][0]
        print(f"{name}: hidden width {r['width']}, fc applied {r['fc']}, {r['hooks']} hooks")


if __name__ == "__main__":
    main()
