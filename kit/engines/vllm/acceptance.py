"""What vLLM's spec-decode log and metrics print, and how the figures are computed, release by
release (paths inside the wheel's `vllm/`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kit.engines.base import Row, VersionRange


@dataclass(frozen=True)
class LogFamily:
    """One vLLM spec-decode log family."""

    name: str
    rate_meaning: str


V1_RATE = (
    "accepted draft tokens / drafted tokens over the interval (bonus token excluded); "
    "zero acceptance prints 0.0%"
)
# Spec-decode log families.
FAMILIES: dict[str, Row[LogFamily]] = {
    "v0": Row(VersionRange("0", "0.10.0"), LogFamily("V0 Speculative metrics", V1_RATE),
              "vllm/engine/metrics.py:475 (V0 engine)"),
    "v1-0.8.3": Row(VersionRange("0.8.3", "0.8.5"), LogFamily("V1 SpecDecoding (0.8.3-0.8.4)", V1_RATE),
                    "vllm/v1/spec_decode/metrics.py (0.8.3-0.8.4)"),
    "v1-0.8.5": Row(VersionRange("0.8.5", "0.10.2"),
                    LogFamily("V1 SpecDecoding (0.8.5-0.10.1.1)", V1_RATE),
                    "vllm/v1/spec_decode/metrics.py:82 (0.8.5), :87 (0.9.2-0.10.1.1)"),
    "v1-0.10.2": Row(VersionRange("0.10.2"), LogFamily("V1 SpecDecoding (0.10.2+)", V1_RATE),
                     "vllm/v1/spec_decode/metrics.py:96 (0.10.2, 0.11.0), :100 (0.11.2-0.18), "
                     ":120 (0.24-0.33)"),
}  # fmt: skip

# `[metrics.py:N]` in the log prefix pins the release further (the line of the `log_fn(` call).
LOG_CALL_LINE: dict[int, Row[str]] = {
    82: Row(VersionRange("0.8.5", "0.9.2"), "metrics.py:82", "vllm 0.8.5 v1/spec_decode/metrics.py:82"),
    87: Row(VersionRange("0.9.2", "0.10.2"), "metrics.py:87", "vllm 0.9.2-0.10.1.1 metrics.py:87"),
    96: Row(VersionRange("0.10.2", "0.11.2"), "metrics.py:96", "vllm 0.10.2, 0.11.0 metrics.py:96"),
    100: Row(VersionRange("0.11.2", "0.24.0"), "metrics.py:100", "vllm 0.11.2-0.18 metrics.py:100"),
    120: Row(VersionRange("0.24.0"), "metrics.py:120", "vllm 0.24-0.33 metrics.py:120"),
}  # fmt: skip

ACCEPT_LEN_SOURCE = (
    "vllm: mean acceptance length = 1 + accepted / num_drafts; per-position = accepted at "
    "position i / num_drafts (vllm/v1/spec_decode/metrics.py)"
)

# Does the accepted-token counter include drafted tokens the target verified past the request's last
# token (its stop token or length limit)? Each release's default worker.
STOP_COUNTING: list[Row[bool]] = [
    Row(VersionRange("0.9.2"), True,
        "num_accepted is taken before the stop check trims the tokens (0.11.2 "
        "v1/core/sched/scheduler.py L1023-L1040, trim at L1050, L1171-L1189)"),
]  # fmt: skip
