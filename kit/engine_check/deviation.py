"""Where an engine's counts leave the kit's prediction, and what the departure looks like.

The engine and the kit ran the same prompts with the same settings, so their figures compare
paired: every bootstrap resample draws the same prompts for both (`kit.offline_acceptance.
intervals`). A run deviates when its accept length, or the acceptance at one draft position, differs
beyond the prompts' noise; every test of a run is held at a share of one family-wise error
(`FAMILY_ERROR`), so a healthy engine with k positions stays quiet at that rate, not k times it.

Positions are read as conditional rates: at position i, the share of steps that reached i (drafts
0 … i-1 accepted) whose draft i was accepted too. A fault at one position then shows at that
position only, instead of carrying into every later one, so the first position beyond the noise
is where the fault starts. Two shapes need no interval at all and are read off the counts:

  * nothing accepted from position p on (the engine's counters hold zero there, the kit's not);
  * a count short of what the engine emitted: each verify step emits its accepted drafts plus
    one token, so verify steps + accepted drafts can never be fewer than the tokens emitted after
    the prefill (a release may count drafts past a stop token, making them more, never fewer).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from kit.offline_acceptance.intervals import Comparison, Interval, percentile_interval
from kit.offline_acceptance.result import OfflineResult

FAMILY_ERROR = 0.05  # the chance a healthy run is called deviating, all its tests together
# Prompts whose counts account for fewer tokens than they emitted, before that is a shape (a step
# the engine runs without drafting emits one token no count holds; never seen on the pair).
COUNT_SHORT_SHARE, COUNT_SHORT_MIN = 0.02, 2
# Drafts the kit accepts at a position before the engine's zero there is a shape, not chance
# (a sampled engine misses 10 expected acceptances with probability below 1e-4).
ZERO_FROM_MIN = 10


class Pattern(StrEnum):
    """What the departure looks like along the chain."""

    COUNT_SHORT = "the engine's count falls short of the tokens it emitted"
    NOTHING_FROM = "nothing accepted from this position on"
    ONE_POSITION = "this position only"
    FROM_POSITION = "this position and later ones"
    OVERALL = "the accept length, no single position beyond the noise"


@dataclass(frozen=True)
class PositionDelta:
    """Conditional acceptance at one draft position: the kit's, the engine's, and the interval
    of their difference (engine − kit)."""

    position: int
    predicted: float
    measured: float
    interval: Interval

    @property
    def beyond_noise(self) -> bool:
        return not self.interval.contains(0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "predicted": _round(self.predicted),
            "measured": _round(self.measured),
            "difference_ci": self.interval.to_list(),
            "beyond_noise": self.beyond_noise,
        }


@dataclass(frozen=True)
class CountCheck:
    """The engine's counts against the tokens it emitted (the kit's always add up)."""

    emitted: int
    counted: int  # verify steps + accepted drafts
    short: int  # tokens emitted that no count accounts for, summed over prompts
    prompts_short: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "emitted": self.emitted,
            "steps_plus_accepted": self.counted,
            "short": self.short,
            "prompts_short": self.prompts_short,
        }


@dataclass(frozen=True)
class Deviation:
    """One run of the engine against the kit's prediction for it."""

    accept_len: Comparison  # a: the kit, b: the engine
    positions: tuple[PositionDelta, ...]
    counts: CountCheck
    predicted_steps: int
    measured_steps: int
    zero_from: int | None  # the first position from which the engine accepted nothing, the kit not
    prompts: int

    @property
    def count_short(self) -> bool:
        """The engine's count misses tokens it emitted, in more prompts than a stray step
        explains: whatever else it does, its count is wrong."""
        return self.counts.prompts_short >= max(COUNT_SHORT_MIN, COUNT_SHORT_SHARE * self.prompts)

    @property
    def differs(self) -> bool:
        """The engine's figures differ from the kit's beyond the noise (or hit zero where the
        kit's do not)."""
        return (
            self.accept_len.beyond_noise
            or any(p.beyond_noise for p in self.positions)
            or self.zero_from is not None
        )

    @property
    def beyond_noise(self) -> bool:
        """A departure of any kind: the figures, or the engine's count against its own output."""
        return self.differs or self.count_short

    @property
    def loss(self) -> float:
        """Engine − kit accept length: negative when the engine loses."""
        return self.accept_len.difference

    @property
    def off(self) -> list[int]:
        """The positions whose conditional acceptance differs beyond the noise."""
        return [p.position for p in self.positions if p.beyond_noise]

    @property
    def pattern(self) -> Pattern | None:
        if not self.beyond_noise:
            return None
        if self.count_short:
            return Pattern.COUNT_SHORT
        off = self.off
        if self.zero_from is not None and (not off or self.zero_from <= off[0]):
            return Pattern.NOTHING_FROM
        if not off:
            return Pattern.OVERALL
        return Pattern.ONE_POSITION if len(off) == 1 else Pattern.FROM_POSITION

    @property
    def start(self) -> int | None:
        """The draft position the departure starts at (0 is the chain's first draft)."""
        pattern = self.pattern
        if pattern is Pattern.COUNT_SHORT:
            return 0
        if pattern is Pattern.NOTHING_FROM:
            return self.zero_from
        return self.off[0] if self.off else None

    def where(self) -> str:
        """The shape in words: where it starts and what it looks like."""
        pattern, start = self.pattern, self.start
        if pattern is None:
            return "within the prompts' noise at every position"
        if pattern is Pattern.COUNT_SHORT:
            c = self.counts
            return (
                f"the engine emitted {c.emitted} tokens after the prefill, but its verify steps "
                f"and accepted drafts account for {c.counted}: {c.short} tokens short over "
                f"{c.prompts_short} prompts (its count, not its drafting: verify steps "
                f"{self.measured_steps}, the kit's {self.predicted_steps})"
            )
        if pattern is Pattern.NOTHING_FROM:
            return f"nothing accepted from position {start} on (the kit accepts there)"
        if pattern is Pattern.OVERALL:
            return "the accept length as a whole; no single position beyond the noise"
        nothing = (
            f"; nothing accepted from position {self.zero_from} on"
            if self.zero_from is not None
            else ""
        )
        if pattern is Pattern.ONE_POSITION:
            return f"position {start} only{nothing}"
        return f"starts at position {start}; beyond the noise at positions {self.off}{nothing}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "beyond_noise": self.beyond_noise,
            "pattern": self.pattern.name if self.pattern else None,
            "start": self.start,
            "where": self.where(),
            "accept_len": self.accept_len.to_dict(),
            "positions": [p.to_dict() for p in self.positions],
            "counts": self.counts.to_dict(),
            "verify_steps": {"kit": self.predicted_steps, "engine": self.measured_steps},
        }


def deviation(predicted: OfflineResult, measured: OfflineResult) -> Deviation:
    """The engine's run (`measured`) against the kit's (`predicted`), on the same prompts."""
    if predicted.prompts_key != measured.prompts_key or predicted.k != measured.k:
        raise ValueError("the engine and the kit ran different prompts or chain lengths")
    confidence = 1 - FAMILY_ERROR / (predicted.k + 1)  # accept length and k positions
    return Deviation(
        accept_len=_accept_len(predicted, measured, confidence),
        positions=tuple(_positions(predicted, measured, confidence)),
        counts=count_check(measured),
        predicted_steps=predicted.verify_steps,
        measured_steps=measured.verify_steps,
        zero_from=_zero_from(predicted, measured),
        prompts=measured.prompts,
    )


def _accept_len(p: OfflineResult, m: OfflineResult, confidence: float) -> Comparison:
    """Engine against kit, paired, with the interval at the run's per-test confidence."""
    diff = m.accept_len_resamples(p.weights) - p.accept_len_resamples(p.weights)
    interval = percentile_interval(diff, confidence)
    return Comparison(
        "the kit", "the engine", p.accept_len, m.accept_len, interval, True, confidence
    )


def conditional(result: OfflineResult, weights: np.ndarray | None = None) -> np.ndarray:
    """Conditional acceptance per position, `[k]` (or `[resamples, k]` under `weights`):
    accepted at i over the steps that reached i (NaN where none did)."""
    steps, _, pos = result.arrays
    reached = np.concatenate([steps[:, None], pos[:, :-1]], axis=1)  # [n, k]
    if weights is None:
        num, den = pos.sum(0), reached.sum(0)
    else:
        num, den = weights @ pos, weights @ reached
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _positions(p: OfflineResult, m: OfflineResult, confidence: float) -> list[PositionDelta]:
    w = p.weights  # paired: the same resampled prompts for both
    diff = conditional(m, w) - conditional(p, w)
    kit, engine = conditional(p), conditional(m)
    out = []
    for i in range(p.k):
        column = diff[:, i]
        if np.isnan(kit[i]) or np.isnan(engine[i]) or np.isnan(column).all():
            continue  # no step reached this position on one side: nothing to compare there
        out.append(
            PositionDelta(
                i, float(kit[i]), float(engine[i]), percentile_interval(column, confidence)
            )
        )
    return out


def _zero_from(p: OfflineResult, m: OfflineResult) -> int | None:
    """The first position where the engine accepted nothing from there on while the kit
    accepted there at least `ZERO_FROM_MIN` times (None when there is none)."""
    kit, engine = p.accepted_per_position, m.accepted_per_position
    for i in range(p.k):
        if kit[i] >= ZERO_FROM_MIN and all(a == 0 for a in engine[i:]):
            return i
    return None


def count_check(result: OfflineResult) -> CountCheck:
    """Per prompt: tokens emitted after the prefill that its verify steps and accepted drafts
    do not account for (each step emits at most its accepted drafts plus one)."""
    short = [max(0, c.emitted - c.steps - c.accepted) for c in result.per_prompt]
    return CountCheck(
        emitted=result.emitted,
        counted=result.verify_steps + result.accepted,
        short=sum(short),
        prompts_short=sum(1 for s in short if s),
    )


def _round(x: float) -> float | None:
    return None if np.isnan(x) else round(float(x), 6)
