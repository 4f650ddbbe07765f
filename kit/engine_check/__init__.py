"""The engine check: is the installed engine build drafting right?

Some acceptance losses come from the engine, not the draft (a release that runs draft steps at
the wrong position, a CPU build whose sampled verification reads uninitialised memory, a flag
whose code path loses drafts). The kit predicts exactly what the bundled pair should reach on
each release, under that release's counting, so the pair is a calibrated probe: run it through
the user's engine with the user's settings and every difference beyond the prompts' noise is the
engine's. Read in this order:

  check.py       `engine_check`: plan, engine run, kit prediction, comparison, bisect, findings
  plan.py        the settings that ran (applied, dropped with the reason, set by the check)
  vllm.py        a vLLM launch line as `vllm.LLM` arguments; the reruns a bisect tries
  sglang.py      an SGLang launch line as server arguments; the reruns a bisect tries
  runner.py      which engine a Python has; one engine start in a process of its own
  worker.py      the engine side, run in the engine's Python
  predict.py     the kit's prediction on the same prompts and settings, and its what-ifs
  deviation.py   where the engine's counts leave the prediction, and the shape of it
  hypotheses.py  the explanations the kit can predict (a count one short, late positions …)
  defects.py     known engine defects as data: releases, settings, signature, source, fix
  verdict.py     the findings and the one-line verdict
  report.py      the result, as JSON, and read back for doctor and the postmortem
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kit.engine_check.report import EngineCheck

__all__ = ["engine_check"]


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
    """The installed engine (vLLM or SGLang, in `engine_python`, default this Python) on the
    bundled pair with `launch`'s settings (or a `speculative_config`'s), against the kit's
    prediction for that release: a verdict and findings (`kit.engine_check.check.engine_check`
    has the details)."""
    from kit.engine_check.check import engine_check as run

    return run(engine_python=engine_python, engine=engine, launch=launch,
               speculative_config=speculative_config, temperatures=temperatures, top_p=top_p, k=k, num_prompts=num_prompts, seed=seed,
               bisect_flags=bisect_flags, setup=setup, workdir=workdir)  # fmt: skip
