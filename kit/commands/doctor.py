"""`python -m kit doctor`: every check without Jupyter, root causes first."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Run every check on a draft (keys, load, aux capture, logs) and rank the findings."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--draft", type=Path, required=True, help="draft checkpoint (or config) folder")
    p.add_argument("--target-config", type=Path, help="target config.json (aux-capture trace)")
    p.add_argument("--draft-config", type=Path, help="draft config to trace (default: the draft's)")
    p.add_argument("--engine", default="sglang==0.5.10", help="engine release, e.g. vllm==0.11.0")
    p.add_argument("--log", dest="logs", type=Path, nargs="+", default=[], help="server logs")
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
    p.add_argument("--expected-accept-len", type=float, help="offline expected accept length")
    p.add_argument("--target", type=Path, help="transformers target: adds offline acceptance")
    p.add_argument("--num-prompts", type=int, help="offline acceptance on the first N prompts")
    p.add_argument("--json", action="store_true", help="JSON for programs")


def run(args: argparse.Namespace) -> int:
    from kit.doctor import diagnose
    from kit.findings import dumps, render_text

    report = diagnose(
        args.draft,
        target_config=args.target_config,
        draft_config=args.draft_config,
        engine=args.engine,
        logs=args.logs,
        target_class=args.target_class,
        aux_capture=args.aux_capture,
        num_draft_tokens=args.num_draft_tokens,
        expected_accept_len=args.expected_accept_len,
        target=args.target,
        num_prompts=args.num_prompts,
    )
    if args.json:
        print(dumps(report.to_dict()))
        return 0
    print(render_text(report.findings, title=f"doctor: {report.engine}, root causes first"))
    for check, why in report.skipped.items():
        print(f"skipped {check}: {why}")
    for fact, value in report.facts.items():
        print(f"{fact}: {value}")
    return 0
