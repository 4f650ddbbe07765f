"""Offline acceptance of the bundled pair: what sampling and intervals cost against greedy.

Each case runs in a fresh interpreter with one torch thread (the evaluation's own setting, so
the figures repeat on a busy machine), on the 300 held-out prompts, k = 5, every figure counted
as sglang==0.5.10 counts:
  * baseline: load the target and generate the same 24-token completions with transformers'
    greedy `generate`, the target alone (what no evaluation can avoid);
  * greedy: `kit.offline_acceptance.healthy` / the incident (sglang==0.5.10, aux capture off);
  * sampled: the same at temperature 0.8 (speculative sampling, seed 0);
  * intervals: the bootstrap (2000 resamples) of accept len and every position, timed alone
    on the greedy healthy result;
  * a second wiring on the loaded target, and `kit.doctor` with the target run twice in a
    process that holds the loaded target, each against its first run;
  * a release that drafts late (sglang==0.5.10, the draft as `kit fix` writes it for it): its
    as-deployed row and `kit.doctor` with the target, against sglang==0.5.12 on the same loaded
    target (best of two alternating runs each): what measuring the steps where trained adds.
Wall and CPU seconds are reported (other jobs share the cores; CPU time is the steadier figure),
with the ratio to the baseline and to the greedy evaluation of the same wiring.
Run: `python -m bench offline`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIR = ROOT / "data" / "pair"

_CHILD = """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import torch
torch.set_num_threads(1)
from kit.offline_acceptance import evaluate, load_prompts, load_target
from kit.offline_acceptance.result import OfflineResult
case = json.loads(sys.argv[1])
pair = case["pair"]
out = {}
if case["mode"] == "baseline":
    target = load_target(pair + "/target")
    groups = {}
    for p in load_prompts(pair + "/prompts.jsonl"):
        groups.setdefault(len(p.ids), []).append(p.ids)
    with torch.inference_mode():
        for ids in groups.values():
            ids = torch.tensor(ids)
            target.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                            max_new_tokens=24, min_new_tokens=24, do_sample=False,
                            eos_token_id=None, pad_token_id=0)
elif case["mode"] == "second":
    target = load_target(pair + "/target")
    cpu = []
    for args in ({}, case["args"]):  # healthy, then another wiring on the same loaded target
        c = time.process_time()
        evaluate(pair + "/target", pair + "/draft", target=target, progress=False,
                 count_as="sglang==0.5.10", **args)
        cpu.append(time.process_time() - c)
    out.update(first_cpu_s=cpu[0], second_cpu_s=cpu[1])
elif case["mode"] == "doctor":
    import kit
    target = load_target(pair + "/target")  # held, as a notebook's variable holds it
    cpu = []
    for _ in range(2):  # the same doctor twice in one process: a notebook re-run, an API session
        c = time.process_time()
        kit.doctor(pair + "/draft", target=pair + "/target", target_config=pair + "/target",
                   engine="vllm==0.32.0")
        cpu.append(time.process_time() - c)
    out.update(first_cpu_s=cpu[0], second_cpu_s=cpu[1])
elif case["mode"] == "late":
    import tempfile
    from pathlib import Path
    import kit
    from kit.checkpoint.config import load_draft_config
    from kit.checkpoint.files import open_checkpoint
    from kit.load.rewrite import plan_fix, write_fixed
    target = load_target(pair + "/target")  # held: every run below reuses its text
    ck = open_checkpoint(pair + "/draft")
    plan = plan_fix(ck, load_draft_config(pair + "/draft"), "sglang==0.5.10")
    served = write_fixed(ck, plan, Path(tempfile.mkdtemp()) / "served")
    evaluate(pair + "/target", served, target=target, progress=False, count_as="sglang==0.5.10")
    cpu = {}
    for release in ("sglang==0.5.12", "sglang==0.5.10") * 2:  # alternating, best of two
        c = time.process_time()
        evaluate(pair + "/target", served, release, target=target, progress=False,
                 count_as="sglang==0.5.10")
        cpu.setdefault(("row", release), []).append(time.process_time() - c)
        c = time.process_time()
        kit.doctor(served, target=pair + "/target", target_config=pair + "/target",
                   engine=release)
        cpu.setdefault(("doctor", release), []).append(time.process_time() - c)
    out.update({f"{what} {release}": min(s) for (what, release), s in cpu.items()})
else:
    r = evaluate(pair + "/target", pair + "/draft", progress=False, count_as="sglang==0.5.10",
                 **case["args"]).result
    out.update(accept_len=r.accept_len, ci=r.accept_len_ci.to_list())
    fresh = OfflineResult(r.wiring, r.settings, r.per_prompt, r.prompts_key)
    i0, ic = time.perf_counter(), time.process_time()
    fresh.accept_len_ci, fresh.per_position_ci
    out.update(intervals_wall_s=time.perf_counter() - i0, intervals_cpu_s=time.process_time() - ic)
out.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0,
           peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""

BASELINE = "baseline: target-only greedy generate"
INCIDENT = {"engine": "sglang==0.5.10", "aux_capture": False}
CASES = {
    BASELINE: {"mode": "baseline", "args": {}},
    "healthy, greedy": {"mode": "eval", "args": {}},
    "healthy, sampled (T 0.8)": {"mode": "eval", "args": {"temperature": 0.8}},
    "incident, greedy": {"mode": "eval", "args": INCIDENT},
    "incident, sampled (T 0.8)": {"mode": "eval", "args": INCIDENT | {"temperature": 0.8}},
}
GREEDY_OF = {
    "healthy, sampled (T 0.8)": "healthy, greedy",
    "incident, sampled (T 0.8)": "incident, greedy",
}


def measure(case: dict) -> dict:
    arg = json.dumps(case | {"pair": str(PAIR)})
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, arg], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    results = {name: measure(case) for name, case in CASES.items()}
    base = results[BASELINE]
    print("| case | wall (s) | CPU (s) | × baseline (CPU) | × greedy (CPU) | peak RSS (MB) | "
          "accept len [95% interval] |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        greedy = results.get(GREEDY_OF.get(name, ""), r)
        al = f"{r['accept_len']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]" if "ci" in r else "–"
        vs = f"{r['cpu_s'] / greedy['cpu_s']:.2f}" if name in GREEDY_OF else "–"
        print(f"| {name} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
              f"{r['cpu_s'] / base['cpu_s']:.2f} | {vs} | {r['peak_rss_mb']:.0f} | {al} |")  # fmt: skip
    second = measure({"mode": "second", "args": INCIDENT})
    print(
        f"a second wiring (the incident's) on the loaded target: {second['second_cpu_s']:.2f} s "
        f"CPU against {second['first_cpu_s']:.2f} s for the first (healthy): "
        f"{second['second_cpu_s'] / second['first_cpu_s']:.2f}x, the target's text reused"
    )
    again = measure({"mode": "doctor", "args": {}})
    print(
        f"doctor with the target, again in a process that holds it: {again['second_cpu_s']:.2f} "
        f"s CPU against {again['first_cpu_s']:.2f} s for the first: "
        f"{again['second_cpu_s'] / again['first_cpu_s']:.2f}x, its continuations reused"
    )
    late = measure({"mode": "late", "args": {}})
    for what in ("row", "doctor"):
        on, off = late[f"{what} sglang==0.5.12"], late[f"{what} sglang==0.5.10"]
        print(f"{what} on sglang==0.5.10 (drafts late: its chains run again with the steps where "
              f"trained) {off:.2f} s CPU against {on:.2f} s on sglang==0.5.12: {off / on:.2f}x, "
              f"+{off - on:.2f} s")  # fmt: skip
    iv = results["healthy, greedy"]
    share = iv["intervals_cpu_s"] / iv["cpu_s"]
    print("intervals (accept len + 5 positions, 2000 resamples over 300 prompts): "
          f"{iv['intervals_wall_s'] * 1000:.1f} ms wall, {iv['intervals_cpu_s'] * 1000:.1f} ms "
          f"CPU, {share:.2%} of the greedy evaluation's CPU time")  # fmt: skip


if __name__ == "__main__":
    main()
