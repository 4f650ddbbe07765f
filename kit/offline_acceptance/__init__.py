"""Offline acceptance of an EAGLE-3 draft on its target, as deployed and as servers run it.

What a draft *should* reach when wired correctly, what the user's deployment reaches, and what
each fault costs, measured on a transformers target (the small pair in `data/pair/` by
default) with the draft wired as an engine release wires it. Read in this order:

  measure.py     `evaluate`: one wiring, one set of prompts -> exact counts per prompt
  wiring.py      what reaches the draft under a release: its weights, hidden state, vocab map
  sampling.py    greedy or speculative-sampling verification; the verify-step walk
  intervals.py   bootstrap intervals over prompts; comparisons beyond the noise
  result.py      `OfflineResult` (figures, intervals, findings) and `OfflineRow`
  deployment.py  `healthy`, `as_deployed`, the what-if `fault_matrix`, `prompt_format_gap`
  prompts.py     prompt files, raw or through the target's chat template
  target.py      the target on CPU, a GPU or a device map; peak memory
"""

from kit.offline_acceptance.deployment import (
    as_deployed,
    as_fixed,
    fault_matrix,
    format_gap_finding,
    healthy,
    judge,
    prompt_format_gap,
)
from kit.offline_acceptance.intervals import Comparison, Interval
from kit.offline_acceptance.measure import Options, evaluate
from kit.offline_acceptance.prompts import Prompt, PromptFormat, load_prompts
from kit.offline_acceptance.result import OfflineResult, OfflineRow, compare
from kit.offline_acceptance.sampling import Sampler
from kit.offline_acceptance.target import DeviceMap, load_target
from kit.offline_acceptance.wiring import HEALTHY_RELEASE, Feed, Wiring

__all__ = [
    "HEALTHY_RELEASE",
    "Comparison",
    "DeviceMap",
    "Feed",
    "Interval",
    "OfflineResult",
    "OfflineRow",
    "Options",
    "Prompt",
    "PromptFormat",
    "Sampler",
    "Wiring",
    "as_deployed",
    "as_fixed",
    "compare",
    "evaluate",
    "fault_matrix",
    "format_gap_finding",
    "healthy",
    "judge",
    "load_prompts",
    "load_target",
    "prompt_format_gap",
]
