"""The rich Console every command prints with, and the one way the CLI prints findings.

Rich falls back to 80 columns when output is piped (CI logs, `| less`, files), which folds the
key tables into unreadable slivers; piped output gets 120 columns unless COLUMNS says otherwise.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from kit.findings import Finding

PIPED_WIDTH = 120


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPED_WIDTH)
    return console


def print_findings(console: Console, findings: Sequence[Finding], title: str = "Findings") -> None:
    """Findings ranked, root causes first, one block each: severity and code, the title, then
    evidence, the fix and the engine source indented at full width. Blocks rather than a table,
    because a table's narrow columns fold long evidence (key names, log lines) into slivers."""
    from kit.findings import ranked

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
    _print_wrapped(console, f.title, "", "")
    lines = [f"• {e}" for e in f.evidence[:8]]
    if len(f.evidence) > 8:
        lines.append(f"• … {len(f.evidence) - 8} more")
    if f.fix:
        lines.append(f"fix: {f.fix}")
    for line in lines:
        _print_wrapped(console, line, "  ", "    ")
    cite = " · ".join(x for x in (f.engine, f.source) if x)
    if cite:
        _print_wrapped(console, cite, "  ", "    ", style="dim")
    console.print()


def _print_wrapped(console: Console, text: str, first: str, rest: str, style: str = "") -> None:
    """Wrapped here rather than by rich, which pads every wrapped line to the console's width
    (trailing blanks in a pipe) and cannot hang an indent under a bullet. Paths and key names
    are never split."""
    lines = textwrap.wrap(
        text, console.width, initial_indent=first, subsequent_indent=rest,
        break_long_words=False, break_on_hyphens=False,
    )  # fmt: skip
    for line in lines:
        console.print(Text(line, style=style), soft_wrap=True)
