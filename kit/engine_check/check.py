"""The engine check, start to end: the installed engine on the bundled pair with the user's
settings, its own counters beside the kit's prediction for exactly that release and those
settings, each departure located, explained where the kit can model it, matched to a known
defect, and (with `bisect`) isolated to one setting by reruns without each.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kit.engine_check import sglang, vllm
from kit.engine_check.deviation import deviation
from kit.engine_check.hypotheses import explain
from kit.engine_check.plan import RunPlan, Setting, Status
from kit.engine_check.predict import Predictor, measured_result, prompts_key
from kit.engine_check.report import BisectStep, EngineCheck, RunCheck
from kit.engine_check.runner import EngineRun, probe, run_engine
from kit.engine_check.verdict import findings, match, verdict_line
from kit.engines import parse_engine, release_findings
from kit.errors import KitError

DEFAULT_TEMPERATURE = 0.7  # the sampled run, unless the launch line sets the server's default
PLANNERS = {"vllm": vllm, "sglang": sglang}


def bundled_pair() -> tuple[Path, Path, Path]:
    """The pair the kit ships (target, draft, prompts), in a checkout or an installed wheel."""
    from kit.report.notebook import ROOT

    pair = ROOT / "data" / "pair"
    return pair / "target", pair / "draft", pair / "prompts.jsonl"


def engine_check(
    *,
    engine_python: str | Path | None = None,
    engine: str | None = None,
    launch: str | Path | None = None,
    speculative_config: dict[str, Any] | None = None,
    temperatures: tuple[float, ...] | None = None,
    top_p: float | None = None,
    k: int | None = None,
    num_prompts: int | None = None,
    seed: int = 0,
    bisect_flags: bool = False,
    setup: tuple[str, ...] = (),
    workdir: str | Path | None = None,
) -> EngineCheck:
    """Run the installed engine (in `engine_python`, default this Python) on the bundled pair
    with the settings of `launch` (or of a `speculative_config` alone) that apply to it, and
    compare its counters with the kit's prediction for that release. `temperatures`: one run each (0: greedy; default greedy and
    the line's sampling temperature, else 0.7). `setup`: `file.py:function` hooks run inside
    the engine's process before it starts. `workdir` keeps the engine's logs (default: a new
    temporary folder, named in the report)."""
    if launch is not None and speculative_config is not None:
        raise KitError(
            "give the launch line or the speculative config, not both: the line holds it"
        )
    t0 = time.perf_counter()
    python = str(engine_python or sys.executable)
    installed = probe(python)
    wanted = engine or (_launch_engine(launch) if launch is not None else None)
    name, release_text, distribution = installed.engine(wanted)
    if setup and name != "vllm":
        raise KitError(f"--setup runs inside vLLM's engine process; {name}'s server runs in "
                       "processes of its own")  # fmt: skip
    release = parse_engine(release_text)
    target, draft, prompts_file = bundled_pair()
    planner = PLANNERS[name]
    plan = planner.plan(release, launch, cuda=installed.cuda, k=k or trained_chain(draft),
                        speculative=speculative_config)  # fmt: skip
    runs = run_options(temperatures, top_p, seed, planner.sampling(launch, release))
    out = Path(workdir or tempfile.mkdtemp(prefix="eagle3-engine-check-"))
    draft, plan = served_draft(draft, release, plan, out)
    common = {"python": python, "target": target, "draft": draft, "prompts": prompts_file,
              "num_prompts": num_prompts, "seed": seed, "setup": tuple(setup)}  # fmt: skip
    ran = run_engine(plan, runs=runs, out=out / "engine", **common)
    check = EngineCheck(python, name, release_text, distribution, installed.cuda, plan,
                        0, log=str(ran.log))  # fmt: skip
    check.seconds["engine"] = round(time.perf_counter() - t0, 1)
    if ran.crash is not None and ran.crash.get("stage") not in runs:
        check.crash = ran.crash_text
    else:
        if ran.crash is not None:  # it started, and failed in one run: the runs before it stand
            check.failed[ran.crash["stage"]] = ran.crash_text
        predictor = _predictor(target, draft, release_text, prompts_file, num_prompts, plan, seed)
        predictor.counted_as = planner.counting(release)
        check.prompts = len(predictor.prompts)
        t1 = time.perf_counter()
        check.runs = [_compare(predictor, n, o, ran) for n, o in runs.items() if n in ran.runs]
        for run in check.runs:
            if run.departs and _explainable(check, run):
                run.explanation = _explain(predictor, run)
            if run.departs:
                run.defect = match(check, run)
        check.seconds["kit"] = round(time.perf_counter() - t1, 1)
    if bisect_flags and (check.crash or check.failed or any(r.departs for r in check.runs)):
        t2 = time.perf_counter()
        check.bisect = bisect(check, planner, runs, out, common)
        check.seconds["bisect"] = round(time.perf_counter() - t2, 1)
    check.findings = findings(check) + release_findings(release)  # a release the kit assumes
    check.verdict = verdict_line(check)
    check.seconds["total"] = round(time.perf_counter() - t0, 1)
    return check


def served_draft(draft: Path, release: Any, plan: RunPlan, out: Path) -> tuple[Path, RunPlan]:
    """The bundled draft as the release serves it: as shipped where it loads as saved, else as
    `kit fix --engine RELEASE` writes it (SGLang before 0.5.12 refuses its speculators config),
    for the engine and the kit's prediction alike; said in the plan either way."""
    from kit.checkpoint.draft import open_draft
    from kit.load.replay import simulate_load
    from kit.load.rewrite import plan_fix, write_fixed

    opened = open_draft(draft, weights=True)
    loaded = simulate_load(opened.checkpoint, opened.draft_config, release)
    if loaded.loads_cleanly:
        return draft, plan
    fix = plan_fix(opened.checkpoint, opened.draft_config, release)
    folder = out / f"draft-{release}"
    shutil.rmtree(folder, ignore_errors=True)  # the check's own, from an earlier run
    fixed = write_fixed(opened.checkpoint, fix, folder)
    why = f"{release} does not load it as shipped: {loaded.findings[0].title}" if loaded.findings \
        else f"{release} does not load it as shipped"  # fmt: skip
    note = Setting(
        "the bundled draft", f"as kit fix --engine {release} writes it", Status.CHECK, why
    )
    return fixed, replace(plan, settings=(*plan.settings, note))


def _launch_engine(launch: str | Path) -> str:
    from kit.deployment.launch import read_launch

    return read_launch(launch).engine


def trained_chain(draft: Path) -> int:
    """The chain the draft was trained to draft (its speculators config), else 5."""
    from kit.checkpoint.draft import open_draft

    return open_draft(draft, weights=False).draft_config.num_speculative_tokens or 5


def run_options(
    temperatures: tuple[float, ...] | None, top_p: float | None, seed: int, line: dict[str, float]
) -> dict[str, dict[str, Any]]:
    """The runs, by name: greedy and one temperature unless `temperatures` names them."""
    if temperatures is None:
        temperatures = (0.0, line.get("temperature", DEFAULT_TEMPERATURE))
    p = top_p if top_p is not None else line.get("top_p", 1.0)
    runs: dict[str, dict[str, Any]] = {}
    for t in dict.fromkeys(temperatures):
        if t < 0:
            raise KitError(f"a temperature must be 0 or above, got {t}")
        runs["greedy" if t == 0 else f"temperature {t:g}"] = (
            {} if t == 0 else {"temperature": t, "top_p": p, "seed": seed}
        )
    return runs


def _predictor(target: Path, draft: Path, release: str, prompts_file: Path,
               num_prompts: int | None, plan: RunPlan, seed: int) -> Predictor:  # fmt: skip
    from kit.checkpoint.config import load_target_config
    from kit.offline_acceptance.prompts import load_prompts

    vocab = load_target_config(target).vocab_size
    prompts = load_prompts(prompts_file, vocab)[: num_prompts or None]
    return Predictor(target, draft, release, prompts, {"k": plan.k, "seed": seed})


def _compare(predictor: Predictor, name: str, options: dict, ran: EngineRun) -> RunCheck:
    """One run: the kit's prediction, the engine's counts, and how they compare."""
    row = predictor.row(options)
    if row.result is None:  # the kit's own tables refuse the pair: a bug in the tables
        raise KitError(f"the kit cannot predict the bundled pair on {predictor.release}: "
                       f"{row.crash.title if row.crash else 'no result'}")  # fmt: skip
    result = row.result
    ideal = result.trained_positions or result
    release = result if result.trained_positions is not None else None
    got = ran.runs[name]
    if got["key"] != prompts_key(predictor.prompts):
        raise KitError("the engine ran other prompts than the kit predicted")
    measured = measured_result(ideal, got["per_prompt"], got["key"])
    run = RunCheck(name, options, _plain(ideal), _plain(release) if release else None, measured)
    run.deviation = deviation(run.ideal, measured)
    if run.release is not None:
        run.against_release = deviation(run.release, measured)
    return run


def _explainable(check: EngineCheck, run: RunCheck) -> bool:
    """Whether to try the kit's models on a departure: not when the engine counts what the kit
    predicts for the release as it runs the draft (a defect the kit models), and not for a
    sampled run whose greedy run is as predicted (every model would show greedy too)."""
    if run.against_release is not None and not run.against_release.beyond_noise:
        return False
    greedy = [r for r in check.runs if not r.sampled]
    return not (run.sampled and greedy and not any(r.departs for r in greedy))


def _explain(predictor: Predictor, run: RunCheck):
    layers = list(run.ideal.wiring.layers)
    return explain(run.deviation, predictor, run.options, run.ideal, run.measured, layers,
                   _num_layers(predictor))  # fmt: skip


def _plain(result: Any) -> Any:
    """A result without the findings the offline measurement attached (the check makes its own)."""
    return replace(result, findings=[], trained_positions=None)


def _num_layers(predictor: Predictor) -> int:
    from kit.checkpoint.config import load_target_config

    return load_target_config(predictor.target_dir).num_hidden_layers


def bisect(
    check: EngineCheck, planner: Any, runs: dict, out: Path, common: dict
) -> list[BisectStep]:
    """One engine rerun per setting that can change drafting, without it: the runs that
    departed (every run, when the engine did not start) compared with the same predictions."""
    departed = {r.name: r for r in check.runs if r.departs}
    wanted = {n: runs[n] for n in [*departed, *check.failed]} if departed or check.failed else runs
    steps = []
    for i, (label, plan) in enumerate(planner.bisect_steps(check.plan, check.cuda)):
        ran = run_engine(plan, runs=wanted, out=out / f"bisect-{i}", **common)
        step = BisectStep(label, ran.crash_text)
        if ran.crash is None:
            for name, run in departed.items():
                got = ran.runs[name]
                measured = measured_result(run.ideal, got["per_prompt"], got["key"])
                step.deviations[name] = deviation(run.ideal, measured)
        steps.append(step)
    return steps
