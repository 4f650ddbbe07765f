"""TensorRT-LLM iteration statistics (`llm.get_stats()`, trtllm-serve `/metrics`): each entry's
`specDecodingStats` covers one executor iteration
(`kit.engines.tensorrt_llm.acceptance.ITERATION_STATS`).

An iteration in which no request carried draft tokens (prefill only) holds no acceptance figure
and gives no window, as TensorRT-LLM's own acceptance-length tests skip it.
"""

from __future__ import annotations

from kit.acceptance import fields
from kit.acceptance.model import Kind, Window

SIG = ("tensorrt_llm", "iteration")
KEYS = ("num requests with draft tokens", "acceptance length")


def window(f: dict[str, fields.Value], line_no: int = 0) -> Window | None:
    """The iteration's window; None for another object or an iteration without drafts."""
    if not any(k in f for k in KEYS) or "mean acceptance length" in f:
        return None
    drafted = fields.count(f.get("num draft tokens"))
    accepted = fields.count(f.get("num accepted tokens"))
    requests = fields.count(f.get("num requests with draft tokens"))
    if not drafted or accepted is None:
        return None
    al = fields.number(f.get("acceptance length"))
    if requests:
        al = (accepted + requests) / requests
    return Window(
        accept_len=al,
        accept_rate=accepted / drafted,
        accepted=accepted,
        drafted=drafted,
        running=requests,  # the requests that drafted this iteration: its batch
        line_no=line_no,
        kind=Kind.TRT_ITERATION,
    )
