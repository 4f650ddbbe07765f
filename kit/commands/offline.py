"""`python -m kit offline`: the acceptance a draft reaches on its target, healthy and as deployed.

Without `--engine`: the healthy wiring only (what the draft should reach). With `--engine`: the
healthy wiring and the deployment as that release runs it, compared beyond the prompts' noise.
`--matrix`: the incident's what-if rows instead. A wiring the release cannot run is a row with
its crash finding; the command still exits 0 unless `--fail-on` says otherwise (it gates the
deployment's row, or with `--matrix` the healthy row: what-if rows are not the deployment).
"""

from __future__ import annotations

import argparse

from kit.commands._common import add_fail_on, add_sampling_arguments, gate, positive_int
from kit.errors import KitError

HELP = (
    "Measure offline acceptance (chain drafting; greedy or sampled verification) of a draft on "
    "its target: healthy, and as an engine release runs it (dropped weights, fc bypassed, …)."
)
NO_AUX_NEEDS_ENGINE = (
    "--no-aux-capture needs --engine: what the draft gets without aux capture depends on the "
    "release (SGLang hands over the final hidden state and its width gate skips fc; vLLM's fc "
    "rejects it at start-up)"
)
MATRIX_SETS_ITS_WIRING = (
    "--matrix runs its own wirings (aux capture off and on, each fix); drop --no-aux-capture, "
    "--aux-layers and --no-d2t, or run without --matrix"
)

BACKEND_RUNS_THE_DRAFT = (
    "--backend runs the draft as given in the real engine: drop --matrix, --aux-layers and "
    "--no-d2t (what-ifs the engine cannot be given), or run without --backend"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", required=True, metavar="DIR", help="transformers model folder")
    parser.add_argument("--draft", required=True, metavar="DIR", help="EAGLE-3 draft folder")
    wiring = parser.add_argument_group("the deployment")
    wiring.add_argument(
        "--engine",
        "--as-loaded-by",
        dest="engine",
        metavar="ENGINE==X",
        help="measure as this release runs the draft too: its load, its aux capture for the "
        "target class, e.g. sglang==0.5.10 (default: the healthy wiring only)",
    )
    wiring.add_argument("--target-class", help="model class serving the target (default: its own)")
    wiring.add_argument(
        "--no-aux-capture",
        action="store_true",
        help="the deployment captures no aux states: the draft gets what --engine's target "
        "hands over then (needs --engine)",
    )
    wiring.add_argument(
        "--aux-layers",
        type=int,
        nargs="+",
        metavar="K",
        help="what-if: feed these target states instead (state after K layers, 0 … n-1)",
    )
    wiring.add_argument("--no-d2t", action="store_true", help="what-if: draft ids as target ids")
    how = parser.add_argument_group("the measurement")
    how.add_argument("--k", type=positive_int, default=5, help="draft tokens per verify step")
    how.add_argument("--prompts", metavar="JSONL", help="default: prompts.jsonl beside the target")
    how.add_argument("--num-prompts", type=positive_int, help="only the first N prompts")
    how.add_argument("--max-new-tokens", type=positive_int, default=24)
    add_sampling_arguments(how)
    how.add_argument(
        "--count-as",
        metavar="ENGINE==X",
        help="count the step that reaches a stop token as this release does (default: --engine)",
    )
    how.add_argument("--device", default="cpu", help="cpu or cuda (the draft, and the target)")
    how.add_argument(
        "--device-map",
        choices=["auto", "balanced", "balanced_low_0", "sequential"],
        help="spread the target over every visible device (accelerate)",
    )
    real = parser.add_argument_group("the real engine")
    real.add_argument(
        "--backend",
        choices=["vllm", "sglang"],
        help="measure in the installed engine too (vllm: in-process vllm.LLM; sglang: its server "
        "on 127.0.0.1, on a CPU with the kit's stand-ins): its own counters beside the kit's "
        "prediction for that release",
    )
    real.add_argument(
        "--tensor-parallel-size", type=positive_int, default=1, help="GPUs for the target"
    )
    real.add_argument(
        "--engine-dtype",
        default="float32",
        help="the engine's dtype (default float32, the kit's arithmetic; bfloat16 for a big target)",
    )
    real.add_argument("--engine-log", metavar="FILE", help="write the engine's own log here")
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="the incident's what-if rows instead: healthy, --engine (default sglang==0.5.10) "
        "with aux capture off and on, each after the kit's fix",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_fail_on(parser)


def run(args: argparse.Namespace) -> int:
    from kit.checkpoint.config import load_target_config
    from kit.checkpoint.hub import require_local
    from kit.offline_acceptance import Options, fault_matrix, healthy, judge
    from kit.offline_acceptance.target import load_target
    from kit.offline_acceptance.wiring import check_aux_layers

    require_local(args.target, args.draft)
    if args.no_aux_capture and not args.engine:
        raise KitError(NO_AUX_NEEDS_ENGINE)
    if args.matrix and (args.no_aux_capture or args.aux_layers or args.no_d2t):
        raise KitError(MATRIX_SETS_ITS_WIRING)
    options = {
        "k": args.k,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "seed": args.seed,
        "prompt_format": args.prompt_format,
        "count_as": args.count_as or args.engine,
        "device": args.device,
        "device_map": args.device_map,
        "progress": not args.json,
    }
    Options(**options)  # every option checked before the target loads
    target_cfg = load_target_config(args.target)
    if args.aux_layers:
        check_aux_layers(args.aux_layers, target_cfg)
    prompts = _prompts(args, target_cfg.vocab_size)
    if args.backend:
        return _backend(args, options, prompts)
    common = {"prompts": prompts, "target_config": target_cfg, **options}
    common["target"] = load_target(args.target, args.device, args.device_map)
    if args.matrix:
        rows = fault_matrix(
            args.target,
            args.draft,
            args.engine or "sglang==0.5.10",
            **common,
            target_class=args.target_class,
        )
        gated = rows[0].findings  # what-if rows are not the deployment
    else:
        rows = (
            [_deployment_row(args, common)] if args.engine or args.aux_layers or args.no_d2t else []
        )
        rows.insert(0, healthy(args.target, args.draft, **common))
        if len(rows) == 2:  # measured first, so a bad option stops the run before any work
            judge(rows[1], rows[0])
        gated = rows[-1].findings
    return _report(args, rows, "matrix" if args.matrix else "rows", gated)


def _backend(args: argparse.Namespace, options: dict, prompts: list) -> int:
    """Healthy, the kit's prediction for the installed engine, and the engine's own figures."""
    if args.backend == "sglang":
        from kit.offline_acceptance.sglang_backend import installed_release, rows_in_sglang

        rows_in = rows_in_sglang
    else:
        from kit.offline_acceptance.vllm_backend import installed_release, rows_in_vllm

        rows_in = rows_in_vllm
    if args.matrix or args.aux_layers or args.no_d2t:
        raise KitError(BACKEND_RUNS_THE_DRAFT)
    installed_release()  # one line and exit 2 before any work when the engine is not there
    rows = rows_in(
        args.target,
        args.draft,
        args.engine,
        aux_capture=False if args.no_aux_capture else None,
        target_class=args.target_class,
        prompts=prompts,
        tensor_parallel_size=args.tensor_parallel_size,
        engine_dtype=args.engine_dtype,
        engine_log=args.engine_log,
        **options,
    )
    return _report(args, rows, "rows", rows[-1].findings)


def _report(args: argparse.Namespace, rows: list, key: str, gated: list) -> int:
    if args.json:
        from kit.findings import dumps
        from kit.schema import stamped

        print(dumps(stamped("offline", {key: [r.to_dict() for r in rows]})))
    else:
        from kit.report.console import make_console, print_findings, quiet

        if not quiet():
            _print(rows)
        print_findings(make_console(), gated)
    return gate(gated, args.fail_on)


def _deployment_row(args: argparse.Namespace, common: dict):
    """As deployed on `--engine` (or the healthy wiring), with the what-ifs given."""
    from kit.offline_acceptance import as_deployed, evaluate

    what_if = {"aux_layers": args.aux_layers, "use_d2t": not args.no_d2t, **common}
    if not args.engine:
        return evaluate(args.target, args.draft, None, **what_if)
    aux_capture = False if args.no_aux_capture else None
    return as_deployed(
        args.target,
        args.draft,
        args.engine,
        aux_capture=aux_capture,
        target_class=args.target_class,
        **what_if,
    )


def _prompts(args: argparse.Namespace, vocab_size: int) -> list:
    """The prompt file (or the one beside the target), every id checked against the target's
    vocabulary before it loads, cut to `--num-prompts` when given."""
    from pathlib import Path

    from kit.offline_acceptance import load_prompts
    from kit.offline_acceptance.prompts import default_prompts_file

    path = args.prompts or default_prompts_file(Path(args.target))
    return load_prompts(path, vocab_size)[: args.num_prompts or None]


def _print(rows) -> None:
    width = max(len(r.label) for r in rows) + 2
    print(
        f"{'wiring':{width}} {'accept len':>10} {'95% interval':>16} {'step-0':>6}  "
        "per position  | against healthy"
    )
    for r in rows:
        if r.result is None:
            print(f"{r.label:{width}} does not run: {r.crash.title if r.crash else '?'}")
            continue
        res = r.result
        pos = " ".join(f"{p:.2f}" for p in res.per_position)
        vs = ""
        if r.vs_healthy is not None:
            c = r.vs_healthy
            vs = f"  | {c.difference:+.3f} {c.interval}, {'beyond' if c.beyond_noise else 'within'} noise"
        # parameters never written: from the floor to the best case, not one figure
        al = f"1.00…{res.accept_len:.2f}" if res.undetermined else f"{res.accept_len:.3f}"
        print(
            f"{r.label:{width}} {al:>10} {res.accept_len_ci!s:>16} "
            f"{res.step0_accuracy:6.3f}  {pos}{vs}"
        )
        if res.undetermined:
            print(f"{'':{width}} best case only: {len(res.wiring.empty_params)} parameters hold "
                  "torch.empty memory (see OFFLINE_ACCEPTANCE_UNDETERMINED)")  # fmt: skip
        if (on := res.trained_positions) is not None:
            print(f"{'':{width}} {on.accept_len:10.3f} {on.accept_len_ci!s:>16} with the draft "
                  "steps where trained (see DRAFT_POSITIONS_LATE)")  # fmt: skip
    row = next((r for r in reversed(rows) if r.result is not None), None)
    if row is None or row.result is None:
        return
    last, s = row.result, row.result.settings
    print(
        f"{last.prompts} {s.prompt_format} prompts, k {s.k}, {s.verification}; {last.verify_steps} "
        f"verify steps ({row.label})"
    )
    print(f"counted as {s.counted_as}: {s.counting}")
    if s.temperature > 0:
        print(f"drafted as {s.counted_as}: {s.proposal}")
    for label, rate in last.accept_rate.items():
        print(f"accept rate {label:28} {'(not logged)' if rate is None else f'{rate:.3f}'}")
