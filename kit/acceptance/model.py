"""The data model: a run is a series of acceptance windows plus what is known about the engine.

Every source (SGLang decode log, vLLM spec-decode log, Prometheus text, server-info JSON,
`vllm bench serve` output, LMDeploy, llama.cpp and TensorRT-LLM figures) becomes the same
`Window`s, so analysis and plots never care where a figure came from. A window says what it covers
(`Scope`): one logging interval, one request, one benchmark run, or the server's whole life so far
(SGLang's `avg_spec_accept_length`), because a lifetime average cannot show a change that just
happened. Summary statistics are exact and streamed (a histogram of logged values, which are printed
with two or three decimals), so a multi-gigabyte log parses in flat memory; the window series itself
is thinned by stride doubling once it passes `MAX_WINDOWS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

MAX_WINDOWS = 50_000
MAX_EXAMPLES = 5
AT_FLOOR = 1.005  # accept len below this prints as 1.00: no draft accepted
# accept len at or below this is near the floor: about one draft in ten steps accepted
NEAR_ZERO_ACCEPT_LEN = 1.1


class Scope(StrEnum):
    """What one window's figures cover."""

    INTERVAL = "interval"  # one logging interval or iteration: counters reset at each line
    REQUEST = "request"  # one request from its first token to its last
    RUN = "run"  # one benchmark or offline run, start to end
    LIFETIME = "lifetime"  # everything since the server started: cumulative


class Kind(StrEnum):
    """Where a window came from; each source covers one `Scope`."""

    DECODE = "decode"  # SGLang `Decode batch` line
    AVG_SPEC = "avg_spec"  # SGLang `avg_spec_accept_length=` line
    SERVER_INFO = "server_info"  # SGLang /get_server_info internal_states
    META_INFO = "meta_info"  # SGLang per-request meta_info
    PROMETHEUS = "prometheus"  # one scrape of SGLang's gauges: set at the last decode log line
    COUNTERS = "counters"  # one scrape of vLLM's counters: totals since the server started
    PROBE = "probe"  # two scrapes of vLLM's counters differenced: the interval between them
    SPEC_LOG = "spec_log"  # vLLM / LMDeploy `SpecDecoding metrics:` line
    V0_LOG = "v0_log"  # vLLM V0 `Speculative metrics:` line
    VLLM_REQUEST = "vllm_request"  # vLLM per-request `speculative_decoding` metrics
    BENCH = "bench"  # `vllm bench serve` result block
    EXAMPLE = "example"  # vLLM examples/offline_inference/spec_decode.py output
    LLAMA_REQUEST = "llama_request"  # llama.cpp `draft acceptance = …` line per request
    LLAMA_STATS = "llama_stats"  # llama.cpp `statistics draft-…:` line
    TRT_ITERATION = "trt_iteration"  # TensorRT-LLM get_stats() specDecodingStats

    @property
    def scope(self) -> Scope:
        return _SCOPES.get(self, Scope.INTERVAL)


_SCOPES = {
    Kind.AVG_SPEC: Scope.LIFETIME,
    Kind.SERVER_INFO: Scope.LIFETIME,
    Kind.LLAMA_STATS: Scope.LIFETIME,
    Kind.COUNTERS: Scope.LIFETIME,
    Kind.META_INFO: Scope.REQUEST,
    Kind.VLLM_REQUEST: Scope.REQUEST,
    Kind.LLAMA_REQUEST: Scope.REQUEST,
    Kind.BENCH: Scope.RUN,
    Kind.EXAMPLE: Scope.RUN,
}


@dataclass(slots=True)
class Window:
    """One logged interval (a decode-log line, a metrics scrape, a request, a bench block)."""

    t: float | None = None  # seconds on the log's clock (naive timestamps read as UTC)
    accept_len: float | None = None  # mean tokens emitted per verify step, bonus token included
    accept_rate: float | None = None  # as logged (0..1), meaning depends on the release
    per_position: tuple[float, ...] | None = None  # P(draft at position i accepted)
    accepted: int | None = None  # accepted draft tokens in the window
    drafted: int | None = None  # proposed draft tokens in the window
    throughput: float | None = None  # generated tokens per second
    running: int | None = None  # running requests
    line_no: int = 0
    kind: Kind = Kind.DECODE

    @property
    def at_floor(self) -> bool:
        """No draft accepted: zero accepted tokens, or accept len 1.00 as printed."""
        if self.accepted is not None and self.drafted:
            return self.accepted == 0
        return self.accept_len is not None and self.accept_len < AT_FLOOR


class Stat:
    """Exact count/mean/min/max/median over a stream of printed (rounded) values, in bounded memory.

    `median=False` keeps no histogram (throughput: thousands of distinct values, no median shown).
    """

    __slots__ = ("count", "hist", "max", "min", "total")

    def __init__(self, median: bool = True) -> None:
        self.count = 0
        self.total = 0.0
        self.min = float("inf")
        self.max = float("-inf")
        self.hist: Counter[float] | None = Counter() if median else None

    def add(self, v: float, n: int = 1) -> None:
        """Fold `n` occurrences of `v`."""
        self.count += n
        self.total += v * n
        if v < self.min:
            self.min = v
        if v > self.max:
            self.max = v
        if self.hist is not None:
            self.hist[v] += n  # logged values carry 2-3 decimals: few distinct keys

    def add_summary(self, count: int, total: float, lo: float, hi: float) -> None:
        """Fold values already summed elsewhere (no median is kept for them)."""
        self.count += count
        self.total += total
        self.min = min(self.min, lo)
        self.max = max(self.max, hi)

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def p50(self) -> float | None:
        """Lower median (None without a histogram)."""
        if not self.count or self.hist is None:
            return None
        half, seen = (self.count + 1) // 2, 0
        for v in sorted(self.hist):
            seen += self.hist[v]
            if seen >= half:
                return v
        return None  # unreachable: counts sum to self.count

    def to_dict(self) -> dict[str, float | None]:
        if not self.count:
            return {"mean": None, "p50": None, "min": None, "max": None}
        return {
            "mean": round(self.mean, 4),
            "p50": self.p50,
            "min": self.min,
            "max": self.max,
        }


@dataclass
class LogRun:
    """One source file: its windows, the engine that wrote it, and what could not be read."""

    source: str
    engine_name: str | None = None  # "sglang" | "vllm" | "lmdeploy" | "tensorrt_llm" | "llama.cpp"
    engine: str | None = None  # "sglang==0.5.10" (given or inferred) or a range label
    engine_given: bool = False
    num_steps: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None
    windows: list[Window] = field(default_factory=list)
    window_count: int = 0
    stride: int = 1
    formats: Counter[tuple] = field(default_factory=Counter)  # format signature -> lines
    scopes: Counter[Scope] = field(default_factory=Counter)  # what the windows cover
    unparsed_lines: int = 0
    unparsed_reasons: Counter[str] = field(default_factory=Counter)
    unparsed_examples: list[str] = field(default_factory=list)
    other_lines: int = 0  # engine lines that carry no acceptance figure (prefill, warnings)
    accept_len: Stat = field(default_factory=Stat)
    accept_rate: Stat = field(default_factory=Stat)
    throughput: Stat = field(default_factory=lambda: Stat(median=False))
    spec_windows: int = 0  # windows with an acceptance figure (every one, not only those kept)
    floor_windows: int = 0  # of those, windows where no draft was accepted
    accepted: int = 0  # accepted draft tokens, over windows that count them
    drafted: int = 0  # proposed draft tokens, over the same windows
    position_sums: list[float] = field(default_factory=list)
    position_weight: float = 0.0
    notes: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # e.g. server_info version
    example_lines: dict[str, str] = field(default_factory=dict)  # "first" / "floor" -> log line
    # Filled by release inference (kit.acceptance.release):
    release_range: Any = None  # VersionRange the formats allow, or None
    format_sources: list[str] = field(default_factory=list)  # engine file:line per format seen
    formula: Any = None  # Row[RateFormula | None] in force, or None when unknown
    rate_denominator: int | None = None  # n the formula divides by
    readings: list[dict[str, Any]] = field(default_factory=list)  # formulas the text allows
    conflicts: list[str] = field(default_factory=list)

    def add(self, w: Window) -> None:
        """Fold a window into the streamed statistics and the (thinned) series."""
        if w.accept_len is not None:
            self.accept_len.add(w.accept_len)
        if w.accept_rate is not None:
            self.accept_rate.add(w.accept_rate)
        if w.throughput is not None:
            self.throughput.add(w.throughput)
        if w.accept_len is not None or w.accepted is not None:
            self.spec_windows += 1
            self.floor_windows += w.at_floor
            self.scopes[w.kind.scope] += 1
        if w.accepted is not None and w.drafted:
            self.accepted += w.accepted
            self.drafted += w.drafted
        if w.per_position:
            self.add_positions(w)
        if self.take():
            self.keep(w)

    def add_positions(self, w: Window) -> None:
        """Fold a window's per-position rates, weighted by its drafted tokens."""
        weight = float(w.drafted) if w.drafted else 1.0
        if len(self.position_sums) < len(w.per_position):
            self.position_sums.extend([0.0] * (len(w.per_position) - len(self.position_sums)))
        for i, p in enumerate(w.per_position):
            self.position_sums[i] += p * weight
        self.position_weight += weight

    def take(self) -> bool:
        """Count one more window; True when the thinned series keeps it (every stride-th)."""
        self.window_count += 1
        return (self.window_count - 1) % self.stride == 0

    def keep(self, w: Window) -> None:
        """Append a window `take` chose; a full series drops every other window."""
        self.windows.append(w)
        if len(self.windows) >= MAX_WINDOWS:
            self.windows = self.windows[::2]
            self.stride *= 2

    def take_block(self, count: int, windows: Callable[[np.ndarray], list[Window]]) -> None:
        """Count `count` more windows folded elsewhere; keep those the series would keep, exactly
        as `count` calls of `take` would. `windows(indices)` builds the windows at those
        indices (0 … count-1) in one go; when the stride doubles part way, the ones built for
        the old stride are dropped."""
        start, end = self.window_count, self.window_count + count
        wanted = np.arange(start + (-start % self.stride), end, self.stride)
        for index, w in zip(wanted.tolist(), windows(wanted - start), strict=True):
            if index % self.stride:
                continue  # the series was thinned (stride doubled) after these were built
            self.window_count = index + 1
            self.keep(w)
        self.window_count = end

    def unparsed(self, reason: str, line: str, line_no: int) -> None:
        self.unparsed_lines += 1
        self.unparsed_reasons[reason] += 1
        if len(self.unparsed_examples) < MAX_EXAMPLES:
            self.unparsed_examples.append(f"{line_no}: {line[:160]!r}")

    @property
    def per_position(self) -> list[float]:
        """Acceptance per draft position, weighted by drafted tokens where they are known."""
        if not self.position_weight:
            return []
        return [round(s / self.position_weight, 4) for s in self.position_sums]

    @property
    def draft_share(self) -> float | None:
        """Accepted drafts over proposed drafts, where windows count both."""
        return self.accepted / self.drafted if self.drafted else None
