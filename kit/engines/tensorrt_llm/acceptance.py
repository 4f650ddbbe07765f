"""What TensorRT-LLM reports about speculative decoding: `llm.get_stats()` iteration statistics.

Read in the public NVIDIA/TensorRT-LLM repository (its PyPI wheel is a stub that fetches the real
one from NVIDIA's index) at commit 086f6921cf23611d51fdb5b06b0acc4ae97aceb8. Each statistics entry
is one executor iteration; `specDecodingStats` sums the generation requests that carried draft
tokens in that iteration.
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
