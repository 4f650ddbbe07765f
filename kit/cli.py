"""`python -m kit COMMAND`: one module per command under `kit/commands/`.

Each command module defines `HELP`, `add_arguments(parser)` and `run(args) -> int`, and imports
anything heavy (torch, plotly) inside `run`, so `--help` and header-only commands stay fast.
Expected failures (`KitError`) print one line and exit 2; no traceback. With `--json` the error
is also printed on stdout as `{"error": …, "exit_code": 2}`, for programs that read only stdout.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from kit import __version__
from kit.errors import KitError

COMMANDS = (
    "inspect",
    "simulate",
    "fix",
    "trace",
    "acceptance",
    "probe",
    "offline",
    "deployment",
    "doctor",
    "run",
)

EXIT_BAD_INPUT = 2
# The commands that take a draft or target, which may be a Hub repo id (`org/name[@rev]`).
HUB_COMMANDS = ("inspect", "simulate", "fix", "trace", "offline", "deployment", "doctor", "run")
DOWNLOAD_HELP = (
    "for a Hub repo id: download the whole repo (weights included) instead of reading only "
    "config.json, the index and the safetensors headers by range"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kit",
        description="EAGLE-3 debug kit: inspect, simulate, trace and measure draft models.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"kit.commands.{name}")
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        if name in HUB_COMMANDS:
            p.add_argument("--download", action="store_true", help=DOWNLOAD_HELP)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command in HUB_COMMANDS:
            from kit.checkpoint.hub import report_sources, resolve_arguments

            resolve_arguments(args)
            code = int(args._run(args) or 0)
            report_sources(
                kernels=args.command == "run"
            )  # what was read, after the answer (an error stays one line)
            return code
        return int(args._run(args) or 0)
    except KitError as e:
        if getattr(args, "json", False):  # a program reading stdout gets the error there too
            print(json.dumps({"error": str(e), "exit_code": EXIT_BAD_INPUT}))
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
