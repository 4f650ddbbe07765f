"""What TensorRT-LLM reports and counts about speculative decoding.

`llm.get_stats()` iteration statistics: read in the public NVIDIA/TensorRT-LLM repository (its
PyPI wheel is a stub that fetches the real one from NVIDIA's index) at commit 086f6921cf23611d51fdb5b06b0acc4ae97aceb8.
Each statistics entry is one executor iteration; `specDecodingStats` sums the generation requests
that carried draft tokens in that iteration. What counts as accepted in the default EAGLE-3 mode
(one-model, `EagleDecodingConfig.eagle3_one_model = True`, sampled by
`Eagle3OneModelSampler(MTPSampler)`) was read for 1.2.0rc2.
"""

from __future__ import annotations

from kit.engines.base import Row, VersionRange

NAME = "tensorrt_llm"

# `specDecodingStats` in each `get_stats()` entry (JSON, also what trtllm-serve's /metrics returns).
ITERATION_STATS = Row(
    VersionRange("0"),
    "numDraftTokens, numAcceptedTokens, numRequestsWithDraftTokens, acceptanceLength = "
    "(numAcceptedTokens + numRequestsWithDraftTokens) / numRequestsWithDraftTokens",
    "cpp/tensorrt_llm/executor/jsonSerialization.cpp:34-35 (keys); "
    "tensorrt_llm/_torch/pyexecutor/py_executor.py `_update_iter_stats` (acceptance length: "
    "one target token plus the accepted drafts per request and iteration)",
)

# An iteration without drafted tokens (prefill only) reports no acceptance.
NO_DRAFTS_KEY = "numDraftTokens"

# Does the accepted-token counter include drafted tokens the target verified past the request's
# last token (its stop token or length limit)? The default (one-model) sampler.
STOP_COUNTING: list[Row[bool]] = [
    Row(VersionRange("1.2.0rc2"), True,
        "tensorrt_llm/_torch/speculative/mtp.py MTPSampler.update_requests: add_token loop "
        "breaks at the stop criteria, then py_num_accepted_draft_tokens = num_new_tokens - 1 "
        "counts every accepted token (speculative/eagle3.py Eagle3OneModelSampler(MTPSampler); "
        "stored copies of the same API, 1.2.0rc2 era)"),
]  # fmt: skip
