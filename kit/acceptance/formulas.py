"""What each engine release prints, and how it computes the printed rate: tables of Rows.

Every row cites the engine wheel's file:line (shared/reference/sglang-eagle3.md §F/§G,
vllm-eagle3.md §5). Log formats narrow the release a file came from; the rate formula says what
a logged `accept rate` means. Supporting a new release is adding a row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kit.engines import Row, VersionRange


@dataclass(frozen=True)
class RateFormula:
    """How the logged accept rate is computed from accept len.

    `denominator` names the count `n` the formula divides by: `num_steps + 1` or `D`
    (`speculative_num_draft_tokens`, falling back to num_steps + 1 when unset).
    """

    expr: str
    denominator: str
    meaning: str
    rate: Callable[[float, int], float]  # (accept_len, n) -> printed rate

    def zero_rate(self, n: int) -> float:
        """The rate printed when no draft token is ever accepted (accept len 1.00)."""
        return self.rate(1.0, n)

    def fits(self, accept_len: float, accept_rate: float, n: int) -> bool:
        """Whether a logged pair (both printed with :.2f) can come from this formula."""
        lo, hi = self.rate(accept_len - 0.005, n), self.rate(accept_len + 0.005, n)
        return min(lo, hi) - 0.0051 <= accept_rate <= max(lo, hi) + 0.0051


BONUS_PER_STEPS = RateFormula(
    expr="accept_len / (num_steps + 1)",
    denominator="num_steps + 1",
    meaning="tokens emitted per verify step (the target's bonus token counted as accepted) over "
    "num_steps + 1; zero acceptance prints 1/(num_steps + 1)",
    rate=lambda al, n: al / n,
)
BONUS_PER_D = RateFormula(
    expr="accept_len / D",
    denominator="D",
    meaning="tokens emitted per verify step (the target's bonus token counted as accepted) over "
    "D = speculative_num_draft_tokens; zero acceptance prints 1/D",
    rate=lambda al, n: al / n,
)
DRAFTS_ONLY = RateFormula(
    expr="(accept_len - 1) / (D - 1)",
    denominator="D",
    meaning="accepted drafts over proposed drafts per verify step (bonus token excluded); "
    "zero acceptance prints 0.00",
    rate=lambda al, n: (al - 1) / (n - 1) if n > 1 else 0.0,
)

# SGLang decode-log `accept rate` (sglang-eagle3.md §G).
SGLANG_ACCEPT_RATE: list[Row[RateFormula | None]] = [
    Row(VersionRange("0.4.4.post2", "0.5.3.post2"), None,
        "0.4.10 managers/scheduler_metrics_mixin.py:170-191 (no accept rate printed)"),
    Row(VersionRange("0.5.3.post2", "0.5.6"), BONUS_PER_STEPS,
        "0.5.3.post2 managers/scheduler_metrics_mixin.py:257-272"),
    Row(VersionRange("0.5.6", "0.5.11"), BONUS_PER_D,
        "0.5.6 managers/scheduler_metrics_mixin.py:276-294; "
        "0.5.10 observability/scheduler_metrics_mixin.py:608-657"),
    Row(VersionRange("0.5.11"), DRAFTS_ONLY,
        "0.5.11 observability/scheduler_metrics_mixin.py:528-547; "
        "0.5.23 managers/scheduler_components/metrics_reporter.py:973-1005"),
]  # fmt: skip

ACCEPT_LEN_SOURCE = (
    "sglang: accept_len = accepted_tokens / forward_ct = 1 + mean accepted drafts "
    "(0.4.8 managers/scheduler.py:1703-1704; 0.4.6.post1 speculative/eagle_utils.py:449)"
)


@dataclass(frozen=True)
class DecodeFormat:
    """The shape of an SGLang `Decode batch` line: header, accept-rate field, graph field, `, ` end."""

    header: str  # "dot" (`Decode batch.`), "iter" (`Decode batch [N],`), "comma" (`Decode batch,`)
    rate: bool
    graph: bool
    trailing: bool
    default: bool = True  # False: only with SGLANG_LOG_FORWARD_ITERS=1


# SGLang decode-line formats by release (sglang-eagle3.md §F.2).
SGLANG_DECODE_FORMATS: list[Row[DecodeFormat]] = [
    Row(VersionRange("0.4.4.post2", "0.4.6"), DecodeFormat("dot", False, False, True),
        "0.4.4.post2 managers/scheduler.py:1079-1087"),
    Row(VersionRange("0.4.6", "0.4.7"), DecodeFormat("dot", False, False, False),
        "0.4.6.post1 managers/scheduler.py:1044-1068"),
    Row(VersionRange("0.4.7", "0.4.9.post1"), DecodeFormat("dot", False, True, False),
        "0.4.8 managers/scheduler.py:1316-1342"),
    Row(VersionRange("0.4.9.post1", "0.5.3.post2"), DecodeFormat("dot", False, True, True),
        "0.4.10 managers/scheduler_metrics_mixin.py:170-191"),
    Row(VersionRange("0.5.3.post2", "0.5.4"), DecodeFormat("dot", True, True, True),
        "0.5.3.post2 managers/scheduler_metrics_mixin.py:251,272"),
    Row(VersionRange("0.5.4", "0.5.5"), DecodeFormat("iter", True, True, True),
        "0.5.4 managers/scheduler_metrics_mixin.py:249,270"),
    Row(VersionRange("0.5.5", "0.5.9"), DecodeFormat("comma", True, True, True),
        "0.5.6 managers/scheduler_metrics_mixin.py:270-307"),
    Row(VersionRange("0.5.5", "0.5.9"), DecodeFormat("iter", True, True, True, default=False),
        "0.5.6 managers/scheduler_metrics_mixin.py:270-307 (SGLANG_LOG_FORWARD_ITERS=1)"),
    Row(VersionRange("0.5.9"), DecodeFormat("comma", True, True, False),
        "0.5.10 observability/scheduler_metrics_mixin.py:608-657"),
    Row(VersionRange("0.5.9"), DecodeFormat("iter", True, True, False, default=False),
        "0.5.10 observability/scheduler_metrics_mixin.py:646 (SGLANG_LOG_FORWARD_ITERS=1)"),
]  # fmt: skip

# Optional fields that only some releases print (sglang-eagle3.md §F.2).
SGLANG_FIELD_RANGES: dict[str, Row[str]] = {
    "cpu graph": Row(VersionRange("0.5.2"), "cpu graph", "0.5.2: `cpu graph` on CPU"),
    "npu graph": Row(VersionRange("0.5.9"), "npu graph",
                     "0.5.10 observability/scheduler_metrics_mixin.py:648-654"),
    "musa graph": Row(VersionRange("0.5.23"), "musa graph", "0.5.23 metrics_reporter.py:963-1042"),
    "cap len": Row(VersionRange("0.5.16"), "cap len", "0.5.23 metrics_reporter.py:963-1042"),
    "block accept len": Row(VersionRange("0.5.16"), "block accept len",
                            "0.5.23 metrics_reporter.py:963-1042"),
}  # fmt: skip


@dataclass(frozen=True)
class VllmFamily:
    """One vLLM spec-decode log family."""

    name: str
    rate_meaning: str


V1_RATE = (
    "accepted draft tokens / drafted tokens over the interval (bonus token excluded); "
    "zero acceptance prints 0.0%"
)
# vLLM spec-decode log families (vllm-eagle3.md §5).
VLLM_FAMILIES: dict[str, Row[VllmFamily]] = {
    "v0": Row(VersionRange("0", "0.10.0"), VllmFamily("V0 Speculative metrics", V1_RATE),
              "vllm/engine/metrics.py:475 (V0 engine)"),
    "v1-0.8.3": Row(VersionRange("0.8.3", "0.8.5"), VllmFamily("V1 SpecDecoding (0.8.3-0.8.4)", V1_RATE),
                    "vllm/v1/spec_decode/metrics.py (0.8.3-0.8.4)"),
    "v1-0.8.5": Row(VersionRange("0.8.5", "0.10.2"),
                    VllmFamily("V1 SpecDecoding (0.8.5-0.10.1.1)", V1_RATE),
                    "vllm/v1/spec_decode/metrics.py:82 (0.8.5), :87 (0.9.2-0.10.1.1)"),
    "v1-0.10.2": Row(VersionRange("0.10.2"), VllmFamily("V1 SpecDecoding (0.10.2+)", V1_RATE),
                     "vllm/v1/spec_decode/metrics.py:96 (0.10.2, 0.11.0), :100 (0.11.2-0.18), "
                     ":120 (0.24-0.33)"),
}  # fmt: skip

# `[metrics.py:N]` in the log prefix pins the release further (vllm-eagle3.md §5, call line).
VLLM_LOG_CALL_LINE: dict[int, Row[str]] = {
    82: Row(VersionRange("0.8.5", "0.9.2"), "metrics.py:82", "vllm 0.8.5 v1/spec_decode/metrics.py:82"),
    87: Row(VersionRange("0.9.2", "0.10.2"), "metrics.py:87", "vllm 0.9.2-0.10.1.1 metrics.py:87"),
    96: Row(VersionRange("0.10.2", "0.11.2"), "metrics.py:96", "vllm 0.10.2, 0.11.0 metrics.py:96"),
    100: Row(VersionRange("0.11.2", "0.24.0"), "metrics.py:100", "vllm 0.11.2-0.18 metrics.py:100"),
    120: Row(VersionRange("0.24.0"), "metrics.py:120", "vllm 0.24-0.33 metrics.py:120"),
}  # fmt: skip

VLLM_ACCEPT_LEN_SOURCE = (
    "vllm: mean acceptance length = 1 + accepted / num_drafts; per-position = accepted at "
    "position i / num_drafts (vllm/v1/spec_decode/metrics.py)"
)

# SGLang per-request meta_info keys and the releases that return them (sglang-eagle3.md §F.3).
SGLANG_META_KEYS: dict[str, Row[str]] = {
    "spec_accept_rate": Row(VersionRange("0.5.3.post2"), "spec_accept_rate",
                            "managers/tokenizer_manager.py (>=0.5.3.post2)"),
    "spec_accept_token_num": Row(VersionRange("0.5.6", "0.5.11"), "spec_accept_token_num",
                                 "0.5.10 managers/tokenizer_manager.py:1931"),
    "spec_accept_histogram": Row(VersionRange("0.5.10", "0.5.16"), "spec_accept_histogram",
                                 "0.5.10 managers/tokenizer_manager.py:1936-1943"),
    "spec_accepted_drafts": Row(VersionRange("0.5.11", "0.5.16"), "spec_accepted_drafts",
                                "managers/tokenizer_manager.py (0.5.11-0.5.15)"),
    "spec_num_correct_drafts": Row(VersionRange("0.5.12"), "spec_num_correct_drafts",
                                   "managers/tokenizer_manager.py (>=0.5.12)"),
}  # fmt: skip
