"""What LMDeploy's PyTorch engine logs about speculative decoding (paths inside the wheel's
`lmdeploy/`; read in the released wheel, `pip download --no-deps lmdeploy==0.18.0`).

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
