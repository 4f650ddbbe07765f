"""Prometheus text exposition from SGLang, vLLM, LMDeploy, llama.cpp or TensorRT-LLM, read with
`prometheus_client`'s parser.

One scrape is one window. SGLang exports gauges set at each decode log (`sglang:spec_accept_length`,
`sglang:spec_accept_rate`, ≥0.5.13 `sglang:spec_num_steps` / `sglang:spec_num_draft_tokens`;
0.5.23 observability/metrics_collector.py:512-542); vLLM V1 exports counters (`vllm:spec_decode_num_drafts`,
`…_num_draft_tokens`, `…_num_accepted_tokens`, `…_num_accepted_tokens_per_pos{position}`;
0.33.0 vllm/v1/spec_decode/metrics.py:200-262), from which accept len, rate and per-position rates follow; V0 (≤0.9.x) has
`vllm:spec_decode_draft_acceptance_rate` / `…_efficiency` gauges and token counters only.
LMDeploy reuses vLLM's names under `lmdeploy:`, and llama.cpp's server under `llamacpp:` (its
`/metrics`, ggml-org/llama.cpp PR #26389). TensorRT-LLM's `/prometheus/metrics` counts draft and
accepted tokens (`trtllm_spec_decode_num_draft_tokens_total`, `…_num_accepted_tokens_total`,
summed from each iteration's statistics), sets `trtllm_spec_decode_acceptance_length` to the last
iteration's figure, and counts per draft position over finished requests
(`trtllm_spec_decode_drafted_tokens_total{token_position}`, `…_accepted_tokens_total{…}`)
(NVIDIA/TensorRT-LLM PRs #12545, #12636; `tensorrt_llm/metrics/collector.py` `MetricsCollector`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TextIO

from kit.acceptance.model import Kind, LogRun, Window
from kit.errors import KitError

MARKS = ("sglang:spec_", "vllm:spec_decode", "lmdeploy:spec_decode", "llamacpp:spec_decode",
         "trtllm_spec_decode")  # fmt: skip


def looks_like(head: str) -> bool:
    return any(m in head for m in MARKS) or head.startswith("# HELP")


def _base(name: str) -> str:
    for suffix in ("_total", "_created"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


PER_POS = "spec_decode_num_accepted_tokens_per_pos"  # vllm: and, with the same names, lmdeploy:
# Engines that export vLLM's counter names under their own prefix (kit.engines.lmdeploy.acceptance
# .COUNTERS; llama.cpp PR #26389 "matching the vLLM counter schema"), by the engine name a run takes.
COUNTER_ENGINES = {"vllm": "vllm", "lmdeploy": "lmdeploy", "llamacpp": "llama.cpp"}
TRT = "trtllm_spec_decode_"
TRT_POSITIONS = (TRT + "drafted_tokens", TRT + "accepted_tokens")  # labelled token_position


@dataclass
class Scrape:
    """One exposition: each metric's first sample (gauges), the sum over label sets (counters
    of several engines), and vLLM's accepted tokens per draft position."""

    first: dict[str, float] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    per_pos: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    positions: dict[str, dict[int, float]] = field(default_factory=dict)  # TensorRT-LLM's

    @property
    def engine(self) -> str | None:
        """The metric prefix of the engine that wrote the scrape (a key of COUNTER_ENGINES,
        "sglang" or "trtllm"); None without a speculative-decoding metric."""
        if "sglang:spec_accept_length" in self.first:
            return "sglang"
        for prefix in COUNTER_ENGINES:
            if f"{prefix}:spec_decode_num_drafts" in self.sums or (
                f"{prefix}:spec_decode_num_draft_tokens" in self.sums
            ):
                return prefix
        if any(name.startswith(TRT) for name in self.sums):
            return "trtllm"
        return None


def parse(lines: Iterable[str] | TextIO, where: str) -> Scrape:
    """Parse Prometheus text; a malformed exposition is a `KitError` naming `where`."""
    from prometheus_client.parser import text_fd_to_metric_families  # only when metrics are read

    scrape = Scrape()
    try:
        for family in text_fd_to_metric_families(lines):
            for s in family.samples:
                if s.name.endswith("_created"):
                    continue
                name = _base(s.name)
                if "spec" in name and not math.isfinite(s.value):
                    raise KitError(f"{name} is {s.value}, not a count or a figure", where)
                scrape.first.setdefault(name, s.value)
                scrape.sums[name] += s.value
                if name.endswith(PER_POS):
                    scrape.per_pos[int(s.labels.get("position", 0))] += s.value
                elif name in TRT_POSITIONS:
                    at = scrape.positions.setdefault(name, defaultdict(float))
                    at[int(s.labels.get("token_position", 0))] += s.value
    except (ValueError, TypeError, KeyError, OverflowError) as e:  # 1e999 or 10^400 too
        what = ascii(str(e))[1:-1]  # what the parser met, printable and on one line
        what = what if len(what) <= 120 else what[:117] + "..."
        raise KitError(f"not valid Prometheus text exposition: {what}", where) from None
    return scrape


def read(f: TextIO, run: LogRun) -> None:
    """Fold one scrape into `run` (one window); a malformed exposition is a `KitError`."""
    scrape = parse(f, run.source)
    if scrape.engine == "sglang":
        sglang_window(scrape.first, run)
    elif scrape.engine == "trtllm":
        trtllm_window(scrape, run)
    elif scrape.engine in COUNTER_ENGINES:
        _counters(scrape.engine, scrape.sums, scrape.per_pos, run)
    else:
        run.notes.append("no speculative-decoding metric in this exposition")


def sglang_window(g: dict[str, float], run: LogRun) -> None:
    """Fold SGLang's gauges (set at the last decode log line) into `run` as one window."""
    run.engine_name = "sglang"
    if "sglang:spec_num_steps" in g:
        run.num_steps = run.num_steps or int(g["sglang:spec_num_steps"])
    if "sglang:spec_num_draft_tokens" in g:
        run.num_draft_tokens = run.num_draft_tokens or int(g["sglang:spec_num_draft_tokens"])
    run.formats[("sglang", "prometheus", "sglang:spec_accept_rate" in g)] += 1
    run.add(
        Window(
            accept_len=g["sglang:spec_accept_length"],
            accept_rate=g.get("sglang:spec_accept_rate"),
            throughput=g.get("sglang:gen_throughput"),
            running=int(g["sglang:num_running_reqs"]) if "sglang:num_running_reqs" in g else None,
            kind=Kind.PROMETHEUS,
        )
    )


def counters_window(
    c: dict[str, float], per_pos: dict[int, float], kind: Kind, engine: str = "vllm"
) -> Window:
    """vLLM's (or LMDeploy's) acceptance from its counters (totals, or their increases over an
    interval): accept len 1 + accepted / drafts, rate accepted / draft tokens, position i
    accepted at i / drafts (`kit.engines.vllm.acceptance.INTERVAL_FROM_COUNTERS`)."""
    drafts = c.get(f"{engine}:spec_decode_num_drafts", 0.0)
    draft_tokens = c.get(f"{engine}:spec_decode_num_draft_tokens", 0.0)
    accepted = c.get(f"{engine}:spec_decode_num_accepted_tokens", 0.0)
    return Window(
        accept_len=1 + accepted / drafts if drafts else None,
        accept_rate=accepted / draft_tokens if draft_tokens else None,
        per_position=tuple(per_pos[i] / drafts for i in sorted(per_pos)) if drafts else None,
        accepted=int(accepted) if draft_tokens else None,
        drafted=int(draft_tokens) if draft_tokens else None,
        kind=kind,
    )


def _counters(prefix: str, c: dict[str, float], per_pos: dict[int, float], run: LogRun) -> None:
    run.engine_name = COUNTER_ENGINES[prefix]
    drafts = c.get(f"{prefix}:spec_decode_num_drafts", 0.0)
    draft_tokens = c.get(f"{prefix}:spec_decode_num_draft_tokens", 0.0)
    if drafts:
        run.num_steps = run.num_steps or round(draft_tokens / drafts)
    v0 = "vllm:spec_decode_efficiency" in c  # V0 gauges (≤0.9.x): no per-draft counts
    run.formats[(run.engine_name, "prometheus-v0" if v0 else "prometheus-v1")] += 1
    run.add(counters_window(c, per_pos, Kind.COUNTERS, prefix))


def trtllm_window(scrape: Scrape, run: LogRun) -> None:
    """TensorRT-LLM's counters as one lifetime window. Every verify step drafts position 0, so
    the drafted count there is the number of drafts: accept len 1 + Σ accepted / drafts and
    position i's rate accepted at i / drafts, as vLLM's counters give them. Without the
    per-position counters (no finished request yet, or no per-request metrics) the token
    counters give the rate and the gauge the last iteration's accept length."""
    run.engine_name = "tensorrt_llm"
    c, drafted_at, accepted_at = scrape.sums, *(scrape.positions.get(n, {}) for n in TRT_POSITIONS)
    drafts = drafted_at.get(0, 0.0)
    accepted = c.get(TRT + "num_accepted_tokens", sum(accepted_at.values()))
    draft_tokens = c.get(TRT + "num_draft_tokens", sum(drafted_at.values()))
    if drafts:
        run.num_steps = run.num_steps or len(drafted_at)
        accept_len = 1 + sum(accepted_at.values()) / drafts
        per_position = tuple(accepted_at.get(i, 0.0) / drafts for i in sorted(drafted_at))
    else:
        accept_len, per_position = scrape.first.get(TRT + "acceptance_length"), None
    run.formats[("tensorrt_llm", "prometheus", bool(drafts))] += 1
    run.add(
        Window(
            accept_len=accept_len,
            accept_rate=accepted / draft_tokens if draft_tokens else None,
            per_position=per_position,
            accepted=int(accepted) if draft_tokens else None,
            drafted=int(draft_tokens) if draft_tokens else None,
            kind=Kind.COUNTERS if drafts else Kind.PROMETHEUS,
        )
    )
