"""The kit's side of `engine-check`: what predicting, comparing and explaining a departure cost
against one offline evaluation of the same pair.

In one interpreter with one torch thread, on the bundled pair's 300 prompts, k = 5, greedy, as
vllm==0.32.0 runs the draft; the target loaded once (as the check loads it):
  * baseline: `evaluate` of the pair as vllm==0.32.0 deploys it (what any prediction costs);
  * a clean run: the check's prediction (`Predictor.row`, the target's text computed anew) and
    the paired comparison of an engine that counts what the kit predicts (`deviation`);
  * a departing run per model the check tries, the engine's counts made by that model so the
    model is found: a count one short (no evaluation), a verification stopping at 2 (a chain of
    2), draft steps one position late, the last aux layer one later (the late model first, then
    the neighbour sets on the first 100 prompts until one fits: the worst case); each on the
    text the prediction computed, as in a check.
CPU seconds (other jobs share the cores; CPU time is the steadier figure), each also as a ratio
to the baseline. The engine's own side (start-up, requests) is measured by the README's run.
Run: `python -m bench engine_check`.
"""

from __future__ import annotations

import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIR = ROOT / "data" / "pair"
RELEASE = "vllm==0.32.0"


def _cpu(fn) -> tuple[float, object]:
    c = time.process_time()
    out = fn()
    return time.process_time() - c, out


def main() -> None:
    import torch

    torch.set_num_threads(1)
    from kit.engine_check.deviation import deviation
    from kit.engine_check.hypotheses import explain
    from kit.engine_check.predict import Predictor, counted_one_short, widened
    from kit.offline_acceptance import evaluate, load_prompts
    from kit.offline_acceptance.measure import _CONTINUED

    prompts = load_prompts(PAIR / "prompts.jsonl")
    predictor = Predictor(PAIR / "target", PAIR / "draft", RELEASE, prompts, {"k": 5})
    target = predictor._load()[0]
    base, _ = _cpu(lambda: evaluate(PAIR / "target", PAIR / "draft", RELEASE, prompts=prompts,
                                    target=target, progress=False))  # fmt: skip
    _CONTINUED.clear()  # the check's prediction computes the target's text too, as it must
    clean_s, ideal = _cpu(lambda: predictor.row({}).result)
    ideal = ideal.trained_positions or ideal
    rows = [("baseline: evaluate (one offline row)", base), ("clean run: prediction", clean_s)]
    rows.append(("clean run: comparison", _cpu(lambda: deviation(ideal, ideal))[0]))
    engines = {
        "count one short": lambda: counted_one_short(ideal),
        "verification stops at 2": lambda: widened(predictor.row({}, k=2).result, 5),
        "steps one position late": lambda: predictor.row({}, late_positions=1).result,
        "last aux layer one later": lambda: predictor.row({}, aux_layers=[2, 4, 6]).result,
    }
    for name, make in engines.items():
        measured = make()
        found = deviation(ideal, measured)
        seconds, why = _cpu(lambda: explain(found, predictor, {}, ideal, measured, [2, 4, 5], 8))  # noqa: B023
        rows.append((f"explained: {name} ({why.key if why else 'none'})", seconds))
    print(f"{'case':58} {'CPU (s)':>8} {'x baseline':>10}")
    for name, seconds in rows:
        print(f"{name:58} {seconds:8.2f} {seconds / base:10.2f}")
