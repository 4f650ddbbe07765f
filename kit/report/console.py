"""The rich Console every command prints with, and the one way the CLI prints findings.

Rich falls back to 80 columns when output is piped (CI logs, `| less`, files), which folds the
key tables into unreadable slivers; piped output gets 120 columns unless COLUMNS says otherwise.
Plain text (no escape codes at all) when stdout is not a terminal, and under NO_COLOR: rich alone
would drop the colours there but keep bold and italics, which a log or a screen reader does not
want either.

`--quiet SEVERITY` (`quiet_findings`): every console a command makes is muted, and
`print_findings` prints only the findings at or above SEVERITY, on a console of its own, so a CI
log holds the findings that matter and nothing else.
"""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from kit.findings import Finding, Severity

if TYPE_CHECKING:
    from kit.differential import Differential
    from kit.verdict_summary import Verdict

PIPED_WIDTH = 120
_quiet: list[Severity] = []  # the --quiet threshold while a command runs (`quiet_findings`)


@contextmanager
def quiet_findings(threshold: Severity | None) -> Iterator[None]:
    """While a command runs: with a threshold, only findings at or above it are printed."""
    if threshold is not None:
        _quiet.append(threshold)
    try:
        yield
    finally:
        if threshold is not None:
            _quiet.pop()


def quiet() -> bool:
    """Under --quiet: output other than findings is not printed (`print` callers ask here)."""
    return bool(_quiet)


def make_console(stderr: bool = False) -> Console:
    if _quiet:  # tables, notes and summaries are not findings: muted under --quiet
        return Console(file=io.StringIO())
    return _console(stderr)


def _console(stderr: bool = False) -> Console:
    plain = {"color_system": None} if os.environ.get("NO_COLOR") else {}
    console = Console(stderr=stderr, **plain)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPED_WIDTH, **plain)
    return console


def print_findings(console: Console, findings: Sequence[Finding], title: str = "Findings") -> None:
    """Findings ranked, root causes first, one block each: severity and code, the title, then
    evidence, the fix and the engine source indented at full width. Blocks rather than a table,
    because a table's narrow columns fold long evidence (key names, log lines) into slivers."""
    from kit.findings import ranked

    if _quiet:
        console = _console()
        for f in ranked(x for x in findings if x.severity >= _quiet[-1]):
            _print_block(console, f)
        return
    if not findings:
        console.print(f"{title}: no findings", markup=False)
        return
    console.print(title, style="bold italic", markup=False)
    for f in ranked(findings):
        _print_block(console, f)


def _print_block(console: Console, f: Finding) -> None:
    from kit.findings import STYLE

    head = f.severity.name.lower() + (" · root cause" if f.root_cause else "")
    console.print(f"[{STYLE[f.severity]}]{head}[/] {f.code}")
    print_wrapped(console, f.title, "", "")
    lines = [f"• {e}" for e in f.evidence[:8]]
    if len(f.evidence) > 8:
        lines.append(f"• … {len(f.evidence) - 8} more")
    if f.fix:
        lines.append(f"fix: {f.fix}")
    for line in lines:
        print_wrapped(console, line, "  ", "    ")
    cite = " · ".join(x for x in (f.engine, f.source) if x)
    if cite:
        print_wrapped(console, cite, "  ", "    ", style="dim")
    console.print()


def print_wrapped(console: Console, text: str, first: str, rest: str, style: str = "") -> None:
    """Wrapped here rather than by rich, which pads every wrapped line to the console's width
    (trailing blanks in a pipe) and cannot hang an indent under a bullet. Paths and key names
    are never split."""
    lines = textwrap.wrap(
        text, console.width, initial_indent=first, subsequent_indent=rest,
        break_long_words=False, break_on_hyphens=False,
    )  # fmt: skip
    for line in lines:
        console.print(Text(line, style=style), soft_wrap=True)


MARKS = {
    "confirmed": "bold red",
    "assumed": "yellow",
    "unverified": "bold yellow",
    "ruled out": "dim",
}


def print_verdict(
    console: Console, release: str, verdict: Verdict, diff: Differential | None, command: str
) -> None:
    """A verdict's head (doctor, run): the release judged and why, the answer in one line, what
    holds and what was not seen; for a symptom, the differential: the logs as a sequence, every
    cause that can produce it with its status and evidence, and what settles the unverified."""
    print_wrapped(console, f"{command}: judged as {release}", "", "  ", style="bold")
    print_wrapped(console, f"verdict: {verdict.headline}", "", "  ", style="bold")
    for line in verdict.holds if not verdict.healthy else ():
        print_wrapped(console, f"✓ {line}", "  ", "    ")
    for line in verdict.unchecked:
        print_wrapped(console, f"not checked: {line}", "  ", "    ", style="dim")
    if diff is not None:
        _print_differential(console, diff)
    console.print()


def _print_differential(console: Console, diff: Differential) -> None:
    console.print()
    print_wrapped(console, f"Symptom: {diff.symptom}", "", "  ", style="bold italic")
    for line in diff.sequence:
        print_wrapped(console, f"• {line}", "  ", "    ")
    console.print()
    heading = "Causes that hold acceptance at the floor" if diff.floor else "Causes that lower it"
    console.print(heading, style="bold italic")
    for a in diff.assessments:
        first, *rest = textwrap.wrap(a.cause.name, max(console.width - 13, 20))
        console.print(Text.assemble((f"  {a.status:<11}", MARKS[a.status]), first), soft_wrap=True)
        for line in rest:
            console.print(Text(f"{'':13}{line}"), soft_wrap=True)
        dim = "dim" if a.status == "ruled out" else ""
        for e in a.evidence:
            print_wrapped(console, e, "      ", "        ", style=dim)
        if a.settle:
            print_wrapped(console, f"settle: {a.settle}", "      ", "        ")
    if diff.partial:
        codes = ", ".join(dict.fromkeys(f.code for f in diff.partial))
        print_wrapped(console, f"Also costing acceptance: {codes}", "", "  ")
