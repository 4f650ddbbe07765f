"""`eagle3-kit COMMAND` (or `python -m kit COMMAND`): one module per command under `kit/commands/`.

Each command module defines `HELP`, `add_arguments(parser)` and `run(args) -> int`, and imports
anything heavy (torch, plotly) inside `run`, so `--help` and header-only commands stay fast and
work on the core install. Expected failures (`KitError`, a missing extra among them) print one
line and exit 2; no traceback. With `--json` the error is also printed on stdout as
`{"report": "error", "schema_version", "kit_version", "error": …, "exit_code": 2}`, for programs
that read only stdout.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from kit.commands._common import severity
from kit.errors import KitError
from kit.extras import missing_extra
from kit.findings import Severity
from kit.version import __version__

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
    "watch",
)

EXIT_BAD_INPUT = 2
# The commands that take a draft or target, which may be a Hub repo id (`org/name[@rev]`).
HUB_COMMANDS = ("inspect", "simulate", "fix", "trace", "offline", "deployment", "doctor", "run")
DOWNLOAD_HELP = (
    "for a Hub repo id: download the whole repo (weights included) instead of reading only "
    "config.json, the index and the safetensors headers by range"
)

# One line per command in `--help` (each command's own --help says more).
SUMMARY = {
    "inspect": "what a checkpoint holds: format, tensors, findings",
    "simulate": "replay an engine release's loading of the draft, key by key",
    "fix": "rename keys and fix config.json for one engine release",
    "trace": "the target -> draft hand-over, hook by hook ([offline] extra)",
    "acceptance": "read server logs or metrics: acceptance per release, explained",
    "probe": "ask a running SGLang or vLLM server what it accepts now",
    "offline": "measure a draft's acceptance on its target ([offline] extra)",
    "deployment": "check a launch line and the draft/target configs",
    "doctor": "every check at once, findings ranked, root causes first",
    "run": "the notebooks headless + postmortem.html ([notebooks] extra)",
    "watch": "run a vLLM or SGLang command, the kit watching inside it",
}

EPILOG = """\
exit codes:
  0  clean: the command ran (with --fail-on: no finding reached the threshold)
  1  a --fail-on SEVERITY gate tripped (fix: the written checkpoint still fails its replay)
  2  bad input: a missing or malformed file, a bad option, an extra not installed

Output is plain text when stdout is not a terminal or NO_COLOR is set. --json prints one object
with "schema_version" and "kit_version" (docs/schemas/). --quiet prints only the findings at
warning and above, --min-severity SEVERITY those at or above SEVERITY (info, warning, error,
critical). Run COMMAND --help for a command's options.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eagle3-kit",
        description="EAGLE-3 debug kit: inspect, simulate, trace and measure draft models.",
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"kit.commands.{name}")
        p = sub.add_parser(name, help=SUMMARY[name], description=module.HELP)
        module.add_arguments(p)
        add_quiet(p)
        if name in HUB_COMMANDS:
            p.add_argument("--download", action="store_true", help=DOWNLOAD_HELP)
        p.set_defaults(_run=module.run)
    return parser


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The epilog as written; every command name in one column, so each summary is one line."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=16)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        self._action_max_length = max(self._action_max_length, 14)


def add_quiet(p: argparse.ArgumentParser) -> None:
    """`--quiet`: findings at warning and above, nothing else; `--min-severity` picks another
    threshold (and implies --quiet). A flag and a separate option rather than `--quiet [LEVEL]`,
    which would swallow a checkpoint path written after it."""
    p.add_argument(
        "-q",
        "--quiet",
        action="store_const",
        const=Severity.WARNING,
        default=None,
        help="print only findings at warning and above (--json output is unchanged)",
    )
    p.add_argument(
        "--min-severity",
        type=severity,
        metavar="SEVERITY",
        help="print only findings at or above SEVERITY (implies --quiet)",
    )


def _quiet_threshold(args: argparse.Namespace) -> Severity | None:
    if getattr(args, "json", False):
        return None
    return args.min_severity or args.quiet


def main(argv: list[str] | None = None) -> int:
    from kit.report.console import quiet_findings

    args = build_parser().parse_args(argv)
    try:
        with quiet_findings(_quiet_threshold(args)):
            if args.command not in HUB_COMMANDS:
                return int(args._run(args) or 0)
            from kit.checkpoint.hub import report_sources, resolve_arguments

            resolve_arguments(args, sys.argv[1:] if argv is None else argv)
            code = int(args._run(args) or 0)
            # What was read, after the answer (so an error stays one line).
            report_sources(kernels=args.command == "run")
            return code
    except KitError as e:
        return _bad_input(args, e)
    except ImportError as e:
        extra = missing_extra(e)
        if extra is None:
            raise
        return _bad_input(args, extra)
    except BrokenPipeError:  # `| head` stopped reading: no traceback; 141 as for SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _bad_input(args: argparse.Namespace, e: KitError) -> int:
    """One line on stderr; under --json the same error on stdout, in its stamped shape."""
    from kit.schema import stamped

    if getattr(args, "json", False):  # a program reading stdout gets the error there too
        print(json.dumps(stamped("error", {"error": str(e), "exit_code": EXIT_BAD_INPUT})))
    print(f"error: {e}", file=sys.stderr)
    return EXIT_BAD_INPUT
