"""`python -m kit simulate CKPT --engine sglang==0.5.10`: what a release does with every key.

With a version: every key's outcome, every engine parameter's state, and findings. Without one
(`--engine sglang`): a matrix over every supported release, consecutive releases with the same
outcome grouped, so "upgrade to X or rename keys" can be read at a glance.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

HELP = "Replay an engine release's draft loading: key outcomes, parameter states, findings."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="draft checkpoint (file or folder with config.json)")
    parser.add_argument(
        "--engine",
        required=True,
        help="sglang==X or vllm==X; a bare engine name prints a matrix over every release",
    )
    parser.add_argument("--config", help="draft config.json (default: the one beside CKPT)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


@dataclass
class MatrixRow:
    """Consecutive releases with the same outcome for this checkpoint."""

    releases: list[str]
    outcome: str  # "loads fully" | "drops N keys" | "crashes"
    detail: str
    config: str  # "" or why the release refuses config.json as written

    def to_dict(self) -> dict:
        return {
            "first": self.releases[0],
            "last": self.releases[-1],
            "releases": self.releases,
            "outcome": self.outcome,
            "detail": self.detail,
            "config": self.config,
        }


def summarise(report) -> tuple[str, str]:
    """One release's verdict for the matrix: (outcome, detail)."""
    from kit.engines.params import DROPPED, WARNED

    if report.crashed:
        exc = next(
            (f.title.split(": ", 1)[-1] for f in report.findings if f.code == "STARTUP_CRASH"), ""
        )
        return "crashes", exc
    lost = [k.key for k in report.keys if k.outcome in (DROPPED, WARNED)]
    if lost:
        shown = ", ".join(lost[:3]) + (f" … (+{len(lost) - 3})" if len(lost) > 3 else "")
        return f"drops {len(lost)} keys", shown
    at_init = [p.name for p in report.params if p.state == "left_at_init"]
    return "loads fully", ("left at init: " + ", ".join(at_init)) if at_init else ""


def matrix(ck, cfg, engine: str) -> list[MatrixRow]:
    from kit.engines import all_releases
    from kit.loading import simulate_load

    rows: list[MatrixRow] = []
    for rel in all_releases(engine):
        report = simulate_load(ck, cfg, rel)
        outcome, detail = summarise(report)
        config = next((f.title for f in report.findings if f.code == "UNSUPPORTED_CONFIG"), "")
        config = config.split(": ", 1)[-1] if config else ""
        last = rows[-1] if rows else None
        if last and (last.outcome, last.detail, last.config) == (outcome, detail, config):
            last.releases.append(str(rel.version))
        else:
            rows.append(MatrixRow([str(rel.version)], outcome, detail, config))
    return rows


def run(args: argparse.Namespace) -> int:
    from kit.checkpoint import open_checkpoint
    from kit.config import load_draft_config
    from kit.engines import parse_engine
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.loading import simulate_load

    ck = open_checkpoint(args.path)
    config_path = args.config or ck.config_path
    if config_path is None:
        raise KitError("no config.json beside the checkpoint; pass --config", ck.path)
    cfg = load_draft_config(config_path)
    if "==" not in args.engine:
        name = args.engine.strip().lower()
        rows = matrix(ck, cfg, name)
        if args.json:
            sys.stdout.write(dumps({"engine": name, "matrix": [r.to_dict() for r in rows]}) + "\n")
        else:
            _print_matrix(name, rows)
        return 0
    report = simulate_load(ck, cfg, parse_engine(args.engine))
    if args.json:
        sys.stdout.write(dumps(report.to_dict()) + "\n")
    else:
        _print_report(report)
    return 0


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

    from kit.console import make_console
    from kit.findings import render_table

    console = make_console()
    keys = Table(title=f"Checkpoint keys in {report.engine}")
    for col in ("key", "outcome", "engine parameter", "shard", "message"):
        keys.add_column(col)
    for k in report.keys:
        color = _COLOR.get(k.outcome, "white")
        shard = "" if k.shard is None else str(k.shard)
        keys.add_row(k.key, f"[{color}]{k.outcome}[/]", k.param or "", shard, k.message)
    console.print(keys)
    params = Table(title=f"Engine parameters in {report.engine}")
    for col in ("parameter", "shape", "state", "init", "loaded from"):
        params.add_column(col)
    for p in report.params:
        color = _COLOR.get(p.state, "green")
        params.add_row(
            p.name,
            "×".join(map(str, p.shape)),
            f"[{color}]{p.state}[/]",
            p.init,
            ", ".join(p.loaded_from) or p.message,
        )
    console.print(params)
    console.print(render_table(report.findings, f"Findings for {report.engine}"))


def _print_matrix(engine: str, rows: list[MatrixRow]) -> None:
    from rich.table import Table

    from kit.console import make_console

    table = Table(title=f"{engine}: what each release does with this checkpoint", show_lines=True)
    for col in ("releases", "outcome", "detail", "config.json as written"):
        table.add_column(col, overflow="fold")
    reasons = list(dict.fromkeys(r.config for r in rows if r.config))
    for r in rows:
        span = r.releases[0] if len(r.releases) == 1 else f"{r.releases[0]} … {r.releases[-1]}"
        color = {"loads fully": "green", "crashes": "bold red"}.get(r.outcome, "yellow")
        config = f"refused [{reasons.index(r.config) + 1}]" if r.config else "accepted"
        table.add_row(span, f"[{color}]{r.outcome}[/]", r.detail, config)
    console = make_console()
    console.print(table)
    for i, reason in enumerate(reasons, 1):
        console.print(
            f"[{i}] {reason}; the key replay assumes config.json was rewritten", markup=False
        )
    console.print(f"Fix for one release: python -m kit fix CKPT --for {engine}==X --out DIR")
