"""What SGLang's decode log, metrics and per-request info print, and how the printed figures are
computed, release by release (paths inside the wheel's `sglang/srt/`).

A logged `accept len` is tokens emitted per verify step; the `accept rate` beside it changed
formula three times. The decode-line format narrows the release a log came from. How a drafted
token is verified at a temperature (`DRAFT_PROPOSAL`) sits at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kit.engines.base import DraftProposal, Row, VersionRange


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


# The decode log's `accept rate`.
ACCEPT_RATE: list[Row[RateFormula | None]] = [
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


# Decode-line formats by release.
DECODE_FORMATS: list[Row[DecodeFormat]] = [
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

# Optional fields that only some releases print.
FIELD_RANGES: dict[str, Row[str]] = {
    "cpu graph": Row(VersionRange("0.5.2"), "cpu graph", "0.5.2: `cpu graph` on CPU"),
    "npu graph": Row(VersionRange("0.5.9"), "npu graph",
                     "0.5.10 observability/scheduler_metrics_mixin.py:648-654"),
    "musa graph": Row(VersionRange("0.5.23"), "musa graph", "0.5.23 metrics_reporter.py:963-1042"),
    "cap len": Row(VersionRange("0.5.16"), "cap len", "0.5.23 metrics_reporter.py:963-1042"),
    "block accept len": Row(VersionRange("0.5.16"), "block accept len",
                            "0.5.23 metrics_reporter.py:963-1042"),
}  # fmt: skip


# Per-request meta_info keys and the releases that return them.
META_KEYS: dict[str, Row[str]] = {
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

# Does the accepted-token counter include drafted tokens the target verified past the request's last
# token (its stop token or length limit)? Each release's default worker.
STOP_COUNTING: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.5.11"), False,
        "spec v1 worker (SGLANG_ENABLE_SPEC_V2 off by default, 0.5.10 environ.py:442): tokens "
        "after a finished request's last one are set to -1 before accept_length is counted "
        "(0.5.10 srt/speculative/eagle_info.py L406-L436; 0.4.6.post1 eagle_utils.py:438-439)"),
    Row(VersionRange("0.5.11"), True,
        "spec v2 worker by default (0.5.11 environ.py:459; with the overlap scheduler, "
        "which --disable-overlap-schedule turned off up to 0.5.12; always from 0.5.15 "
        "speculative/spec_info.py:216): accepted drafts are summed from "
        "the verify lengths before the stop check (0.5.11 "
        "managers/scheduler_output_processor_mixin.py:365,442; 0.5.23 "
        "scheduler_components/batch_result_processor.py:785-788,986-991)"),
]  # fmt: skip

# What the verify kernel is given for a drafted token at a temperature, by default. At
# `--speculative-eagle-topk 1` the EAGLE worker drafts the argmax of the draft's logits (`fast_topk`
# of their softmax at topk 1 is `torch.max`; later an explicit argmax) and verification passes
# `tree_speculative_sampling_target_only` an all-zero `draft_probs`: the kernel accepts d when
# coin <= p(d) / threshold_acc or p(d) >= threshold_single (`<` and p(d) > 0 in the kernel shipped
# from 0.5.21), and on rejection writes p(d) into draft_probs and samples relu(p - draft_probs),
# p without d. At the default thresholds (1.0 and 1.0 in every release read) d is accepted with
# p(d): vLLM's rule. Other thresholds (launch flags, or `/set_internal_state` at run time) accept
# more and change the text's law away from p: not modelled. `--speculative-use-rejection-sampling`
# (0.5.14 on, off by default) samples the draft at the request's temperature and accepts with
# min(1, p/q) (`coin * q < p`): not modelled. Off CUDA (HIP up to its rejection path, NPU in some
# releases, CPU and XPU) a sampled request is verified greedily.
DRAFT_PROPOSAL: list[Row[DraftProposal]] = [
    Row(VersionRange("0.4.4.post2", "0.5.3"), DraftProposal.ARGMAX,
        "0.4.4.post2 speculative/eagle_worker.py:405-406,570-571 (fast_topk of the draft's softmax, "
        "torch.max at topk 1: eagle_utils.py:694-698), eagle_utils.py:357-380 (zero draft_probs, "
        "the kernel with the thresholds), server_args.py:137-138 (thresholds 1.0); 0.5.1 "
        "eagle_utils.py:474,484,496-501"),
    Row(VersionRange("0.5.3", "0.5.14"), DraftProposal.ARGMAX,
        "0.5.10 speculative/eagle_worker.py:684-685,1015-1016 (utils/common.py:2650-2653: torch.max "
        "at topk 1), eagle_info.py:351,363-376 (zero draft_probs, the kernel with the "
        "thresholds), server_args.py:500-501 (1.0); spec v2 0.5.11 eagle_info_v2.py:405,414"),
    Row(VersionRange("0.5.14", "0.5.21"), DraftProposal.ARGMAX,
        "0.5.14 speculative/eagle_worker_v2.py:660-664 (argmax at topk 1), eagle_utils.py:"
        "490-494,512-517,530 (zero draft_probs unless --speculative-use-rejection-sampling, "
        "server_args.py:1492-1495 default off), server_args.py:1484-1491 (thresholds 1.0)"),
    Row(VersionRange("0.5.21"), DraftProposal.ARGMAX,
        "0.5.23 speculative/eagle_worker_v2.py:867-879 (argmax at topk 1), eagle_utils.py:"
        "745-749,768-782, arg_groups/fields/spec.py:109-119 (thresholds 1.0, rejection sampling "
        "off); the kernel, shipped in the wheel from 0.5.21: "
        "sglang/kernels/jit/include/sgl_kernel/speculative/sampling.cuh:77-95"),
]  # fmt: skip
