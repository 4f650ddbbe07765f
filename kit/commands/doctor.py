"""`python -m kit doctor`: every check without Jupyter, root causes first."""

from __future__ import annotations

import argparse
from pathlib import Path

from kit.commands._common import add_deployment_arguments, add_fail_on, gate
from kit.commands.deployment import add_launch_arguments

HELP = "Run every check on a draft (keys, load, aux capture, logs) and rank the findings."


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_deployment_arguments(p)
    add_launch_arguments(p)
    p.add_argument("--expected-accept-len", type=float, help="offline expected accept length")
    p.add_argument("--baseline-log", type=Path, help="server log of a run without speculation")
    p.add_argument(
        "--watch",
        type=Path,
        metavar="REPORT",
        help="a `kit watch` report: what the running engine did, ranked above predictions",
    )
    add_fail_on(p)
    p.add_argument("--json", action="store_true", help="JSON for programs")


def run(args: argparse.Namespace) -> int:
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.report.console import make_console, print_findings, print_verdict
    from kit.schema import stamped
    from kit.verdict import diagnose

    if not (args.draft or args.target_config or args.logs or args.target or args.launch) and (
        args.watch is None
    ):
        raise KitError(
            "nothing to check: give --draft, --target-config, --target, --log, --launch or --watch"
        )
    report = diagnose(
        args.draft,
        target_config=args.target_config,
        draft_config=args.draft_config,
        engine=args.engine,
        logs=args.logs,
        baseline_log=args.baseline_log,
        target_class=args.target_class,
        aux_capture=args.aux_capture,
        num_draft_tokens=args.num_draft_tokens,
        expected_accept_len=args.expected_accept_len,
        target=args.target,
        num_prompts=args.num_prompts,
        launch=args.launch,
        train_tokenizer=args.train_tokenizer,
        watch=args.watch,
    )
    if args.json:
        print(dumps(stamped("doctor", report.to_dict())))
        return gate(report.findings, args.fail_on)
    console = make_console()  # the terminal's width; 120 columns through a pipe
    release = report.release.summary if report.release else report.engine
    print_verdict(console, release, report.verdict, report.differential, "doctor")
    print_findings(console, report.findings, "Findings, root causes first")
    for check, why in report.skipped.items():
        console.print(f"skipped {check}: {why}", markup=False)
    for fact, value in report.facts.items():
        console.print(f"{fact}: {value}", markup=False)
    return gate(report.findings, args.fail_on)
