"""The deployment check: reading a launch line per release, the config rules, end to end.

In-process (best of N, warm flag tables unless said): the baseline is the least any launch-line
check does, `shlex.split` of the line plus `json.loads` of the two configs; against it
`read_served` with a release, `read_served` without one (every modelled SGLang release parsed to
find those that accept the line), and `check()` with and without the launch line. End to end
(fresh interpreters, median of 3): `python -m kit deployment … --json` against
`python -c "import json, shlex"`, with and without the tokenizer rules (they import transformers).
Configs and tokenizers are written into a temp dir and deleted afterwards.
"""

from __future__ import annotations

import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_inspect import _WRAPPER, best_time

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import deployment_scenarios as sc  # noqa: E402  (the tests' scenario writers)

from kit.deployment import check  # noqa: E402
from kit.deployment.served import read_served  # noqa: E402
from kit.engines.flagtable import load_table  # noqa: E402
from kit.engines.sglang import flags  # noqa: E402


def line_for(target: Path, draft: Path) -> str:
    return (
        f"python -m sglang.launch_server --model-path {target} --speculative-algorithm EAGLE3 "
        f"--speculative-draft-model-path {draft} --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --context-length 32768 "
        "--tp-size 2 --mem-fraction-static 0.8 --cuda-graph-max-bs 64 --port 30000"
    )


def in_process(tmp: Path) -> list[tuple[str, float]]:
    target, draft = sc.target(tmp / "target"), sc.specforge_draft(tmp / "draft")
    line = line_for(target, draft)

    def baseline() -> None:
        shlex.split(line)
        json.loads((target / "config.json").read_text())
        json.loads((draft / "config.json").read_text())

    t = time.perf_counter()
    load_table(flags.TABLE_PATH)
    cold = time.perf_counter() - t
    read_served(line, "sglang==0.5.10")  # warm the tables
    return [
        ("baseline: shlex.split + 2 × json.loads", best_time(baseline, 50)),
        ("load_table (sglang flags.json, 36 releases, cold)", cold),
        ("read_served, release given (sglang==0.5.10)", best_time(lambda: read_served(line, "sglang==0.5.10"), 20)),
        ("read_served, release assumed (36 releases parsed)", best_time(lambda: read_served(line), 5)),
        ("check(), configs only", best_time(lambda: check(draft=draft, target_config=target), 20)),
        ("check(), launch line + configs", best_time(lambda: check(line, engine="sglang==0.5.10"), 20)),
    ]  # fmt: skip


def end_to_end(tmp: Path) -> list[tuple[str, float, float]]:
    """Median wall and peak RSS of fresh interpreters; the third case serves a tokenizer and
    names the trainer's, so the chat-template rule runs."""
    plain = line_for(sc.target(tmp / "t1"), sc.specforge_draft(tmp / "d1"))
    target = sc.target(tmp / "t2")
    sc.tokenizer(target)
    templated = line_for(target, sc.specforge_draft(tmp / "d2"))
    kit = [sys.executable, "-m", "kit", "deployment", "--engine", "sglang==0.5.10", "--json"]
    cases = [
        ("baseline: python -c 'import json, shlex'", [sys.executable, "-c", "import json, shlex"]),
        ("kit deployment --launch … --json", [*kit, "--launch", plain]),
        ("… + --train-tokenizer (chat-template rule: transformers)",
         [*kit, "--launch", templated, "--train-tokenizer", str(sc.tokenizer(tmp / "train"))]),
    ]  # fmt: skip
    out = []
    for name, cmd in cases:
        runs = []
        for _ in range(3):
            res = subprocess.run(
                [sys.executable, "-c", _WRAPPER, *cmd],
                capture_output=True, text=True, cwd=ROOT, check=True,
            )  # fmt: skip
            rc, wall, rss = res.stdout.split()
            assert rc == "0", (name, res.stderr)
            runs.append((float(wall), int(rss) / 1024))
        out.append((name, statistics.median(w for w, _ in runs), max(r for _, r in runs)))
    return out


def main() -> None:
    with tempfile.TemporaryDirectory(dir=ROOT / "bench") as tmp:
        rows = in_process(Path(tmp))
        base = rows[0][1]
        print("| case | best (ms) | × baseline |\n|---|---|---|")
        for name, seconds in rows:
            print(f"| {name} | {seconds * 1e3:.2f} | {seconds / base:.0f} |")
        e2e = end_to_end(Path(tmp))
        b_wall, b_rss = e2e[0][1], e2e[0][2]
        print("\n| command | wall (s) | × baseline | peak RSS (MB) | over baseline (MB) |")
        print("|---|---|---|---|---|")
        for name, wall, rss in e2e:
            print(f"| {name} | {wall:.2f} | {wall / b_wall:.1f} | {rss:.0f} | +{rss - b_rss:.0f} |")


if __name__ == "__main__":
    main()
