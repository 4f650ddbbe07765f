"""`python -m kit run`: execute the notebooks headless and write the postmortem (a CI gate)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = (
    "Execute the notebooks with papermill and write the executed notebooks, postmortem.html and "
    "findings.json; with no inputs, on the bundled incident."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--draft", type=Path, help="draft checkpoint folder")
    p.add_argument("--target", type=Path, help="transformers target folder (offline acceptance)")
    p.add_argument("--target-config", type=Path, help="target config.json (tracing)")
    p.add_argument("--draft-config", type=Path, help="draft config to trace (default: the draft's)")
    p.add_argument("--engine", default="sglang==0.5.10", help="engine release, e.g. vllm==0.11.0")
    p.add_argument("--log", dest="logs", type=Path, nargs="+", default=[], help="server logs")
    p.add_argument("--baseline-log", type=Path, help="server log of a run without speculation")
    p.add_argument("--target-class", help="model class serving the target")
    p.add_argument(
        "--no-aux-capture",
        dest="aux_capture",
        action="store_const",
        const=False,
        default=None,
        help="the deployment did not capture aux hidden states",
    )
    p.add_argument(
        "--num-draft-tokens", type=int, help="draft tokens per step (default: from logs)"
    )
    p.add_argument("--num-prompts", type=int, help="offline acceptance on the first N prompts")
    p.add_argument("--out", type=Path, default=Path("runs/latest"), help="run folder")
    p.add_argument(
        "--fail-on",
        metavar="SEVERITY",
        help="exit 1 when a finding at or above this severity exists (info, warning, error, critical)",
    )
    p.add_argument("--timeout", type=float, default=300, help="cell execution timeout, seconds")
    p.add_argument("--workers", type=int, default=2, help="notebooks run in parallel")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def run(args: argparse.Namespace) -> int:
    from kit.console import make_console
    from kit.engines import parse_engine
    from kit.errors import KitError
    from kit.findings import Severity, render_table
    from kit.runbook import RunInputs
    from kit.runbook import run as run_notebooks

    gate = None if args.fail_on is None else _severity(args.fail_on)
    parse_engine(args.engine)  # a release outside the modelled range fails here, not in 5 kernels
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
        num_prompts=args.num_prompts,
    )
    if args.workers < 1:
        raise KitError(f"--workers must be at least 1, not {args.workers}")
    result = run_notebooks(
        inputs, args.out, timeout=args.timeout, workers=args.workers, progress=not args.quiet
    )
    console = make_console()
    console.print(render_table(result.findings, title="Findings, root causes first"))
    for step in result.steps:
        style = {"ok": "green", "failed": "bold red", "skipped": "yellow"}[step.status]
        console.print(f"[{style}]{step.summary_line()}[/]", highlight=False, soft_wrap=True)
    console.print(
        f"postmortem: {args.out / 'postmortem.html'} ({result.seconds:.1f} s)", soft_wrap=True
    )
    if gate is not None and any(f.severity >= gate for f in result.findings):
        worst = max(f.severity for f in result.findings)
        console.print(f"[bold red]fail: a {Severity(worst).name.lower()} finding (--fail-on)[/]")
        return 1
    return 0


def _severity(text: str):
    from kit.errors import KitError
    from kit.findings import Severity

    try:
        return Severity.parse(text)
    except ValueError as e:
        raise KitError(f"--fail-on: {e}") from None
