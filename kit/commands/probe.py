"""`python -m kit probe URL`: what a running SGLang or vLLM server accepts now, and its settings."""

from __future__ import annotations

import argparse

from kit.commands._common import add_fail_on, gate, positive_float, positive_int

HELP = "Ask a running SGLang or vLLM server what it accepts now and how it was started."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", metavar="URL", help="the server, e.g. http://127.0.0.1:30000")
    p.add_argument(
        "--interval",
        type=positive_float,
        default=10.0,
        help="seconds between vLLM's two /metrics scrapes (default 10)",
    )
    p.add_argument(
        "--requests",
        type=int,
        default=0,
        metavar="N",
        help="send N short greedy generations: per-request figures and traffic (default 0)",
    )
    p.add_argument(
        "--max-tokens", type=positive_int, default=64, help="tokens per generation (default 64)"
    )
    p.add_argument(
        "--timeout", type=positive_float, default=10.0, help="seconds per HTTP call (default 10)"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_fail_on(p)


def run(args: argparse.Namespace) -> int:
    from kit.acceptance import probe
    from kit.errors import KitError
    from kit.findings import dumps

    if args.requests < 0:
        raise KitError(f"--requests must be 0 or more, got {args.requests}")
    report = probe(
        args.url,
        interval=args.interval,
        requests=args.requests,
        timeout=args.timeout,
        max_tokens=args.max_tokens,
    )
    if args.json:
        print(dumps(report.to_dict()))
    else:
        _print(report)
    return gate(report.findings, args.fail_on)


def _print(report) -> None:
    from rich.table import Table

    from kit.report.console import make_console, print_findings

    console = make_console()
    t = Table(title=f"{report.engine} {report.version or ''} at {report.url}", show_lines=True)
    for col in ("covers", "windows", "accept len mean/p50", "drafts accepted", "per position"):
        t.add_column(col)
    for scope, fig in report.figures().items():
        al = fig.get("accept_len")
        t.add_row(
            scope,
            str(fig["windows"]),
            f"{al['mean']:.2f} / {al['p50']:.2f}" if al else "–",
            f"{fig['draft_acceptance']:.1%}" if "draft_acceptance" in fig else "–",
            ", ".join(f"{p:.2f}" for p in fig.get("per_position", [])) or "–",
        )
    console.print(t)
    for k, v in report.server_args.items():
        console.print(f"  {k}: {v}", highlight=False)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)
    print_findings(console, report.findings, "Probe findings")
