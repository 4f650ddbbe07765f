"""What one offline run measured: counts per prompt, the figures engines log, their intervals.

Figures are pooled over prompts as the engines pool their counters (accept len = 1 + Σ accepted
/ Σ verify steps); every figure carries a bootstrap interval over prompts
(`kit.offline_acceptance.intervals`). An `OfflineRow` is one labelled wiring: its result, or, when the
release cannot run that wiring at all, the finding that says why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from kit.acceptance.model import NEAR_ZERO_ACCEPT_LEN
from kit.findings import Finding, Severity
from kit.offline_acceptance.counts import Counts
from kit.offline_acceptance.intervals import (
    Comparison,
    Interval,
    percentile_interval,
    ratio_resamples,
    resample_weights,
)
from kit.tracing.positions import late_positions_finding

if TYPE_CHECKING:  # wiring builds drafts (torch); a result reads back without it
    from kit.offline_acceptance.wiring import Wiring


@dataclass(frozen=True)
class Settings:
    """How a result was measured, as its JSON reports it."""

    k: int
    prompt_format: str
    temperature: float
    top_p: float
    seed: int
    max_new_tokens: int
    counted_as: str
    counting: str  # the release's stop-counting rule, with its source line
    proposal: str  # what its verification at a temperature is given per drafted token, and source
    device: str
    resamples: int
    confidence: float

    @property
    def verification(self) -> str:
        """How the target verified the drafts: greedy, or sampled with its settings."""
        if self.temperature == 0:
            return "greedy"
        return f"sampled, temperature {self.temperature:g}, top-p {self.top_p:g}, seed {self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class OfflineResult:
    """Exact counts of one offline run, per prompt, and the figures each engine would log."""

    wiring: Wiring
    settings: Settings
    per_prompt: list[Counts]
    prompts_key: int  # hash of the prompts' ids: results on the same prompts compare paired
    findings: list[Finding] = field(default_factory=list)
    resources: dict[str, float] = field(default_factory=dict)  # seconds, peak memory
    # the same wiring with every draft step where trained, when the release runs them late
    # (`Wiring.late_positions`): what a release with the fix reaches, measured paired
    trained_positions: OfflineResult | None = None

    @property
    def k(self) -> int:
        return self.settings.k

    @property
    def prompts(self) -> int:
        return len(self.per_prompt)

    @property
    def verify_steps(self) -> int:
        return sum(c.steps for c in self.per_prompt)

    @property
    def accepted(self) -> int:
        return sum(c.accepted for c in self.per_prompt)

    @property
    def drafted(self) -> int:
        return self.verify_steps * self.k

    @property
    def emitted(self) -> int:
        return sum(c.emitted for c in self.per_prompt)

    @property
    def accepted_per_position(self) -> list[int]:
        return [sum(c.per_position[i] for c in self.per_prompt) for i in range(self.k)]

    @property
    def accept_len(self) -> float:
        """Tokens per verify step, bonus token included (SGLang `accept len`, vLLM mean length)."""
        return 1.0 + self.accepted / self.verify_steps if self.verify_steps else 1.0

    @property
    def per_position(self) -> list[float]:
        """Share of verify steps whose drafted token i was accepted (vLLM per-position rate)."""
        n = max(1, self.verify_steps)
        return [a / n for a in self.accepted_per_position]

    @property
    def undetermined(self) -> bool:
        """Whether the draft reads parameters the engine never writes (torch.empty memory): the
        figure is then a best case under an assumption, not a prediction."""
        return bool(self.wiring.empty_params)

    @property
    def accept_len_range(self) -> tuple[float, float]:
        """What the engine can reach: from the floor (NaN or garbage in an unwritten parameter:
        nothing accepted, exactly 1.00) to the figure measured; one point when determined."""
        return (1.0 if self.undetermined else self.accept_len, self.accept_len)

    @property
    def step0_accuracy(self) -> float:
        return self.per_position[0] if self.per_position else 0.0

    @property
    def accept_rate(self) -> dict[str, float | None]:
        """The `accept rate` each engine era would print for these counts (topk = 1, D = k+1)."""
        from kit.engines.sglang.acceptance import ACCEPT_RATE

        rates: dict[str, float | None] = {}
        for row in ACCEPT_RATE:
            f = row.value
            rates[f"sglang{row.versions}"] = (
                None if f is None else round(f.rate(self.accept_len, self.k + 1), 6)
            )
        # vLLM V1: accepted / drafted (v1/spec_decode/metrics.py)
        rates["vllm"] = round(self.accepted / self.drafted, 6) if self.drafted else 0.0
        return rates

    # -- intervals ---------------------------------------------------------------------------

    @cached_property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per prompt: verify steps `[n]`, accepted `[n]`, accepted per position `[n, k]`."""
        steps = np.array([c.steps for c in self.per_prompt], dtype=np.float64)
        acc = np.array([c.accepted for c in self.per_prompt], dtype=np.float64)
        pos = np.array([c.per_position for c in self.per_prompt], dtype=np.float64)
        return steps, acc, pos.reshape(len(self.per_prompt), self.k)

    @cached_property
    def weights(self) -> np.ndarray:
        """This result's bootstrap resamples of its prompts (seeded by its own seed)."""
        return resample_weights(self.prompts, self.settings.resamples, self.settings.seed)

    def accept_len_resamples(self, weights: np.ndarray) -> np.ndarray:
        steps, acc, _ = self.arrays
        return 1.0 + ratio_resamples(acc, steps, weights)

    @cached_property
    def accept_len_ci(self) -> Interval:
        return percentile_interval(
            self.accept_len_resamples(self.weights), self.settings.confidence
        )

    @cached_property
    def per_position_ci(self) -> list[Interval]:
        steps, _, pos = self.arrays
        boot = ratio_resamples(pos, steps, self.weights)
        return [percentile_interval(boot[:, j], self.settings.confidence) for j in range(self.k)]

    def figures(self) -> dict[str, Any]:
        """Every figure and count, nothing about the run's own cost (two runs compare equal)."""
        return {
            "k": self.k,
            "prompts": self.prompts,
            "outcome": "undetermined" if self.undetermined else "measured",
            "accept_len_range": [round(a, 6) for a in self.accept_len_range],
            "accept_len": round(self.accept_len, 6),
            "accept_len_ci": self.accept_len_ci.to_list(),
            "accept_rate": self.accept_rate,
            "per_position": [round(p, 6) for p in self.per_position],
            "per_position_ci": [i.to_list() for i in self.per_position_ci],
            "step0_accuracy": round(self.step0_accuracy, 6),
            "counts": {
                "verify_steps": self.verify_steps,
                "drafted": self.drafted,
                "accepted": self.accepted,
                "accepted_per_position": self.accepted_per_position,
                "emitted": self.emitted,
            },
        }

    def to_dict(self) -> dict[str, Any]:
        trained = self.trained_positions
        return self.figures() | {
            "trained_positions": None if trained is None else trained.figures(),
            "settings": self.settings.to_dict(),
            "wiring": self.wiring.to_dict(),
            "resources": self.resources,
            "findings": [f.to_dict() for f in self.findings],
        }


def compare(a: OfflineResult, b: OfflineResult, a_label: str = "a", b_label: str = "b"):
    """Accept len of `b` against `a`, with the interval of the difference: paired when both ran
    on the same prompts (same resampled prompts for both), else independent resamples."""
    paired = a.prompts_key == b.prompts_key
    s = a.settings
    wa = a.weights
    wb = wa if paired else resample_weights(b.prompts, s.resamples, s.seed + 1)
    diff = b.accept_len_resamples(wb) - a.accept_len_resamples(wa)
    return Comparison(
        a_label,
        b_label,
        a.accept_len,
        b.accept_len,
        percentile_interval(diff, s.confidence),
        paired,
        s.confidence,
    )


def verdict(r: OfflineResult) -> Finding:
    """The offline figure as a finding: near zero is critical, anything else informs."""
    al, ci = r.accept_len, r.accept_len_ci
    engine = None if r.wiring.healthy else str(r.wiring.release)
    if r.undetermined and al > NEAR_ZERO_ACCEPT_LEN:  # near zero even at best: that is known
        return _undetermined(r, engine)
    if al <= NEAR_ZERO_ACCEPT_LEN:
        return Finding(
            code="OFFLINE_NEAR_ZERO_ACCEPTANCE",
            severity=Severity.CRITICAL,
            title=f"offline accept len {al:.2f} {ci} at k={r.k}: almost no drafted token is "
            "accepted",
            evidence=(
                f"step-0 acceptance {r.step0_accuracy:.3f}"
                + (
                    " at best: parameters never written hold torch.empty memory"
                    if r.undetermined
                    else ""
                ),
                *r.wiring.describe(),
                _counted(r),
            ),
            fix="fix the load and hidden-state findings above, then measure again",
            engine=engine,
            data=r.figures(),
        )
    return Finding(
        code="OFFLINE_ACCEPTANCE",
        severity=Severity.INFO,
        title=f"offline accept len {al:.2f} {ci} at k={r.k}, step-0 acceptance "
        f"{r.step0_accuracy:.2f}",
        evidence=(
            *(
                f"position {i}: {p:.3f} {ci}"
                for i, (p, ci) in enumerate(zip(r.per_position, r.per_position_ci, strict=True))
            ),
            *r.wiring.describe(),
            _counted(r),
        ),
        engine=engine,
    )


def positions_verdict(r: OfflineResult) -> Finding | None:
    """DRAFT_POSITIONS_LATE with its cost: the row against the same wiring with every draft
    step where trained; None for a release that runs them there."""
    if r.trained_positions is None:
        return None
    release = r.wiring.release
    c = compare(r.trained_positions, r, "the draft steps where trained", f"as {release} runs them")
    return late_positions_finding(release, c)


def _undetermined(r: OfflineResult, engine: str | None) -> Finding:
    """Parameters the draft reads hold torch.empty memory: no value to predict from. What the
    engine reaches lies between the floor and the best case measured under a named assumption."""
    from kit.engines import ENGINES
    from kit.offline_acceptance import wiring

    n = len(r.wiring.empty_params)
    return Finding(
        code="OFFLINE_ACCEPTANCE_UNDETERMINED",
        severity=Severity.CRITICAL,
        title=f"offline accept len undetermined at k={r.k}: from 1.00 (nothing accepted) to "
        f"{r.accept_len:.2f} {r.accept_len_ci} at best; {n} parameters the draft reads are never "
        "written",
        evidence=(
            f"{n} parameters keep torch.empty memory, not an init: whatever the allocator held "
            "(NaN there rejects every drafted token: exactly 1.00; other leftovers anything "
            "between)",
            f"best case {r.accept_len:.3f} {r.accept_len_ci}, step-0 acceptance "
            f"{r.step0_accuracy:.3f}, measured {wiring.EMPTY_ASSUMPTION}",
            *r.wiring.describe(),
            _counted(r),
        ),
        fix="ship the tensors these parameters load from (see the load findings): no figure "
        "can be predicted until every parameter the draft reads is written",
        engine=engine,
        source=getattr(ENGINES[r.wiring.release.name].load, "UNWRITTEN", None),
        data=r.figures() | {"empty_params": list(r.wiring.empty_params)},
    )


def _counted(r: OfflineResult) -> str:
    s = r.settings
    return (
        f"{r.prompts} {s.prompt_format} prompts, {s.verification}; a step that reaches the stop token "
        f"counted as {s.counted_as} counts it"
    )


@dataclass
class OfflineRow:
    """One labelled wiring: its result, or `crash`, the finding that says why it has no figure
    (the release's start-up crash; for a fix row, why the kit cannot write the fix)."""

    label: str
    wiring: Wiring | None
    result: OfflineResult | None = None
    crash: Finding | None = None
    findings: list[Finding] = field(default_factory=list)
    vs_healthy: Comparison | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "wiring": self.wiring.to_dict() if self.wiring else None,
            "result": self.result.to_dict() if self.result else None,
            "crash": self.crash.to_dict() if self.crash else None,
            "vs_healthy": self.vs_healthy.to_dict() if self.vs_healthy else None,
            "findings": [f.to_dict() for f in self.findings],
        }
