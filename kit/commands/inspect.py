"""`python -m kit inspect PATH`: tensors by module, detected trainer format, config and findings."""

from __future__ import annotations

import argparse
import sys

from kit.commands._common import add_fail_on, gate

HELP = "Read a draft checkpoint's headers and config: format, tensors by module, findings."

# Show every tensor up to this many; beyond it (a full target) one line per module.
MAX_TENSOR_ROWS = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        help="a .safetensors file, an index .json, a .bin/.pt, a folder or a Hub repo id org/name[@rev]",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    read = parser.add_mutually_exclusive_group()
    read.add_argument(
        "--stats",
        dest="stats_read",
        action="store_const",
        const="full",
        default="sampled",
        help="read every tensor byte for the statistics (default: a draft's tensors are "
        "sampled, 1 MiB each, enough for LOOKS_UNTRAINED and D2T_INVALID)",
    )
    read.add_argument(
        "--header-only",
        dest="stats_read",
        action="store_const",
        const="none",
        help="read headers and config.json only, no tensor bytes",
    )
    add_fail_on(parser)


def run(args: argparse.Namespace) -> int:
    from kit.checkpoint.inspection import StatsRead, inspect_checkpoint
    from kit.findings import dumps
    from kit.schema import stamped

    report = inspect_checkpoint(args.path, stats=StatsRead(args.stats_read))
    if args.json:
        sys.stdout.write(dumps(stamped("inspect", report.to_dict())) + "\n")
    else:
        _print_text(report)
    return gate(report.findings, args.fail_on)


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _print_text(report) -> None:
    from rich.tree import Tree

    from kit.checkpoint.config import DraftConfig
    from kit.checkpoint.files import total_bytes
    from kit.checkpoint.inspection import module_of
    from kit.report.console import make_console, print_findings

    console = make_console()
    ck = report.checkpoint
    console.print(
        f"[bold]{report.path}[/]  {ck.kind}, {len(ck.files)} file(s), "
        f"{len(ck.tensors)} tensors, {_human(total_bytes(ck))}"
    )
    fmt = report.format
    console.print(
        f"[bold]format[/] {fmt.name} (layout {fmt.layout}, confidence {fmt.confidence:.2f})"
        + (f": {fmt.description}" if fmt.description else "")
    )
    for e in fmt.evidence:
        mark = "[red]✗[/]" if e.startswith("NOT: ") else "[green]✓[/]"
        console.print(f"  {'[yellow]?[/]' if e.startswith('UNKNOWN') else mark} {e}")

    modules: dict[str, list] = {}
    for t in ck.tensors.values():
        modules.setdefault(module_of(t.name), []).append(t)
    tree = Tree("[bold]tensors by module[/]")
    for mod in sorted(modules):
        infos = modules[mod]
        dtypes = ",".join(sorted({t.dtype for t in infos}))
        node = tree.add(
            f"[bold]{mod}[/] ({len(infos)}, {dtypes}, {_human(sum(t.nbytes for t in infos))})"
        )
        if len(ck.tensors) <= MAX_TENSOR_ROWS:
            for t in infos:
                stat = report.stats.get(t.name)
                extra = (
                    f"  mean {stat.mean:.3g} std {stat.std:.3g} [{stat.min:.3g}, {stat.max:.3g}]"
                    + (" (sampled)" if stat.sampled else "")
                    if stat is not None and stat.values_read
                    else ""
                )
                node.add(f"{t.name}  {t.dtype} {list(t.shape)}  {t.file.name}{extra}")
    console.print(tree)

    cfg = report.config
    if isinstance(cfg, DraftConfig):
        aux = (
            f"{cfg.aux_layer_ids} ({cfg.aux_layer_convention}, from {cfg.aux_ids_location})"
            if cfg.aux_layer_ids
            else "none given (engine default)"
        )
        console.print(
            f"[bold]draft config[/] ({cfg.source}, {', '.join(cfg.architectures) or 'no arch'}): "
            f"hidden {cfg.hidden_size}, heads {cfg.num_attention_heads}/{cfg.num_key_value_heads} "
            f"× {cfg.head_dim}, intermediate {cfg.intermediate_size}, layers "
            f"{cfg.num_hidden_layers}, vocab {cfg.vocab_size} → draft {cfg.draft_vocab_size}, "
            f"target width {cfg.target_width}, dtype {cfg.dtype}\n"
            f"  aux layer ids {aux}; norm_before_residual {cfg.norm_before_residual}, "
            f"norm_before_fc {cfg.norm_before_fc}, fc_norm {cfg.fc_norm}, "
            f"norm_output {cfg.norm_output}, use_aux_hidden_state {cfg.use_aux_hidden_state}"
        )
    elif cfg is not None:
        console.print(
            f"[bold]target config[/]: {cfg.architecture} ({cfg.model_type}), "
            f"{cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, vocab {cfg.vocab_size}"
        )
    print_findings(console, report.findings)
