"""What TensorRT-LLM counts as accepted draft tokens (1.2.0rc2), for the kit's offline figures.

The default EAGLE-3 mode is one-model (`EagleDecodingConfig.eagle3_one_model = True`), sampled by
`Eagle3OneModelSampler(MTPSampler)`.
"""

from __future__ import annotations

from kit.engines.base import Row, VersionRange

# Does the accepted-token counter include drafted tokens the target verified past the request's
# last token (its stop token or length limit)? The default (one-model) sampler.
STOP_COUNTING: list[Row[bool]] = [
    Row(VersionRange("1.2.0rc2"), True,
        "tensorrt_llm/_torch/speculative/mtp.py MTPSampler.update_requests: add_token loop "
        "breaks at the stop criteria, then py_num_accepted_draft_tokens = num_new_tokens - 1 "
        "counts every accepted token (speculative/eagle3.py Eagle3OneModelSampler(MTPSampler); "
        "stored copies of the same API, 1.2.0rc2 era)"),
]  # fmt: skip
