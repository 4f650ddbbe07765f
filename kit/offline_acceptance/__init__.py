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

Its names load on first use (PEP 562): a module of this package that needs no torch (intervals,
result, prompts) imports without pulling torch in, so the core install (no extras) can read an
engine-check report or an offline result.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "as_deployed": "deployment",
    "as_fixed": "deployment",
    "fault_matrix": "deployment",
    "format_gap_finding": "deployment",
    "healthy": "deployment",
    "judge": "deployment",
    "prompt_format_gap": "deployment",
    "Comparison": "intervals",
    "Interval": "intervals",
    "Options": "measure",
    "evaluate": "measure",
    "Prompt": "prompts",
    "PromptFormat": "prompts",
    "load_prompts": "prompts",
    "OfflineResult": "result",
    "OfflineRow": "result",
    "compare": "result",
    "Sampler": "sampling",
    "DeviceMap": "target",
    "load_target": "target",
    "HEALTHY_RELEASE": "wiring",
    "Feed": "wiring",
    "Wiring": "wiring",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
