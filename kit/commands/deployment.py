"""`python -m kit deployment`: the launch line, the configs and the tokenizers as evidence."""

from __future__ import annotations

import argparse
from pathlib import Path

from kit.commands._common import add_fail_on, gate, positive_float

HELP = (
    "Check how a draft is deployed: the server's launch line (flags read per release), the draft "
    "and target configs (RoPE, context, dtype, quantization, vocabulary) and the chat template."
)


def add_launch_arguments(p: argparse.ArgumentParser) -> None:
    """--launch and --train-tokenizer, shared with `doctor`."""
    p.add_argument(
        "--launch",
        metavar="TEXT_OR_FILE",
        help="the server's launch command (python -m sglang.launch_server …, vllm serve …), or a "
        "script holding it",
    )
    p.add_argument(
        "--train-tokenizer",
        type=Path,
        metavar="DIR",
        help="the tokenizer (and chat template) the draft was trained with",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_launch_arguments(p)
    p.add_argument("--draft", type=Path, help="draft checkpoint or config folder, or a Hub repo id")
    p.add_argument(
        "--target-config", type=Path, help="target config.json (or its folder), or a Hub repo id"
    )
    p.add_argument(
        "--engine",
        metavar="ENGINE[==X]",
        help="the release served (sglang==0.5.10); a bare name lets the launch line decide",
    )
    p.add_argument(
        "--tokenizer", type=Path, metavar="DIR", help="served tokenizer (default: the target's)"
    )
    p.add_argument(
        "--accept-len",
        type=positive_float,
        help="observed accept length (from the server log): near 1.0 makes a quantized target a "
        "root cause",
    )
    add_fail_on(p)
    p.add_argument("--json", action="store_true", help="JSON for programs")


def run(args: argparse.Namespace) -> int:
    from kit.deployment import check
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.report.console import make_console, print_findings, quiet
    from kit.schema import stamped

    if args.launch is None and (args.draft is None or args.target_config is None):
        raise KitError("give --launch, or --draft and --target-config (the config rules)")
    report = check(
        args.launch,
        draft=args.draft,
        target_config=args.target_config,
        engine=args.engine,
        train_tokenizer=args.train_tokenizer,
        served_tokenizer=args.tokenizer,
        accept_len=args.accept_len,
    )
    if args.json:
        print(dumps(stamped("deployment", report.to_dict())))
        return gate(report.findings, args.fail_on)
    title = f"deployment: {report.facts.get('engine') or 'no release'}, root causes first"
    print_findings(make_console(), report.findings, title)
    if quiet():
        return gate(report.findings, args.fail_on)
    for rule, why in report.skipped.items():
        print(f"skipped {rule}: {why}")
    for fact, value in report.facts.items():
        print(f"{fact}: {value}")
    return gate(report.findings, args.fail_on)
