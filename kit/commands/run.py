"""`python -m kit run`: execute the notebooks headless and write the postmortem (a CI gate)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kit.commands._common import (
    add_deployment_arguments,
    add_fail_on,
    add_sampling_arguments,
    gate,
    positive_float,
    positive_int,
)
from kit.commands.deployment import add_launch_arguments

HELP = (
    "Execute the notebooks with papermill and write the executed notebooks, postmortem.html and "
    "findings.json; with no inputs, on the bundled incident."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_deployment_arguments(p)
    add_launch_arguments(p)
    p.add_argument("--baseline-log", type=Path, help="server log of a run without speculation")
    p.add_argument("--probe", metavar="URL", help="a running server: its live acceptance figures")
    p.add_argument(
        "--watch",
        type=Path,
        metavar="REPORT",
        help="a `kit watch` report: what the running engine did, ranked above predictions",
    )
    p.add_argument(
        "--probe-interval",
        type=positive_float,
        default=10.0,
        help="seconds between the probe's two metrics scrapes (default 10)",
    )
    p.add_argument(
        "--k",
        type=positive_int,
        help="drafts per step offline (default: --num-draft-tokens - 1, else 5)",
    )
    add_sampling_arguments(p.add_argument_group("offline acceptance, as the server samples"))
    p.add_argument("--out", type=Path, default=Path("runs/latest"), help="run folder")
    add_fail_on(p)
    p.add_argument(
        "--timeout", type=positive_float, default=300, help="cell execution timeout, seconds"
    )
    p.add_argument("--workers", type=positive_int, default=2, help="notebooks run in parallel")


def run(args: argparse.Namespace) -> int:
    from kit.acceptance.reader import refuse_non_logs
    from kit.engines import parse_engine
    from kit.extras import require
    from kit.findings import Severity
    from kit.release_choice import is_release
    from kit.report.console import make_console, print_findings, print_verdict
    from kit.report.runbook import RunInputs
    from kit.report.runbook import run as run_notebooks

    require("papermill", "jupytext", "nbformat", "nbclient", "ipykernel", "plotly")
    if is_release(args.engine):
        parse_engine(
            args.engine
        )  # a release outside the modelled range fails here, not in 5 kernels
    refuse_non_logs([*args.logs, args.baseline_log])  # a checkpoint given as a log: one line
    inputs = RunInputs(
        draft=args.draft,
        target=args.target,
        target_config=args.target_config,
        trace_draft=args.draft_config,
        engine=args.engine,
        logs=list(args.logs),
        baseline_log=args.baseline_log,
        target_class=args.target_class,
        aux_capture=args.aux_capture,
        num_draft_tokens=args.num_draft_tokens,
        k=args.k,
        num_prompts=args.num_prompts,
        prompt_format=args.prompt_format,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
        launch=args.launch,
        train_tokenizer=args.train_tokenizer,
        probe=args.probe,
        probe_interval=args.probe_interval,
        watch=args.watch,
    )
    result = run_notebooks(
        inputs,
        args.out,
        timeout=args.timeout,
        workers=args.workers,
        progress=not (args.quiet or args.min_severity),
    )
    console = make_console()
    print_verdict(console, result.release_summary, result.verdict, result.differential, "run")
    print_findings(console, result.findings, "Findings, root causes first")
    for step in result.steps:
        style = {"ok": "green", "failed": "bold red", "skipped": "yellow"}[step.status]
        console.print(f"[{style}]{step.summary_line()}[/]", highlight=False, soft_wrap=True)
    console.print(
        f"postmortem: {args.out / 'postmortem.html'} ({result.seconds:.1f} s)", soft_wrap=True
    )
    code = gate(result.findings, args.fail_on)
    if code:
        worst = max(f.severity for f in result.findings)
        console.print(f"[bold red]fail: a {Severity(worst).name.lower()} finding (--fail-on)[/]")
    return code
