"""Confidence intervals for offline figures, and whether two figures differ beyond them.

The verify steps of one prompt are not independent (a hard line is hard at every step); prompts
are. So the interval is a bootstrap over prompts (a cluster bootstrap): resample whole prompts
with replacement, recompute the pooled figure (Σ accepted / Σ steps, as the engines pool it), and
take the percentile interval of the resamples. It needs no normal approximation for a ratio of
sums, covers the sampling draws too (each prompt's sampled completion is part of its cluster),
and two results on the same prompts are compared by resampling the same prompts for both (a
paired bootstrap), which cancels the prompts' own difficulty out of the difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    def contains(self, x: float) -> bool:
        return self.lo <= x <= self.hi

    def to_list(self) -> list[float]:
        return [round(self.lo, 6), round(self.hi, 6)]

    def __str__(self) -> str:
        return f"[{self.lo:.3f}, {self.hi:.3f}]"


def resample_weights(n: int, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """`[resamples, n]`: how often each of `n` prompts is drawn in each bootstrap resample."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)


def ratio_resamples(num: np.ndarray, den: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ w·num / Σ w·den for every resample: `num` is `[n]` or `[n, m]`, `den` `[n]`."""
    total = weights @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ num) / (total[:, None] if num.ndim == 2 else total)


def percentile_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """The central `confidence` share of the resampled values (resamples that drew no verify
    step at all have no figure and are left out)."""
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.nanpercentile(values, [tail, 100 - tail])
    return Interval(float(lo), float(hi))


@dataclass(frozen=True)
class Comparison:
    """Figure `b` against figure `a`: the difference b − a and its interval."""

    a_label: str
    b_label: str
    a: float
    b: float
    interval: Interval  # of b − a
    paired: bool
    confidence: float = CONFIDENCE

    @property
    def difference(self) -> float:
        return self.b - self.a

    @property
    def beyond_noise(self) -> bool:
        """The difference's interval leaves out 0: not a difference the prompts' spread makes."""
        return not self.interval.contains(0.0)

    def sentence(self) -> str:
        verdict = "beyond" if self.beyond_noise else "within"
        how = "paired over the same prompts" if self.paired else "independent prompt sets"
        return (
            f"{self.b_label} {self.b:.3f} against {self.a_label} {self.a:.3f}: "
            f"difference {self.difference:+.3f}, {self.confidence:.0%} interval {self.interval} "
            f"({how}): {verdict} the prompts' noise"
        )

    def to_dict(self) -> dict:
        return {
            "a": self.a_label,
            "b": self.b_label,
            "a_value": round(self.a, 6),
            "b_value": round(self.b, 6),
            "difference": round(self.difference, 6),
            "difference_ci": self.interval.to_list(),
            "paired": self.paired,
            "confidence": self.confidence,
            "beyond_noise": self.beyond_noise,
        }
