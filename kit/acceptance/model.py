"""The data model: a run is a series of acceptance windows plus what is known about the engine.

Every source (SGLang decode log, vLLM spec-decode log, Prometheus text, server-info JSON,
`vllm bench serve` output) becomes the same `Window`s, so analysis and plots never care where a
figure came from. Summary statistics are exact and streamed (a histogram of logged values, which
are printed with two or three decimals), so a multi-gigabyte log parses in flat memory; the window
series itself is thinned by stride doubling once it passes `MAX_WINDOWS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_WINDOWS = 50_000
MAX_EXAMPLES = 5
AT_FLOOR = 1.005  # accept len below this prints as 1.00: no draft accepted


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
    kind: str = "decode"  # decode | prometheus | server_info | meta_info | bench | avg_spec

    @property
    def at_floor(self) -> bool:
        """No draft accepted: zero accepted tokens, or accept len 1.00 as printed."""
        if self.accepted is not None and self.drafted:
            return self.accepted == 0
        return self.accept_len is not None and self.accept_len < AT_FLOOR


class Stat:
    """Exact count/mean/min/max/median over a stream of printed (rounded) values, in bounded memory."""

    __slots__ = ("count", "hist", "max", "min", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.min = float("inf")
        self.max = float("-inf")
        self.hist: Counter[float] = Counter()

    def add(self, v: float, n: int = 1) -> None:
        """Fold `n` occurrences of `v`."""
        self.count += n
        self.total += v * n
        if v < self.min:
            self.min = v
        if v > self.max:
            self.max = v
        self.hist[v] += n  # logged values carry 2-3 decimals: few distinct keys

    def add_counts(self, counts: Mapping[str, int]) -> None:
        """Fold printed values counted as text (each distinct text is parsed once)."""
        for text, n in counts.items():
            self.add(float(text), n)

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def p50(self) -> float | None:
        """Lower median."""
        if not self.count:
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
class Run:
    """One source file: its windows, the engine that wrote it, and what could not be read."""

    source: str
    engine_name: str | None = None  # "sglang" | "vllm"
    engine: str | None = None  # "sglang==0.5.10" (given or inferred) or a range label
    engine_given: bool = False
    num_steps: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None
    windows: list[Window] = field(default_factory=list)
    window_count: int = 0
    stride: int = 1
    formats: Counter[str] = field(default_factory=Counter)  # format signature -> lines
    unparsed_lines: int = 0
    unparsed_reasons: Counter[str] = field(default_factory=Counter)
    unparsed_examples: list[str] = field(default_factory=list)
    other_lines: int = 0  # engine lines that carry no acceptance figure (prefill, warnings)
    accept_len: Stat = field(default_factory=Stat)
    accept_rate: Stat = field(default_factory=Stat)
    throughput: Stat = field(default_factory=Stat)
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
    conflicts: list[str] = field(default_factory=list)

    def add(self, w: Window) -> None:
        """Fold a window into the streamed statistics and the (thinned) series."""
        if w.accept_len is not None:
            self.accept_len.add(w.accept_len)
        if w.accept_rate is not None:
            self.accept_rate.add(w.accept_rate)
        if w.throughput is not None:
            self.throughput.add(w.throughput)
        if w.per_position:
            weight = float(w.drafted) if w.drafted else 1.0
            if len(self.position_sums) < len(w.per_position):
                self.position_sums.extend([0.0] * (len(w.per_position) - len(self.position_sums)))
            for i, p in enumerate(w.per_position):
                self.position_sums[i] += p * weight
            self.position_weight += weight
        if self.take():
            self.keep(w)

    def take(self) -> bool:
        """Count one more window; True when the thinned series keeps it (every stride-th).

        Lets a reader that folds statistics in bulk build a `Window` only for kept windows.
        """
        self.window_count += 1
        return (self.window_count - 1) % self.stride == 0

    def keep(self, w: Window) -> None:
        """Append a window `take` chose; a full series drops every other window."""
        self.windows.append(w)
        if len(self.windows) >= MAX_WINDOWS:
            self.windows = self.windows[::2]
            self.stride *= 2

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
