"""`python -m kit fix CKPT --for sglang==0.5.10 [--out DIR | --in-place]`.

Prints the rename plan and config.json changes that make every tensor load in that release;
with `--out` or `--in-place` it writes them (streamed, verified, atomic) and replays the release
on the result. Without either it only shows the plan.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "Rename keys and fix config.json so that every tensor loads in one engine release."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="draft checkpoint (file or folder with config.json)")
    parser.add_argument(
        "--for", dest="engine", required=True, help="ENGINE==X: sglang, vllm or lmdeploy"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, help="write a complete new folder here (must not exist)")
    where.add_argument(
        "--in-place",
        action="store_true",
        help="rewrite the checkpoint where it is, keeping the originals as *.orig",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kit.checkpoint import open_checkpoint
    from kit.config import load_draft_config
    from kit.engines import parse_engine
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.rewrite import plan_fix, verify_output, write_fixed

    release = parse_engine(args.engine)
    ck = open_checkpoint(args.path)
    if ck.config_path is None:
        raise KitError("no config.json beside the checkpoint", ck.path)
    plan = plan_fix(ck, load_draft_config(ck.config_path), release)
    result = {"plan": plan.to_dict(), "written": None, "after": None}
    if (args.out or args.in_place) and plan.changes_anything:
        written = write_fixed(ck, plan, out=args.out, in_place=args.in_place)
        after = verify_output(written, release)
        result["written"] = str(written)
        result["after"] = {
            "crashed": after.crashed,
            "loads_cleanly": after.loads_cleanly,
            "problems": [k.key for k in after.lost],
        }
    if args.json:
        sys.stdout.write(dumps(result) + "\n")
    else:
        _print(plan, result)
    after = result["after"]
    return 1 if after and (after["crashed"] or after["problems"]) else 0


def _print(plan, result: dict) -> None:
    from rich.table import Table

    from kit.console import make_console

    console = make_console()
    if not plan.changes_anything:
        console.print(f"[green]Nothing to fix: every tensor already loads in {plan.engine}.[/]")
        return
    if plan.renames:
        table = Table(title=f"Renames for {plan.engine}")
        table.add_column("checkpoint key")
        table.add_column("becomes")
        for old, new in plan.renames.items():
            table.add_row(old, new)
        console.print(table)
    for change in plan.config_changes:
        console.print(f"config.json: {change}")
    for note in plan.notes:
        console.print(f"[yellow]note:[/] {note}")
    if result["written"] is None:
        console.print("Plan only; pass --out DIR or --in-place to write it.")
        return
    after = result["after"]
    verdict = "[green]every tensor loads[/]" if not after["problems"] else "[red]problems remain[/]"
    console.print(f"Wrote {result['written']}; replayed on {plan.engine}: {verdict}")
