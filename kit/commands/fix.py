"""`python -m kit fix CKPT --for sglang==0.5.10 [--out DIR | --in-place]`, `fix CKPT --undo`.

Prints the rename plan and config.json changes that make every tensor load in that release;
with `--out` or `--in-place` it writes them (streamed, verified, atomic) and replays the release
on the result. Without either it only shows the plan. `--in-place` with renames that keep every
key's byte length rewrites only the headers, after an undo record that `--undo` restores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "Rename keys and fix config.json so that every tensor loads in one engine release."
GUARANTEE = (
    "--in-place streams each file to a verified temporary copy and renames it into place, "
    "keeping the original as *.orig, unless every rename keeps its key's byte length "
    "(layers.0. <-> midlayer.) and no other name (symlink, hard link) shares the file: then "
    "only the header is rewritten, in place, in time "
    "independent of the checkpoint's size, after CKPT.fix-undo.json (the original headers and "
    "config.json) is written and fsynced. Killed at any point, no tensor byte has changed and "
    "each header is the original, the fixed one, or (a write torn by a power loss, or a header "
    "longer than a page cut by a kill) a byte-wise mix of the two; run the same fix again to "
    "complete it, or `fix CKPT --undo` to restore the original byte for byte."
)

# A fixed copy holds every tensor byte, so a Hub draft has to be downloaded to write one.
WRITE_NEEDS_BYTES = (
    "a Hub repo read by its headers cannot be written: the plan above needs no download, "
    "writing it does; add --download (with --out DIR) to fetch the repo and write the fixed copy"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = GUARANTEE
    parser.add_argument(
        "path",
        help="draft checkpoint (file or folder with config.json), or a Hub repo id org/name[@rev]",
    )
    parser.add_argument(
        "--engine",
        "--for",
        dest="engine",
        help="ENGINE==X: the release to fix for (sglang, vllm, lmdeploy, tensorrt_llm); "
        "--for is the older spelling",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, help="write a complete new folder here (must not exist)")
    where.add_argument(
        "--in-place",
        action="store_true",
        help="rewrite the checkpoint where it is (header-only, or keeping the originals as *.orig)",
    )
    where.add_argument(
        "--undo",
        action="store_true",
        help="restore a checkpoint fixed header-only in place, byte for byte, from its undo record",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kit.checkpoint.config import load_draft_config
    from kit.checkpoint.files import open_checkpoint
    from kit.engines import parse_engine
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.load.fix_effects import stops_loading_on
    from kit.load.header_fix import complete, find_record
    from kit.load.rewrite import plan_fix, verify_output, write_fixed
    from kit.schema import stamped

    if args.undo:
        return _undo(args)
    if not args.engine:
        raise KitError("say which release to fix for: --engine ENGINE==X (or --undo)")
    release = parse_engine(args.engine)
    recovered = complete(Path(args.path)) if args.in_place else None
    ck = open_checkpoint(args.path)
    if ck.config_path is None:
        raise KitError("no config.json beside the checkpoint", ck.path)
    cfg = load_draft_config(ck.config_path)
    plan = plan_fix(ck, cfg, release)
    if ck.source is not None and (args.out or args.in_place):
        raise KitError(WRITE_NEEDS_BYTES, Path(ck.source.label))
    result = {"plan": plan.to_dict(), "written": None, "after": None, "undo_record": None}
    result["stops_loading_on"] = stops_loading_on(ck, cfg, plan) if plan.changes_anything else {}
    if recovered:
        result["plan"]["notes"].insert(0, recovered)
    if (args.out or args.in_place) and plan.changes_anything:
        written = write_fixed(ck, plan, out=args.out, in_place=args.in_place)
        after = verify_output(written, release)
        record = find_record(Path(args.path)) if args.in_place else None
        result["written"] = str(written)
        result["undo_record"] = str(record) if record else None
        result["after"] = {
            "crashed": after.crashed,
            "loads_cleanly": after.loads_cleanly,
            "problems": [k.key for k in after.lost],
        }
    if args.json:
        sys.stdout.write(dumps(stamped("fix", result)) + "\n")
    else:
        _print(plan, result)
    after = result["after"]
    return 1 if after and (after["crashed"] or after["problems"]) else 0


def _undo(args: argparse.Namespace) -> int:
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.load.header_fix import undo
    from kit.schema import stamped

    if args.engine:
        raise KitError("--undo restores what the undo record holds; it takes no --for")
    restored = undo(Path(args.path))
    if args.json:
        sys.stdout.write(
            dumps(stamped("undo", {"undone": str(args.path), "restored": restored})) + "\n"
        )
    else:
        print(f"Restored {', '.join(restored)} in {args.path} byte for byte; undo record removed.")
    return 0


def _print(plan, result: dict) -> None:
    from rich.table import Table

    from kit.report.console import make_console

    console = make_console()
    if not plan.changes_anything:
        console.print(f"[green]Nothing to rename: every tensor already loads in {plan.engine}.[/]")
        for note in plan.notes:  # what no rename changes, said rather than hidden
            console.print(f"[yellow]still:[/] {note}")
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
    if lost := result["stops_loading_on"]:
        from kit.load.fix_effects import spans

        console.print(
            f"[bold yellow]warning:[/] the output stops loading on {spans(lost)}, which load the "
            "checkpoint as given: keep the original (--out, not --in-place) for those engines"
        )
    if result["written"] is None:
        console.print("Plan only; pass --out DIR or --in-place to write it.")
        return
    after = result["after"]
    verdict = "[green]every tensor loads[/]" if not after["problems"] else "[red]problems remain[/]"
    console.print(f"Wrote {result['written']}; replayed on {plan.engine}: {verdict}")
    if result["undo_record"]:
        console.print(
            f"Headers rewritten in place; undo record {result['undo_record']} "
            "(`python -m kit fix PATH --undo` restores the original)"
        )
