"""vLLM's per-request acceptance (`--per-request-spec-decode-metrics summary|detailed`): the
`metrics.speculative_decoding` object of a completion, as a JSON response or pasted into a log.

`mean_acceptance_length` = 1 + accepted / `num_spec_steps`; `acceptance_histogram[j]` counts the
verify steps that accepted exactly j drafts, so position i was accepted in Σ_{j>i} hist[j] of them
(`kit.engines.vllm.acceptance.PER_REQUEST`).
"""

from __future__ import annotations

from kit.acceptance import fields
from kit.acceptance.model import Kind, Window

SIG = ("vllm", "request", None)
KEYS = ("num spec steps", "acceptance histogram")


def window(f: dict[str, fields.Value], line_no: int = 0) -> Window | None:
    """The request's window from its normalised fields; None when they are not this object."""
    if not any(k in f for k in KEYS) or "mean acceptance length" not in f:
        return None
    hist = fields.numbers(f.get("acceptance histogram"))
    steps = fields.count(f.get("num spec steps"))
    if steps is None and hist:
        steps = int(sum(hist))
    accepted = fields.count(f.get("num accepted draft tokens"))
    if accepted is None and hist:
        accepted = int(sum(j * n for j, n in enumerate(hist)))
    per_position = None
    if hist and steps:
        per_position = tuple(sum(hist[i + 1 :]) / steps for i in range(len(hist) - 1))
    return Window(
        accept_len=fields.number(f.get("mean acceptance length")),
        accept_rate=fields.number(f.get("draft acceptance rate")),
        per_position=per_position,
        accepted=accepted,
        drafted=fields.count(f.get("num draft tokens")),
        line_no=line_no,
        kind=Kind.VLLM_REQUEST,
    )
