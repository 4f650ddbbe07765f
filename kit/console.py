"""The rich Console every command prints with.

Rich falls back to 80 columns when output is piped (CI logs, `| less`, files), which folds the
key and findings tables into unreadable slivers; piped output gets 120 columns unless COLUMNS
says otherwise.
"""

from __future__ import annotations

import os

from rich.console import Console

PIPED_WIDTH = 120


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPED_WIDTH)
    return console
