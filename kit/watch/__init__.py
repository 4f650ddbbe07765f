"""Evidence from inside the running engine: what it did with the draft, as it did it.

`python -m kit watch -- COMMAND …` runs a vLLM or SGLang launch with read-only hooks in every
process it starts (`boot`: vLLM's general-plugin entry point, or a `sitecustomize` first on
PYTHONPATH), records into a JSON report (`report`) every key the draft's loader was handed and
where it went, the draft config as the engine resolved it, what the first draft forward received
and the engine's acceptance counts, and prints findings (`observed`, `compare`) as soon as they
are known. `kit.watch()` does the same around an offline `vllm.LLM` in the calling process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kit.findings import Finding

__all__ = ["Watch", "watch"]


@dataclass
class Watch:
    """The handle `kit.watch()` yields: the report's path, its evidence and findings so far."""

    path: Path

    def report(self) -> dict[str, Any]:
        from kit.watch.report import read_report

        return read_report(self.path)

    def findings(self) -> list[Finding]:
        from kit.watch.analyze import watch_findings

        return watch_findings(self.report())


@contextmanager
def watch(report: str | Path = "kit-watch.json", *, echo: bool = True) -> Iterator[Watch]:
    """Instrument an engine started inside the block (an offline `vllm.LLM`): its spawned
    processes inherit the environment set here; this process is hooked directly. With `echo`,
    findings are printed on stderr as they become known."""
    from kit.watch import boot, evidence
    from kit.watch.supervise import Poller, start_report, watch_env

    path = Path(report).resolve()
    start_report(path, [sys.argv[0] if sys.argv else "python", "(kit.watch)"])
    saved = {k: os.environ.get(k) for k in ("KIT_WATCH_REPORT", "KIT_WATCH_ROOT", "PYTHONPATH")}
    os.environ.update(watch_env(path))
    boot.install()
    poller = Poller(path, sys.stderr) if echo else None
    if poller is not None:
        poller.start()
    try:
        yield Watch(path)
    finally:
        evidence.flush_acceptance()
        if poller is not None:
            poller.stop.set()
            poller.join()
            poller.announcer.step(final=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
