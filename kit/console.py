"""The rich Console every command prints with, and how findings fit its width.

Rich falls back to 80 columns when output is piped (CI logs, `| less`, files), which folds the
key and findings tables into unreadable slivers; piped output gets 120 columns unless COLUMNS
says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from kit.findings import Finding

PIPED_WIDTH = 120


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPED_WIDTH)
    return console


NARROW = 100  # below this many columns a findings table folds into slivers: stack them instead


def print_findings(console: Console, findings: Sequence[Finding], title: str) -> None:
    """Findings as a table on a wide console, as stacked blocks on a narrow one (each finding's
    severity, code and title on their own lines, then evidence and the fix, full width)."""
    from kit.findings import ranked, render_table

    if not findings:
        console.print(f"{title}: no findings", markup=False)
    elif console.width >= NARROW:
        console.print(render_table(findings, title))
    else:
        console.print(title, style="bold italic")
        for f in ranked(findings):
            _print_block(console, f)


def _print_block(console: Console, f: Finding) -> None:
    from kit.findings import STYLE

    head = f.severity.name.lower() + (" · root cause" if f.root_cause else "")
    console.print(f"[{STYLE[f.severity]}]{head}[/] {f.code}")
    console.print(f.title, markup=False)
    lines = [f"• {e}" for e in f.evidence[:8]]
    if len(f.evidence) > 8:
        lines.append(f"• … {len(f.evidence) - 8} more")
    if f.fix:
        lines.append(f"fix: {f.fix}")
    for line in lines:  # indented, continuation lines too
        console.print(Padding(Text(line), (0, 0, 0, 2)))
    cite = " · ".join(x for x in (f.engine, f.source) if x)
    if cite:
        console.print(Padding(Text(cite, style="dim"), (0, 0, 0, 2)))
    console.print()
