"""The watch report: one JSON file that every instrumented process updates as evidence arrives.

Several processes write it (the engine core that loads the draft, the scheduler that counts
acceptance, the `watch` command that adds findings), so each update takes a lock beside the file,
reads what is there, merges its own sections and replaces the file atomically (temporary file,
fsync, rename): a reader never sees half a report. Standard library only: this module runs inside
the engine's own environment.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kit.load.atomic import replace_text

ENV_REPORT = "KIT_WATCH_REPORT"
ENV_INTERVAL = "KIT_WATCH_INTERVAL"
SCHEMA = 1
DEFAULT_REPORT = "kit-watch.json"


@contextmanager
def _locked(path: Path):
    fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_report(path: str | Path) -> dict[str, Any]:
    """The report as last written ({} before the first write)."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}


def update_report(path: str | Path, patch: dict[str, Any]) -> dict[str, Any]:
    """Merge `patch` into the report: a section that is a dict on both sides is merged one level
    deep (two processes each add their part of `engine`), anything else is replaced."""
    path = Path(path)
    with _locked(path):
        current = read_report(path) or {"kit_watch": SCHEMA}
        for key, value in patch.items():
            old = current.get(key)
            if isinstance(old, dict) and isinstance(value, dict):
                current[key] = {**old, **value}
            else:
                current[key] = value
        current["updated"] = time.time()
        replace_text(path, json.dumps(current, indent=1, default=str) + "\n", sync_folder=False)
    return current


def report_path() -> Path | None:
    """The report this process writes to, when `watch` (or `kit.watch()`) asked for one."""
    value = os.environ.get(ENV_REPORT)
    return Path(value) if value else None


def interval_s() -> float:
    """Seconds between acceptance snapshots (KIT_WATCH_INTERVAL, default 2)."""
    try:
        return max(0.1, float(os.environ.get(ENV_INTERVAL, "2")))
    except ValueError:
        return 2.0
