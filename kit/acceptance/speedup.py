"""The speedup a measured acceptance allows: expected tokens per verify step over the cost of
drafting them (Leviathan, Kalman & Matias, ICML 2023)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kit.acceptance.meaning import draft_steps
from kit.acceptance.model import LogRun

DEFAULT_DRAFT_COST = 0.05
SPEEDUP_FORMULA = "speedup = (1 + Σ_i p_i) / (1 + k·c)"
SPEEDUP_SOURCE = (
    "Leviathan, Kalman & Matias, 'Fast Inference from Transformers via Speculative Decoding' "
    "(ICML 2023), walltime improvement (1 − α^(k+1)) / ((1 − α)(k·c + 1)); the numerator is the "
    "expected tokens per verify step, written here with per-position acceptance p_i "
    "(p_i = α^(i+1) gives the paper's form); c = draft/target forward cost ratio"
)


@dataclass(frozen=True)
class Speedup:
    """Expected tokens per verify step and wall-time speedup over plain decoding."""

    tokens_per_step: float
    speedup: float
    draft_steps: int
    draft_cost: float
    formula: str = SPEEDUP_FORMULA
    source: str = SPEEDUP_SOURCE

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_per_step": round(self.tokens_per_step, 4),
            "speedup": round(self.speedup, 4),
            "draft_steps": self.draft_steps,
            "draft_cost": self.draft_cost,
            "formula": self.formula,
            "source": self.source,
        }


def expected_speedup(
    per_position: Sequence[float], draft_cost: float = DEFAULT_DRAFT_COST, conditional: bool = False
) -> Speedup:
    """Speedup from per-position acceptance.

    `per_position[i]` is P(draft i accepted) as vLLM reports it; with `conditional=True` it is
    P(draft i accepted | drafts before it accepted), e.g. offline step-i accuracies.
    """
    probs, alive = [], 1.0
    for p in per_position:
        alive = alive * p if conditional else p
        probs.append(alive)
    k = len(probs)
    tokens = 1 + sum(probs)
    return Speedup(tokens, tokens / (1 + k * draft_cost), k, draft_cost)


def speedup_from_accept_len(
    accept_len: float, draft_steps: int, draft_cost: float = DEFAULT_DRAFT_COST
) -> Speedup:
    """Same model when only the mean accept len (= expected tokens per step) is known."""
    return Speedup(accept_len, accept_len / (1 + draft_steps * draft_cost), draft_steps, draft_cost)


def speedup_for(run: LogRun, draft_cost: float = DEFAULT_DRAFT_COST) -> Speedup | None:
    if run.per_position:
        return expected_speedup(run.per_position, draft_cost)
    steps = draft_steps(run)
    if run.accept_len.mean is not None and steps:
        return speedup_from_accept_len(run.accept_len.mean, steps, draft_cost)
    return None
