"""`python -m kit trace`: which target layers reach the draft, how wide, whether fc runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kit.commands._common import add_fail_on, gate, positive_int

HELP = (
    "Trace the target -> draft hand-over for an engine release: captured layers, hidden width, "
    "the fc gate, and every draft hook's shape (meta device: full scale, no memory)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--draft",
        required=True,
        metavar="CKPT_OR_CONFIG",
        help="the draft's config.json, or its checkpoint (file or folder) with config.json",
    )
    parser.add_argument(
        "--target-config", required=True, metavar="CFG", help="the target's config.json"
    )
    parser.add_argument(
        "--engine", required=True, help="e.g. sglang==0.5.10, vllm==0.11.0, lmdeploy==0.18.0"
    )
    parser.add_argument(
        "--target-class",
        metavar="NAME",
        help="the target class the engine builds (default: the config's architectures[0])",
    )
    parser.add_argument(
        "--no-aux-capture",
        action="store_true",
        help="model a target whose aux hidden-state capture is not active",
    )
    parser.add_argument(
        "--cuda-graph",
        action="store_true",
        help="the server runs CUDA graphs (SGLang 0.4.9-0.5.10 replay the default layers)",
    )
    parser.add_argument(
        "--aux-convention",
        choices=("after_k_layers", "output_of_layer"),
        help="how the draft's aux ids were meant when trained (default: inferred from format)",
    )
    parser.add_argument("--device", choices=("meta", "cpu"), default="meta")
    parser.add_argument("--tokens", type=positive_int, default=8, help="tokens in the traced batch")
    parser.add_argument("--html", metavar="PATH", help="also write the data-path figure here")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_fail_on(parser)


def _draft_config(path: str):
    """A config.json, a folder holding one, or a checkpoint whose folder holds one."""
    from kit.checkpoint.config import load_draft_config
    from kit.checkpoint.files import open_checkpoint
    from kit.errors import KitError

    p = Path(path)
    if p.suffix == ".json" or (p.is_dir() and (p / "config.json").is_file()):
        return load_draft_config(p)
    ck = open_checkpoint(p)
    if ck.config_path is None:
        raise KitError("no config.json beside the checkpoint", p)
    return load_draft_config(ck.config_path)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from kit.engines import parse_engine

    parse_engine(args.engine)  # a bad release is one line before torch is imported

    from kit.checkpoint.config import load_target_config
    from kit.findings import dumps
    from kit.schema import stamped
    from kit.tracing.shapes import trace_draft

    draft = _draft_config(args.draft)
    if args.aux_convention:
        draft = dataclasses.replace(draft, aux_layer_convention=args.aux_convention)
    target = load_target_config(args.target_config)
    report = trace_draft(
        target,
        draft,
        args.engine,
        target_class=args.target_class,
        aux_capture=False if args.no_aux_capture else None,
        cuda_graph=args.cuda_graph,
        device=args.device,
        tokens=args.tokens,
    )
    if args.html:
        from kit.report.plots.datapath import datapath_figure

        datapath_figure(report).write_html(args.html, include_plotlyjs=True)
    if args.json:
        sys.stdout.write(dumps(stamped("trace", report.to_dict())) + "\n")
    else:
        _print_text(report)
    return gate(report.findings, args.fail_on)


def _print_text(report) -> None:
    from rich.table import Table

    from kit.report.console import make_console, print_findings

    c = report.capture
    console = make_console()
    console.print(
        f"[bold]{c.engine}[/] target {c.target_class}: {c.num_target_layers} layers, "
        f"hidden {c.target_hidden}; draft hidden {c.draft_hidden}, "
        f"trained on the states after {c.trained_layers} layers"
    )
    if c.startup_error:
        console.print(f"  [bold red]the server does not start:[/] {c.startup_error}")
    else:
        layers = (
            f"{c.captured_layers} (the engine's ids {c.engine_layer_ids})"
            if c.aux_capture
            else "none (aux capture off)"
        )
        graph = f"\n  CUDA-graph replays capture: {c.cuda_graph_layers}"
        console.print(
            f"  captured, as states after k layers: {layers}"
            + (graph if c.cuda_graph_layers is not None else "")
            + f"\n  hands the draft: {c.feeds}, {c.hidden_width} wide; fc expects "
            f"{c.fc_in_features}; fc {'runs' if report.fc_applied else 'does not run'}"
        )
        table = Table(title=f"Draft hooks ({report.device}, {report.tokens} tokens)")
        for col in ("hook", "shape", "dtype"):
            table.add_column(col)
        for h in report.hooks:
            table.add_row(h.name, str(list(h.shape)), h.dtype)
            if h.name == "aux_hidden_states" and report.bypassed_step:
                table.add_row(f"[red]{report.bypassed_step}[/]", "[red]bypassed[/]", "")
        if report.failed_step:
            table.add_row(f"[red]{report.failed_step}[/]", f"[red]fails: {report.error}[/]", "")
        console.print(table)
    print_findings(console, report.findings)
