"""Read-only hooks on SGLang's own acceptance counters (written against sglang 0.5.10's classes).

- `Scheduler.update_spec_metrics(bs, num_accepted_tokens)` (`sglang/srt/observability/
  scheduler_metrics_mixin.py:180-183`): the scheduler's count of one decode batch's verify steps,
  `spec_num_accepted_tokens += num_accepted_tokens + bs` and `spec_num_forward_ct += bs`, the two
  figures the decode log divides for its `accept len` (`:614-616`). `process_batch_result_decode`
  calls it once per decode batch (`managers/scheduler_output_processor_mixin.py:426`).
- `Scheduler.process_batch_result_decode(batch, result)` (`:374`): the result being counted, whose
  `accept_length_per_req_cpu` (accepted drafts per request, `speculative/eagle_worker.py:339`, or
  `scheduler_output_processor_mixin.py:344` under the overlap scheduler) splits the batch's count
  by request, so the report gets the per-position counts vLLM's scheduler gives.

Drafted per verify step: D - 1, with D = `speculative_num_draft_tokens`, falling back to
`speculative_num_steps + 1` as the decode log's accept rate does (`scheduler_metrics_mixin.py:
617-621`).
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

from kit.watch import evidence
from kit.watch.lazy import when_imported
from kit.watch.sglang_hooks import _engine
from kit.watch.vllm_hooks import _wrap

MODULE = "sglang.srt.managers.scheduler"
_current = threading.local()  # the batch result `process_batch_result_decode` is handling
_state = {"engine": False}


def install() -> None:
    when_imported(MODULE, _patch)


def _patch(module: ModuleType) -> None:
    cls = module.Scheduler
    _wrap(cls, "process_batch_result_decode", _decode_hook)
    _wrap(cls, "update_spec_metrics", _count_hook)


def _decode_hook(original: Any) -> Any:
    def process_batch_result_decode(self, batch, result, *args, **kwargs):  # type: ignore[no-untyped-def]
        previous = getattr(_current, "result", None)
        _current.result = result
        try:
            return original(self, batch, result, *args, **kwargs)
        finally:
            _current.result = previous

    return process_batch_result_decode


def _count_hook(original: Any) -> Any:
    def update_spec_metrics(self, bs, num_accepted_tokens, *args, **kwargs):  # type: ignore[no-untyped-def]
        if bs:
            if not _state["engine"]:  # the counts name their engine, load hook or not
                _state["engine"] = True
                evidence.record({"engine": _engine()})
            count_batch(drafted_per_step(self), bs, num_accepted_tokens)
        return original(self, bs, num_accepted_tokens, *args, **kwargs)

    return update_spec_metrics


def count_batch(drafted: int, bs: int, accepted: int) -> None:
    """One decode batch as the scheduler counted it: per request where the result being handled
    splits the count the same way, else in sum only (never a split the engine did not make)."""
    lengths = per_request(bs, accepted)
    if lengths is None:
        evidence.count_unsplit(bs, drafted, accepted)
        return
    for n in lengths:
        evidence.count_draft(drafted, int(n))


def per_request(bs: int, accepted: int) -> list[int] | None:
    """The accepted drafts of each request in the batch being counted, when they add up to the
    scheduler's own figures."""
    result = getattr(_current, "result", None)
    lengths = getattr(result, "accept_length_per_req_cpu", None)
    if not isinstance(lengths, list) or len(lengths) != bs or sum(lengths) != accepted:
        return None
    return lengths


def drafted_per_step(scheduler: Any) -> int:
    """D - 1: the draft tokens each request's verify step checked."""
    args = getattr(scheduler, "server_args", None)
    steps = getattr(args, "speculative_num_steps", None) or 0
    d = getattr(args, "speculative_num_draft_tokens", None) or steps + 1
    return max(int(d) - 1, 0)
