"""`python -m kit acceptance LOG...`: what the logged accept len / accept rate mean, and findings."""

from __future__ import annotations

import argparse
from pathlib import Path

from kit.commands._common import add_fail_on, gate, positive_int
from kit.errors import KitError

HELP = (
    "Read SGLang, vLLM, LMDeploy, llama.cpp or TensorRT-LLM logs, metrics or JSON; interpret "
    "acceptance per release."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", metavar="LOG", help="log, Prometheus text or JSON files")
    p.add_argument(
        "--engine",
        help="engine the logs come from: a release (sglang==0.5.10) or a name alone (sglang, "
        "vllm, lmdeploy, tensorrt_llm, llama.cpp); default: told from the format",
    )
    p.add_argument(
        "--num-draft-tokens",
        type=positive_int,
        help="SGLang speculative_num_draft_tokens (D); vLLM num_speculative_tokens",
    )
    p.add_argument(
        "--num-steps", type=positive_int, help="speculative_num_steps (draft steps per verify)"
    )
    p.add_argument("--topk", type=positive_int, help="speculative_eagle_topk")
    p.add_argument("--expected-accept-len", type=float, help="accept len measured offline")
    p.add_argument("--expected-step0", type=float, help="offline step-0 accuracy (0..1)")
    p.add_argument("--baseline", help="a log of the same server without speculation")
    p.add_argument(
        "--draft-cost",
        type=float,
        default=None,
        help="draft/target forward-cost ratio c for the speedup model (default 0.05)",
    )
    p.add_argument(
        "--compare", action="store_true", help="compare the first LOG with each of the others"
    )
    p.add_argument("--plot", metavar="HTML", help="write the figures to this HTML file")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_fail_on(p)


def run(args: argparse.Namespace) -> int:
    from kit.acceptance import analyze, compare, parse_files
    from kit.acceptance.speedup import DEFAULT_DRAFT_COST
    from kit.findings import dumps

    if args.compare and len(args.logs) < 2:
        raise KitError("--compare needs two logs or more: the first is compared with the others")
    opts = dict(
        engine=args.engine,
        num_draft_tokens=args.num_draft_tokens,
        num_steps=args.num_steps,
        topk=args.topk,
    )
    runs = parse_files(args.logs, **opts)
    baseline = parse_files([args.baseline], **opts)[0] if args.baseline else None
    report = analyze(
        runs,
        expected_step0=args.expected_step0,
        expected_accept_len=args.expected_accept_len,
        baseline=baseline,
        draft_cost=args.draft_cost if args.draft_cost is not None else DEFAULT_DRAFT_COST,
    )
    comparisons = [compare(runs[0], r) for r in runs[1:]] if args.compare else []
    findings = report.findings + [f for c in comparisons for f in c.findings]
    if args.plot:
        _plot(args.plot, runs, args.expected_accept_len)
    if args.json:
        out = report.to_dict()
        if comparisons:
            out["comparisons"] = [c.to_dict() for c in comparisons]
        print(dumps(out))
    else:
        _print(report.to_dict()["runs"], findings)
    return gate(findings, args.fail_on)


def _print(runs: list[dict], findings: list) -> None:
    from kit.report.console import make_console, print_findings

    console = make_console()
    console.print(_runs_table(runs))
    for r in runs:
        for note in r["notes"]:  # possible readings, inferred settings, what was not read
            console.print(f"{Path(r['source']).name}: {note}", highlight=False)
    print_findings(console, findings, "Acceptance findings")


def _runs_table(runs: list[dict]):
    from rich.table import Table

    t = Table(title="Runs", show_lines=True)
    for col in (
        "source",
        "engine",
        "windows",
        "covers",
        "accept len mean/p50",
        "accept rate",
        "rate formula",
    ):
        t.add_column(col)
    for r in runs:
        al, ar, it = r["accept_len"], r["accept_rate"], r["interpretation"]
        p50 = "–" if al["p50"] is None else f"{al['p50']:.2f}"
        t.add_row(
            Path(r["source"]).name,
            str(r["engine"]),
            str(r["windows"]),
            ", ".join(r["scopes"]) or "–",
            "–" if al["mean"] is None else f"{al['mean']:.2f} / {p50}",
            "–" if ar["mean"] is None else f"{ar['mean']:.2f}",
            it.get("rate_formula") or "–",
        )
    return t


def _plot(path: str, runs, expected: float | None) -> None:
    from kit.report.plots.acceptance import write_html

    write_html(path, runs, expected=expected)
