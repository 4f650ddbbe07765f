"""What an instrumented process has seen, and the writes of it into the report.

Engine-neutral: the vLLM and SGLang hooks call these. Every call is cheap and never raises into
the engine: instrumentation that breaks the server would be worse than none.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback
from typing import Any

from kit.watch.report import interval_s, report_path, update_report

_lock = threading.Lock()
_counts: dict[str, Any] = {"drafts": 0, "draft_tokens": 0, "accepted": 0, "per_position": []}
_intervals: list[dict[str, Any]] = []
_flusher: threading.Thread | None = None
_written = 0
_crashed = False


def record(patch: dict[str, Any]) -> None:
    """Merge `patch` into the report, if one was asked for; failures go to stderr, once."""
    path = report_path()
    if path is None:
        return
    try:
        update_report(path, patch)
    except Exception as e:  # the engine must keep running whatever the report's folder does
        print(f"eagle3-kit: cannot write {path}: {e}", file=sys.stderr)


def process_info(role: str) -> dict[str, Any]:
    return {"pid": os.getpid(), "role": role, "at": time.time()}


def record_crash(exc: BaseException, where: str) -> None:
    """The engine's own exception, as it was raised, with where it was seen (the first one:
    the engine logs it again as it unwinds)."""
    global _crashed
    if _crashed:
        return
    _crashed = True
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    seen = {
        "type": type(exc).__name__,
        "message": str(exc),
        "where": where,
        "traceback": "".join(tb[-6:]),
        **process_info(where),
    }
    record({"crashes": {str(os.getpid()): seen}})  # one per process: merged, never overwritten


def count_draft(num_draft_tokens: int, num_accepted: int) -> None:
    """One request's verification step, as the engine's scheduler counts it."""
    with _lock:
        _counts["drafts"] += 1
        _counts["draft_tokens"] += num_draft_tokens
        _counts["accepted"] += num_accepted
        pos = _counts["per_position"]
        while len(pos) < num_accepted:
            pos.append(0)
        for i in range(num_accepted):
            pos[i] += 1
    _start_flusher()


def count_unsplit(steps: int, drafts_each: int, accepted: int) -> None:
    """Verify steps an engine counted only in sum: the totals grow, `per_position` cannot, and
    `unsplit_drafts` says how many drafts it does not cover."""
    with _lock:
        _counts["drafts"] += steps
        _counts["draft_tokens"] += steps * drafts_each
        _counts["accepted"] += accepted
        _counts["unsplit_drafts"] = _counts.get("unsplit_drafts", 0) + steps
    _start_flusher()


def _start_flusher() -> None:
    global _flusher
    if _flusher is None:
        _flusher = threading.Thread(target=_flush_loop, name="kit-watch", daemon=True)
        _flusher.start()
        atexit.register(flush_acceptance)  # the last counts, when the engine exits cleanly


def _flush_loop() -> None:
    while True:
        time.sleep(interval_s())
        flush_acceptance()


def flush_acceptance() -> None:
    """Append an interval (the counts since the last one) when anything new was counted."""
    global _written
    with _lock:
        if _counts["drafts"] == _written:
            return
        prev = _intervals[-1]["totals"] if _intervals else None
        totals = {k: (list(v) if isinstance(v, list) else v) for k, v in _counts.items()}
        _intervals.append({"at": time.time(), "totals": totals, "delta": _delta(prev, totals)})
        _written = totals["drafts"]
        patch = {"acceptance": {"intervals": list(_intervals), "totals": totals}}
    record(patch)


def _delta(prev: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    if prev is None:
        return now
    out: dict[str, Any] = {k: v - prev.get(k, 0) for k, v in now.items() if isinstance(v, int)}
    old = prev["per_position"] + [0] * (len(now["per_position"]) - len(prev["per_position"]))
    out["per_position"] = [a - b for a, b in zip(now["per_position"], old, strict=True)]
    return out
