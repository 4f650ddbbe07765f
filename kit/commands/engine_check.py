"""`python -m kit engine-check`: is the installed engine build drafting right?

The installed vLLM or SGLang (this Python, or `--engine-python`) runs the bundled pair with the
settings of `--launch` that apply to it; its own counters are set beside the kit's prediction for exactly
that release and those settings. The verdict: "the engine drafts as expected", or a finding per
departure (a known defect with its source and fixed release, else an unexplained engine-side
loss), located in the chain. The JSON report (`--report`) is evidence for `doctor --engine-check`
and `run --engine-check`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kit.commands._common import add_fail_on, gate, non_negative_float, positive_int

HELP = (
    "Run the installed engine (vLLM or SGLang) on the bundled pair with your launch flags and "
    "compare its own counters with the kit's prediction for that release: the first thing to "
    "run after an engine upgrade or a flag change."
)
DEFAULT_REPORT = "engine-check.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    where = p.add_argument_group("the engine")
    where.add_argument(
        "--engine-python",
        metavar="PATH",
        help="the Python that has the engine (default: this one)",
    )
    where.add_argument(
        "--engine",
        choices=["vllm", "sglang"],
        help="which engine, when that Python has both (default: the launch line's, or the one "
        "installed)",
    )
    where.add_argument(
        "--launch",
        metavar="TEXT_OR_FILE",
        help="your launch line (or the script holding it): every flag that applies to the pair "
        "runs, the rest is named as dropped",
    )
    where.add_argument(
        "--speculative-config",
        metavar="JSON",
        help="a speculative config alone (vLLM's, as an offline LLM takes it), instead of a line",
    )
    how = p.add_argument_group("the runs")
    how.add_argument(
        "--temperature",
        type=non_negative_float,
        action="append",
        metavar="T",
        help="one run per value, 0 greedy (default: greedy and the line's "
        "--override-generation-config temperature, else 0.7)",
    )
    how.add_argument("--top-p", type=float, help="the sampled runs' top-p (default 1.0)")
    how.add_argument("--k", type=positive_int, help="chain length (default: the line's, else 5)")
    how.add_argument("--num-prompts", type=positive_int, help="the first N of the pair's 300")
    how.add_argument("--seed", type=int, default=0, help="the engine's seed and the intervals'")
    how.add_argument(
        "--bisect-flags",
        action="store_true",
        help="when a run departs (or the engine does not start), rerun without each setting "
        "that can change drafting, one at a time, to isolate it",
    )
    how.add_argument(
        "--setup",
        action="append",
        default=[],
        metavar="FILE.py:FUNCTION",
        help="call FUNCTION from FILE.py inside the engine's process before it starts (a patch "
        "to try); repeatable",
    )
    out = p.add_argument_group("the report")
    out.add_argument(
        "--report",
        type=Path,
        default=Path(DEFAULT_REPORT),
        help=f"write the JSON report here, for doctor --engine-check (default {DEFAULT_REPORT})",
    )
    out.add_argument(
        "--workdir", type=Path, help="keep the engine's logs here (default: a temp dir)"
    )
    out.add_argument("--json", action="store_true", help="print the report as JSON")
    add_fail_on(p)


def run(args: argparse.Namespace) -> int:
    from kit.engine_check.check import engine_check
    from kit.errors import KitError
    from kit.findings import dumps
    from kit.schema import stamped

    for hook in args.setup:
        path, sep, name = hook.rpartition(":")
        if not sep or not name.isidentifier() or not Path(path).is_file():
            raise KitError("--setup takes FILE.py:FUNCTION of a file that exists", hook)
    check = engine_check(
        engine_python=args.engine_python,
        engine=args.engine,
        launch=args.launch,
        speculative_config=_speculative(args.speculative_config),
        temperatures=tuple(args.temperature) if args.temperature else None,
        top_p=args.top_p,
        k=args.k,
        num_prompts=args.num_prompts,
        seed=args.seed,
        bisect_flags=args.bisect_flags,
        setup=tuple(
            str(Path(h.rpartition(":")[0]).resolve()) + ":" + h.rpartition(":")[2]
            for h in args.setup
        ),
        workdir=args.workdir,
    )
    text = dumps(stamped("engine-check", check.to_dict()))
    args.report.write_text(text + "\n")
    if args.json:
        print(text)
    else:
        _print(check, args.report)
    return gate(check.findings, args.fail_on)


def _speculative(text: str | None) -> dict | None:
    """--speculative-config as a JSON object, or one clear error."""
    if text is None:
        return None
    from kit.errors import KitError
    from kit.limits import NOT_JSON, try_loads

    value = try_loads(text)
    if value is NOT_JSON or not isinstance(value, dict):
        raise KitError(f"--speculative-config takes a JSON object, got {text[:60]!r}")
    return value


def _print(check, report: Path) -> None:
    from kit.report.console import make_console, print_findings, print_wrapped, quiet

    console = make_console()
    if not quiet():
        console.print(f"{check.release} ({check.distribution}, "
                      f"{'CUDA' if check.cuda else 'no CUDA device'}) in {check.python}",
                      markup=False)  # fmt: skip
        console.print(f"verdict: {check.verdict}", style="bold", markup=False)
        for line in table(check):
            console.print(line, markup=False)
        for s in check.plan.settings:
            print_wrapped(console, str(s), "  ", "      ")
    print_findings(console, check.findings, "Findings")
    if not quiet():
        seconds = ", ".join(f"{k} {v:g} s" for k, v in check.seconds.items())
        print_wrapped(console, f"report: {report}; engine log: {check.log}; {seconds}", "", "  ")


def table(check) -> list[str]:
    """Every run side by side: the engine's figures, the kit's, and where they part."""
    lines = [f"{'run':16} {'engine':>22} {'kit':>22}  per position (engine/kit)"]
    for r in check.runs:
        m, p = r.measured, r.ideal
        pos = " ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(m.per_position, p.per_position,
                                                              strict=True))  # fmt: skip
        lines.append(f"{r.name:16} {m.accept_len:>7.3f} {m.accept_len_ci!s:>14} "
                     f"{p.accept_len:>7.3f} {p.accept_len_ci!s:>14}  {pos}")  # fmt: skip
        if r.release is not None:  # the release runs a defect the kit models: its prediction too
            q = r.release
            said = f"as {check.release} runs it"
            lines.append(f"{'':16} {'':>22} {q.accept_len:>7.3f} {q.accept_len_ci!s:>14}  {said}")
        if r.departs:
            lines.append(f"{'':16} departs: {r.deviation.where()}")
    return lines
