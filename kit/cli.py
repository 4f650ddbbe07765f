"""`python -m kit COMMAND`: one module per command under `kit/commands/`.

Each command module defines `HELP`, `add_arguments(parser)` and `run(args) -> int`, and imports
anything heavy (torch, plotly) inside `run`, so `--help` and header-only commands stay fast.
Expected failures (`KitError`) print one line and exit 2; no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kit.errors import KitError

COMMANDS = (
    "inspect",
    "simulate",
    "fix",
    "trace",
    "acceptance",
    "probe",
    "offline",
    "doctor",
    "run",
)

EXIT_BAD_INPUT = 2


def _load(name: str):
    try:
        return importlib.import_module(f"kit.commands.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"kit.commands.{name}":
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kit",
        description="EAGLE-3 debug kit: inspect, simulate, trace and measure draft models.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = _load(name)
        if module is None:
            continue
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KitError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
