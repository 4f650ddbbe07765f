"""Read-only hooks on SGLang's own acceptance counters, placed by the release table in
`kit.watch.sglang_sites` (which class counts, which result list splits the count per request).

- `update_spec_metrics(bs, drafts, ...)`: the engine's count of one decode batch's verify steps,
  the figures its decode log divides for `accept len`. The hook records it before the engine does.
- `process_batch_result_decode(batch, result)`: the caller, handling the batch result whose
  per-request list (accepted drafts, bonus excluded) splits that count, so the report gets the
  per-position counts vLLM's scheduler gives. The list is used only where it adds up to the count.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

from kit.watch import evidence
from kit.watch.lazy import when_imported
from kit.watch.sglang_hooks import _engine
from kit.watch.sglang_sites import CountSite, modules, site_for
from kit.watch.vllm_hooks import _wrap

_current = threading.local()  # the batch result `process_batch_result_decode` is handling
_state = {"engine": False}


def install() -> None:
    for name in sorted(modules()):
        when_imported(name, _patch)


def _patch(module: ModuleType) -> None:
    """Wrap the methods this release's row places in `module` (none outside the table)."""
    row = site_for(_engine()["version"])
    if row is None:
        return
    site = row.value
    for where, method, make in (
        (site.decoder, "process_batch_result_decode", _decode_hook),
        (site.counter, "update_spec_metrics", lambda original: _count_hook(original, site)),
    ):
        name, cls = where.split(":")
        if name == module.__name__ and hasattr(module, cls):
            _wrap(getattr(module, cls), method, make)


def _decode_hook(original: Any) -> Any:
    def process_batch_result_decode(self, batch, result, *args, **kwargs):  # type: ignore[no-untyped-def]
        previous = getattr(_current, "result", None)
        _current.result = result
        try:
            return original(self, batch, result, *args, **kwargs)
        finally:
            _current.result = previous

    return process_batch_result_decode


def _count_hook(original: Any, site: CountSite) -> Any:
    def update_spec_metrics(self, bs, drafts, *args, **kwargs):  # type: ignore[no-untyped-def]
        if bs:
            if not _state["engine"]:  # the counts name their engine, load hook or not
                _state["engine"] = True
                evidence.record({"engine": _engine()})
            lengths = per_request(getattr(_current, "result", None), site.per_request, bs, drafts)
            count_batch(site.drafted(self), bs, drafts, lengths)
        return original(self, bs, drafts, *args, **kwargs)

    return update_spec_metrics


def count_batch(drafted: int, bs: int, accepted: int, lengths: list[int] | None) -> None:
    """One decode batch as the engine counted it: per request where `lengths` split the count,
    else in sum only (never a split the engine did not make)."""
    if lengths is None:
        evidence.count_unsplit(bs, drafted, accepted)
        return
    for n in lengths:
        evidence.count_draft(drafted, int(n))


def per_request(result: Any, attr: str | None, bs: int, accepted: int) -> list[int] | None:
    """The accepted drafts of each request in the batch being counted, read from the result's
    `attr` list, when they add up to the engine's own figures."""
    lengths = getattr(result, attr, None) if attr else None
    if not isinstance(lengths, list) or len(lengths) != bs or sum(lengths) != accepted:
        return None
    return lengths
