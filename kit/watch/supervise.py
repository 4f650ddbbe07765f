"""`watch`'s side of the run: start the command instrumented, forward signals, name the fault.

The command inherits this process's stdin, stdout and stderr, so its output passes through
untouched; it runs in its own process group so that a Ctrl-C reaches it once (forwarded here, as
the terminal would) rather than twice. While it runs, the report is polled; the first time it
shows the draft loaded, and again after the first draft forward, the findings are printed as one
`eagle3-kit:` block on stderr and written into the report.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from kit.errors import KitError
from kit.findings import Finding, to_json
from kit.watch.analyze import render_block, stage_of, watch_findings
from kit.watch.report import ENV_REPORT, read_report, update_report

SITE = Path(__file__).resolve().parent / "site"
KIT_ROOT = Path(__file__).resolve().parents[2]
FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
HEADINGS = {
    "loaded": "draft loaded: what the engine did with it",
    "forward": "after the first draft forward",
    "crashed": "the engine failed at start-up",
}


def watch_env(report: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that turns the instrumentation on in every Python process started."""
    env = dict(os.environ if base is None else base)
    env[ENV_REPORT] = str(report)
    env["KIT_WATCH_ROOT"] = str(KIT_ROOT)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SITE) + (os.pathsep + old if old else "")
    return env


def start_report(report: Path, command: list[str]) -> None:
    """A fresh report for this run (a previous run's evidence would be misread as this one's)."""
    try:
        report.parent.mkdir(parents=True, exist_ok=True)
        for stale in (report, Path(f"{report}.lock")):
            stale.unlink(missing_ok=True)
        update_report(report, {"command": command, "started": time.time(), "status": "running"})
    except OSError as e:
        raise KitError(f"{report}: cannot write the watch report ({e.strerror})") from None


class Announcer:
    """Prints each stage's findings once, and keeps the report's `findings` current."""

    def __init__(self, report: Path, out: TextIO) -> None:
        self.report, self.out = report, out
        self.printed: set[str] = set()
        self.said: set[tuple[str, str]] = set()
        self._mtime = 0.0

    def step(self, final: bool = False) -> list[Finding]:
        try:
            mtime = self.report.stat().st_mtime
        except FileNotFoundError:
            return []
        if mtime == self._mtime and not final:
            return []
        self._mtime = mtime
        data = read_report(self.report)
        stage = stage_of(data)
        if stage == "starting" and not final:
            return []
        found = watch_findings(data)
        update_report(self.report, {"findings": to_json(found), "findings_stage": stage})
        self._mtime = self.report.stat().st_mtime
        if stage in HEADINGS and stage not in self.printed:
            self.printed.add(stage)
            self._print(found, HEADINGS[stage])
        return found

    def _print(self, found: list[Finding], heading: str) -> None:
        new = [f for f in found if (f.code, f.title) not in self.said]
        self.said |= {(f.code, f.title) for f in found}
        block = render_block(new, heading)
        if block:
            self.out.write(block)
            self.out.flush()


def run_watched(command: list[str], report: Path, *, poll_s: float = 0.2) -> int:
    """Run `command` under watch; its exit code (128 + N when a signal N ended it)."""
    report = report.resolve()
    start_report(report, command)
    try:
        proc = subprocess.Popen(command, env=watch_env(report), process_group=0)
    except OSError as e:
        raise KitError(f"{command[0]}: cannot start the command ({e.strerror})") from None
    previous = _forward_signals(proc)
    announcer = Announcer(report, sys.stderr)
    try:
        while proc.poll() is None:
            time.sleep(poll_s)
            _quietly(announcer.step)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    _quietly(lambda: announcer.step(final=True))
    update_report(report, {"status": "exited", "exit_code": code, "ended": time.time()})
    return code


def _quietly(step: Any) -> None:
    """A findings pass that fails must not take the command down with it."""
    try:
        step()
    except Exception as e:
        print(f"eagle3-kit: could not analyse the report: {type(e).__name__}: {e}", file=sys.stderr)


def _forward_signals(proc: subprocess.Popen) -> dict[int, Any]:
    def forward(sig: int, frame: Any) -> None:
        try:  # Ctrl-C goes to the command's whole group, as the terminal would send it
            if sig == signal.SIGINT:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except ProcessLookupError:
            pass

    previous = {}
    for sig in FORWARDED:
        previous[sig] = signal.signal(sig, forward)
    return previous


class Poller(threading.Thread):
    """The announcer on a thread, for `kit.watch()` around an engine in the calling process."""

    def __init__(self, report: Path, out: TextIO, poll_s: float = 0.2) -> None:
        super().__init__(name="kit-watch-announcer", daemon=True)
        self.announcer = Announcer(report, out)
        self.poll_s = poll_s
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.poll_s):
            _quietly(self.announcer.step)
