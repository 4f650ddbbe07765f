"""Render the incident's SGLang 0.5.10 server logs from the engine's own format strings.

These are rendered logs, not captured ones: the line formats are SGLang 0.5.10's (decode line
`observability/scheduler_metrics_mixin.py:608-657`, prefill line `:389-413`, logger
`[%(asctime)s TP{r}] %(message)s` from `utils/common.py:1136-1142`, weight-load lines
`model_executor/model_runner.py:1075,1246-1253`, the topk=1 warning `server_args.py:3078-3081`,
`managers/scheduler.py:3057`);
the figures of `before.log` and `after-rename.log` are the incident report's (accept len 1.00,
accept rate 0.20 with 5 draft tokens, about 25 tok/s single stream); `after-both-fixes.log` and
`baseline-no-spec.log` are illustrative.

    python data/make_incident_logs.py            # writes data/incident/logs/*.log
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "incident" / "logs"
TP = 8
NUM_STEPS, TOPK, NUM_DRAFT_TOKENS = 4, 1, 5  # topk 1 forces D = num_steps + 1
DECODE_LOG_INTERVAL = 40  # --decode-log-interval default
MAX_TOTAL_TOKENS = 1_200_000
STEP_S = 0.040  # one verify step of the TP8 target with the draft, eager (--disable-cuda-graph)
BASE_STEP_S = 0.039  # one plain decode step without speculation
# Illustrative conditional acceptance per draft position for the healthy run (step 0 from the
# incident's offline validation, 74.5 %; later positions assumed).
HEALTHY = (0.745, 0.70, 0.66, 0.62)


def stamp(t: datetime, rank: int | None = 0) -> str:
    prefix = f" TP{rank}" if rank is not None else ""
    return f"[{t:%Y-%m-%d %H:%M:%S}{prefix}]"


def decode_line(t: datetime, running: int, used: int, al: float | None, gen: float) -> str:
    """0.5.10 observability/scheduler_metrics_mixin.py:608-657, hybrid pools and PD off."""
    token_usage_msg = (
        ", ".join([f"#token: {used}, token usage: {used / MAX_TOTAL_TOKENS:.2f}"]) + ", "
    )
    msg = f"Decode batch, #running-req: {running}, {token_usage_msg}"
    if al is not None:
        num_draft_tokens = NUM_DRAFT_TOKENS or NUM_STEPS + 1
        rate = al / num_draft_tokens  # accepted tokens / (forward_ct * num_draft_tokens)
        msg += f"accept len: {al:.2f}, accept rate: {rate:.2f}, "
    msg += f"cuda graph: {False}, gen throughput (token/s): {gen:.2f}, #queue-req: {0}"
    return f"{stamp(t)} {msg}"


def prefill_line(t: datetime, new_tokens: int, used: int, rate: float) -> str:
    """0.5.10 observability/scheduler_metrics_mixin.py:389-413."""
    return (
        f"{stamp(t)} Prefill batch, #new-seq: 1, #new-token: {new_tokens}, #cached-token: 0, "
        f"token usage: {used / MAX_TOTAL_TOKENS:.2f}, #running-req: 0, #queue-req: 0, "
        f"cuda graph: {False}, input throughput (token/s): {rate:.2f}"
    )


def startup(t: datetime, speculative: bool) -> list[str]:
    lines = []
    if speculative:
        lines.append(
            f"{stamp(t, None)} speculative_num_draft_tokens is adjusted to "
            "speculative_num_steps + 1 when speculative_eagle_topk == 1"
        )
    for r in range(TP):
        lines.append(f"{stamp(t + timedelta(seconds=14), r)} Load weight begin. avail mem=89.21 GB")
    for r in range(TP):
        lines.append(
            f"{stamp(t + timedelta(seconds=301), r)} Load weight end. elapsed=287.41 s, "
            "type=KimiK25ForConditionalGeneration, avail mem=14.63 GB, mem usage=74.58 GB."
        )
    return lines


def accepted_drafts(rng: random.Random, probs: tuple[float, ...]) -> int:
    """Drafts accepted in one chain verify step: stop at the first rejected position."""
    a = 0
    for p in probs:
        if rng.random() >= p:
            break
        a += 1
    return a


def render(probs: tuple[float, ...] | None, seed: int, windows: int = 60) -> str:
    rng = random.Random(seed)
    t = datetime(2026, 3, 2, 9, 40, 0) + timedelta(minutes=seed)
    lines = startup(t, speculative=probs is not None)
    t += timedelta(seconds=320)
    used = 0
    for request in range(3):
        prompt = rng.randint(400, 900)
        used = prompt
        lines.append(prefill_line(t, prompt, used, prompt / 0.35))
        t += timedelta(seconds=0.35)
        for _ in range(windows // 3):
            if probs is None:
                tokens, seconds, al = DECODE_LOG_INTERVAL, DECODE_LOG_INTERVAL * BASE_STEP_S, None
            else:
                tokens = sum(1 + accepted_drafts(rng, probs) for _ in range(DECODE_LOG_INTERVAL))
                seconds = DECODE_LOG_INTERVAL * STEP_S * rng.uniform(0.97, 1.03)
                al = tokens / DECODE_LOG_INTERVAL
            used += tokens
            t += timedelta(seconds=seconds)
            lines.append(decode_line(t, 1, used, al, tokens / seconds))
        if request == 1:
            lines.append(f"{stamp(t, 0)} Cache flushed successfully!")  # managers/scheduler.py:3057
    return "\n".join(lines) + "\n"


def render_all() -> dict[str, str]:
    """File name -> text for every bundled incident log."""
    zero = (0.0,) * NUM_STEPS
    return {
        "before.log": render(zero, seed=1),
        "after-rename.log": render(zero, seed=2),
        "after-both-fixes.log": render(HEALTHY, seed=3),
        "baseline-no-spec.log": render(None, seed=4),
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in render_all().items():
        (OUT / name).write_text(text)
        print(f"wrote {OUT / name} ({len(text.splitlines())} lines)")


if __name__ == "__main__":
    main()
