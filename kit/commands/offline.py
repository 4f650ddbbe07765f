"""`python -m kit offline`: the acceptance a draft reaches on its target, measured on CPU or GPU."""

from __future__ import annotations

import argparse
import json

from kit.commands._common import positive_int

HELP = (
    "Measure offline acceptance (chain drafting, greedy verification) of a draft on its target, "
    "optionally wired as an engine release would wire it (dropped weights, fc bypassed, no d2t)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", required=True, metavar="DIR", help="transformers model folder")
    parser.add_argument("--draft", required=True, metavar="DIR", help="EAGLE-3 draft folder")
    parser.add_argument(
        "--as-loaded-by",
        metavar="ENGINE",
        help="load the draft as this release does, e.g. sglang==0.5.10 (default: load it whole)",
    )
    parser.add_argument(
        "--no-aux-capture",
        action="store_true",
        help="hand the draft what the release gives when the target captures no aux states",
    )
    parser.add_argument(
        "--aux-layers",
        type=int,
        nargs="+",
        metavar="K",
        help="feed these target states instead (state after K layers, HF hidden_states[K])",
    )
    parser.add_argument("--no-d2t", action="store_true", help="use draft ids as target ids")
    parser.add_argument("--k", type=positive_int, default=5, help="draft tokens per verify step")
    parser.add_argument(
        "--prompts", metavar="JSONL", help="prompts (default: prompts.jsonl beside the target)"
    )
    parser.add_argument("--max-new-tokens", type=positive_int, default=24)
    parser.add_argument(
        "--count-as",
        metavar="ENGINE",
        help="count the step that reaches a stop token as this release does, e.g. sglang==0.5.10 "
        "(nothing past it) or vllm==0.11.2 (drafts verified past it too); default: --as-loaded-by",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="run the incident matrix instead: healthy, the release with aux capture off, each fix",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kit.findings import render_text
    from kit.organism import evaluate, fault_matrix

    common = {
        "prompts": args.prompts,
        "device": args.device,
        "max_new_tokens": args.max_new_tokens,
        "progress": not args.json,
        "count_as": args.count_as,
    }
    if args.matrix:
        rows = fault_matrix(
            args.target, args.draft, release=args.as_loaded_by or "sglang==0.5.10", k=args.k,
            **common,
        )  # fmt: skip
        if args.json:
            print(json.dumps({"matrix": [r.to_dict() for r in rows]}, indent=2))
        else:
            print(f"{'wiring':56} {'accept len':>10} {'step-0':>7}  per position")
            for r in rows:
                res = r.result
                pos = " ".join(f"{p:.2f}" for p in res.per_position)
                print(f"{r.label:56} {res.accept_len:10.3f} {res.step0_accuracy:7.3f}  {pos}")
            w = rows[0].result.wiring
            print(f"counted as {w['counted_as']}: {w['counting']}")
        return 0
    result = evaluate(
        args.target,
        args.draft,
        k=args.k,
        as_loaded_by=args.as_loaded_by,
        aux_capture=not args.no_aux_capture,
        aux_layers=args.aux_layers,
        use_d2t=not args.no_d2t,
        **common,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    w = result.wiring
    print(f"wiring: {w['as_loaded_by']}, hidden state {w['hidden_state']}", end="")
    print(f" {w['aux_layers']}" if w["aux_layers"] else "", end="")
    print(
        f", fc {'applied' if w['fc_applied'] else 'bypassed'}, d2t {'on' if w['use_d2t'] else 'off'}"
    )
    print(f"prompts {result.prompts}, verify steps {result.verify_steps}, k {result.k}")
    print(f"counted as {w['counted_as']}: {w['counting']}")
    print(f"accept len {result.accept_len:.3f}   step-0 accuracy {result.step0_accuracy:.3f}")
    print("per position  " + " ".join(f"{p:.3f}" for p in result.per_position))
    for label, rate in result.accept_rate.items():
        print(f"accept rate {label:28} {'(not logged)' if rate is None else f'{rate:.3f}'}")
    print(render_text(result.findings))
    return 0
