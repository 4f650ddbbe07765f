"""How LMDeploy counts speculative decoding in its metrics, release by release (paths inside the
wheel's `lmdeploy/`).
"""

from __future__ import annotations

from kit.engines.base import Row, VersionRange

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
