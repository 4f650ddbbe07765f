"""`python -m kit watch [--report PATH] -- COMMAND …`: the launch, instrumented."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = (
    "Run a vLLM or SGLang launch command with read-only hooks in the engine: what its loader did "
    "with every draft key, what the first draft forward received, its acceptance counts."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--report",
        type=Path,
        default=Path("kit-watch.json"),
        help="JSON report, rewritten atomically as evidence arrives (default kit-watch.json)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the launch command")


def run(args: argparse.Namespace) -> int:
    from kit.errors import KitError
    from kit.watch.supervise import run_watched

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise KitError("watch: no command given; use python -m kit watch -- COMMAND …")
    return run_watched(command, args.report)
