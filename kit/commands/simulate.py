"""`python -m kit simulate CKPT --engine sglang==0.5.10`: what a release does with every key.

With a version: every key's outcome, every engine parameter's state, and findings. Without one
(`--engine sglang`, or `all` for every engine): a matrix over every modelled release, consecutive
releases with the same outcome grouped, so "which releases load this draft as trained" can be
read at a glance.
"""

from __future__ import annotations

import argparse
import sys

from kit.commands._common import add_fail_on, gate

HELP = "Replay an engine release's draft loading: key outcomes, parameter states, findings."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        help="draft checkpoint (file or folder with config.json), or a Hub repo id org/name[@rev]",
    )
    parser.add_argument(
        "--engine",
        required=True,
        help="ENGINE==X (sglang, vllm, lmdeploy); a bare engine name (or all) prints a matrix",
    )
    parser.add_argument("--config", help="draft config.json (default: the one beside CKPT)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_fail_on(parser)


def run(args: argparse.Namespace) -> int:
    from kit.api import release_matrix, simulate
    from kit.engines import ENGINES, did_you_mean
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.schema import stamped

    if "==" not in args.engine:
        name = args.engine.strip().lower()
        if name != "all" and name not in ENGINES:
            hint = did_you_mean(args.engine, ENGINES)
            raise KitError(
                f"unknown engine {name!r}; "
                + (f"did you mean {hint}? " if hint else "")
                + f"use {', '.join(ENGINES)} or all"
            )
        rows = release_matrix(args.path, name)
        if args.json:
            from kit.load.replay import matrix_findings

            matrix = {"engine": name, "matrix": [r.to_dict() for r in rows],
                      "findings": matrix_findings(rows)}  # fmt: skip
            sys.stdout.write(dumps(stamped("matrix", matrix)) + "\n")
        else:
            _print_matrix(name, rows)
        return 0
    report = simulate(args.path, args.engine, config=args.config)
    if args.json:
        sys.stdout.write(dumps(stamped("simulate", report.to_dict())) + "\n")
    else:
        _print_report(report)
        _print_scope(args.path, args.engine)
    return gate(report.findings, args.fail_on)


def _print_scope(path: str, engine: str) -> None:
    """What a load replay does not look at, and the command that does: "no findings" here is
    about the keys alone, never a clean bill for the deployment."""
    import shlex

    from kit.report.console import make_console, print_wrapped

    console = make_console()
    print_wrapped(
        console,
        "simulate replays how the release loads the keys; it does not check the aux layer ids, "
        "the hidden states the target hands the draft, the launch line or the logs. Every check:",
        "",
        "",
    )
    print_wrapped(
        console,
        f"python -m kit doctor --draft {shlex.quote(str(path))} --engine {engine} "
        "--target-config TARGET_DIR [--launch LINE] [--log SERVER_LOG]",
        "  ",
        "    ",
    )


_COLOR = {
    "loaded": "green",
    "consumed": "green",
    "ignored": "cyan",
    "dropped_silently": "bold red",
    "warned": "yellow",
    "error": "bold red",
    "from_target": "cyan",
    "left_at_init": "bold red",
}


def _print_report(report) -> None:
    from rich.table import Table

    from kit.report.console import make_console, print_findings

    console = make_console()
    rewritten = report.rewritten
    title = f"Checkpoint keys in {report.engine}"
    keys = Table(title=title + (" (config.json as saved is refused)" if rewritten else ""))
    cols = ["key", "outcome"] + (["if config.json is rewritten"] if rewritten else [])
    for col in (*cols, "engine parameter", "shard", "message"):
        keys.add_column(col)
    for k in report.keys:
        shown = k.if_config_rewritten or k
        row = [k.key, _coloured(k.outcome)]
        if rewritten:
            row.append(_coloured(shown.outcome))
        shard = "" if shown.shard is None else str(shown.shard)
        keys.add_row(*row, shown.param or "", shard, shown.message)
    console.print(keys)
    served = rewritten or report
    params = Table(
        title=f"Engine parameters in {report.engine}"
        + (" (if config.json is rewritten)" if rewritten else "")
    )
    for col in ("parameter", "shape", "state", "init", "loaded from"):
        params.add_column(col)
    for p in served.params:
        params.add_row(
            p.name,
            "×".join(map(str, p.shape)),
            _coloured(p.state) + (" (unused)" if p.unused else ""),
            str(p.init),
            ", ".join(p.loaded_from) or p.message,
        )
    console.print(params)
    print_findings(console, report.findings, f"Findings for {report.engine}")


def _coloured(value) -> str:
    return f"[{_COLOR.get(str(value), 'green')}]{value}[/]"


def _print_matrix(engine: str, rows) -> None:
    from rich.table import Table

    from kit.load.replay import matrix_findings
    from kit.report.console import make_console, print_findings
    from kit.tracing.positions import positions_late

    title = "every engine" if engine == "all" else engine
    table = Table(title=f"{title}: what each release does with this checkpoint", show_lines=True)
    for col in ("engine", "releases", "as saved", "detail", "if config.json is rewritten"):
        table.add_column(col, overflow="fold")
    for r in rows:
        span = r.releases[0] if len(r.releases) == 1 else f"{r.releases[0]} … {r.releases[-1]}"
        if r.late_positions and not r.crashed:  # DRAFT_POSITIONS_LATE below the table
            span += f"\n[yellow]drafts {positions_late(r.late_positions)}[/]"
        color = {"loads fully": "green", "crashes": "bold red"}.get(r.outcome, "yellow")
        table.add_row(r.engine, span, f"[{color}]{r.outcome}[/]", r.detail, r.if_config_rewritten)
    console = make_console()
    console.print(table)
    print_findings(console, matrix_findings(rows))
    console.print("Fix for one release: python -m kit fix CKPT --engine ENGINE==X --out DIR")
