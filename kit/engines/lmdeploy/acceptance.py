"""What LMDeploy's PyTorch engine logs and counts about speculative decoding, release by release
(paths inside the wheel's `lmdeploy/`; read in the released wheels, `pip download --no-deps
lmdeploy==X`).

Its stats logger appends `SpecDecoding metrics: …` to the periodic `Avg thr (in/out)` line, with
vLLM's field names but the rate printed with two decimals; the counters reset at every line, so each
line covers one logging interval.
"""

from __future__ import annotations

from kit.engines.base import Row, VersionRange

NAME = "lmdeploy"

# The spec-decode part of the periodic stats line (EAGLE-3 arrived in 0.11.0).
SPEC_LOG = Row(
    VersionRange("0.11.0"),
    "SpecDecoding metrics: Draft acceptance rate: {accepted / draft tokens · 100:.2f}%, "
    "Mean acceptance length: {1 + accepted / drafts:.2f}, Accepted: N tokens, Drafted: M tokens, "
    "Per-position acceptance rate: {accepted at i / drafts:.3f}, …",
    "0.18.0 lmdeploy/metrics/loggers.py:75-95 (message), :110-128 (appended to the "
    "`[time DPn] Avg thr (in/out)` line, counters reset after it)",
)

RATE_MEANING = (
    "accepted draft tokens / drafted tokens over the interval (bonus token excluded); zero "
    "acceptance prints 0.00%"
)

# Prometheus counters with vLLM's names under `lmdeploy:`, totals since the server started.
COUNTERS = Row(
    VersionRange("0.11.0"),
    "lmdeploy:spec_decode_num_drafts / _num_draft_tokens / _num_accepted_tokens / "
    "_num_accepted_tokens_per_pos{position}",
    "0.18.0 lmdeploy/metrics/loggers.py:211-234",
)

# Does the accepted-token counter include drafted tokens the target verified past the request's
# last token (its stop token or length limit)? The engine counts `output_token_ids > -1` of the
# verify step (rejection sampling's accepted prefix plus the bonus token); the stop check only
# returns `stop_pos`, which trims the sequence, never that tensor.
STOP_COUNTING: list[Row[bool]] = [
    Row(VersionRange("0.11.0", "0.15.0"), True,
        "0.11.0 pytorch/engine/engine.py:923 num_accepted_tokens = (next_token_ids > -1).sum() - 1 "
        "on BatchedOutputs(next_token_ids=output_token_ids) (engine/model_agent.py:815-824); "
        "the stop only trims the sequence (strategies/ar_spec/sequence.py:44-53 set_stop_pos)"),
    Row(VersionRange("0.15.0"), True,
        "0.15.0 pytorch/engine/engine_loop.py:372, 0.18.0 :409 num_accepted_tokens = "
        "(next_token_ids > -1).sum() - 1 on BatchedOutputs(next_token_ids=output_token_ids) "
        "(0.18.0 engine/model_agent/agent.py:906-919); the stop only trims the sequence "
        "(strategies/ar_spec/sequence.py:94-95 (0.15.0), :93-94 (0.18.0))"),
]  # fmt: skip
