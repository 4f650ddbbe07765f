"""Explanations the kit can predict for a departure, tried in order of cost and kept when the
engine's counts agree with the prediction under them (no test beyond the noise).

Each is a way an engine can draft or count wrongly that the kit can model on the pair:

  * its count drops one accepted draft a verify step (the bonus token counted out twice): the
    same steps, every count one lower; free, from the kit's own counts;
  * its verification accepts nothing from position p on: the kit's chain cut at p;
  * its draft steps after the first run one RoPE position late (SGLang's defect before 0.5.12):
    the kit's chain with those steps late;
  * its target hands the draft other layers than the config names: the kit's chain fed each
    neighbour set (one id, or every id, one layer off), on the first `AUX_PROMPTS` prompts.

Which one is tried follows from where the departure starts (`Deviation.start`, `pattern`): an
explanation is a claim about the engine, so it is made only when its own prediction reproduces
what the engine counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kit.engine_check.deviation import Deviation, Pattern, deviation
from kit.engine_check.predict import (
    Predictor,
    counted_one_short,
    prompts_key,
    subset,
    widened,
)
from kit.errors import KitError
from kit.offline_acceptance.result import OfflineResult
from kit.tracing.positions import positions_late

AUX_PROMPTS = 100  # prompts each aux-layer candidate is measured on (8 candidates at most)


@dataclass(frozen=True)
class Explanation:
    """What the engine does, as the kit predicts it, and how close the engine came to it."""

    key: str
    text: str
    start: int  # the draft position the modelled fault starts at
    prediction: OfflineResult
    measured: OfflineResult  # the engine's counts, on the prompts the prediction ran
    against: Deviation  # the engine against this prediction: within the noise
    data: dict[str, Any]

    @property
    def exact(self) -> bool:
        """The engine's counts equal the prediction's, step for step (greedy, float32)."""
        p, m = self.prediction, self.measured
        return (p.verify_steps, p.accepted_per_position) == (
            m.verify_steps,
            m.accepted_per_position,
        )

    def sentence(self) -> str:
        how = (
            "exactly: the same verify steps and accepted drafts"
            if self.exact
            else (
                f"within the prompts' noise (accept len {self.against.accept_len.a:.3f} predicted "
                f"under it, {self.against.accept_len.b:.3f} counted)"
            )
        )
        return f"{self.text}: the kit's prediction under it reproduces the engine's counts {how}"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "text": self.text, "start": self.start, "exact": self.exact,
                "predicted_accept_len": round(self.prediction.accept_len, 6),
                **self.data}  # fmt: skip


def explain(
    found: Deviation,
    predictor: Predictor,
    run: dict[str, Any],
    ideal: OfflineResult,
    measured: OfflineResult,
    aux_ids: list[int] | None,
    n_layers: int,
) -> Explanation | None:
    """The first explanation whose prediction the engine's counts agree with; None when none
    does (the departure is then unexplained)."""
    tries = []
    if found.pattern is Pattern.COUNT_SHORT or found.start == 0:
        tries.append(lambda: _count_one_short(ideal, measured))
    if found.zero_from:  # nothing accepted from a position on: a verification that stops there
        tries.append(lambda: _stops_at(found.zero_from, predictor, run, measured))
    if found.pattern is not Pattern.COUNT_SHORT:
        tries.append(lambda: _late(predictor, run, measured))
    if found.start == 0 and found.pattern is not Pattern.COUNT_SHORT and aux_ids:
        tries.append(lambda: _aux_layers(aux_ids, n_layers, predictor, run, measured))
    for attempt in tries:
        got = attempt()
        if got is not None:
            return got
    return None


def _kept(key: str, text: str, start: int, prediction: OfflineResult, measured: OfflineResult,
          **data: Any) -> Explanation | None:  # fmt: skip
    against = deviation(prediction, measured)
    if against.differs:
        return None
    return Explanation(key, text, start, prediction, measured, against, data)


def _count_one_short(ideal: OfflineResult, measured: OfflineResult) -> Explanation | None:
    return _kept(
        "count-one-short",
        "the engine drafts and verifies as predicted but counts one accepted draft fewer at "
        "every verify step",
        0,
        counted_one_short(ideal),
        measured,
    )


def _stops_at(p: int, predictor: Predictor, run: dict, measured: OfflineResult):
    row = predictor.row(run, k=p)
    if row.result is None:
        return None
    return _kept(
        "verify-stops-at",
        f"the engine's verification accepts nothing from position {p} on: it runs as a chain "
        f"of {p} would",
        p,
        widened(row.result, measured.k),
        measured,
        position=p,
    )


def _late(predictor: Predictor, run: dict, measured: OfflineResult):
    row = predictor.row(run, late_positions=1)
    if row.result is None:
        return None
    return _kept(
        "late-positions",
        f"the engine runs the draft steps after the first {positions_late(1)} (each at the "
        "position after the one the draft was trained at)",
        1,
        row.result,
        measured,
        late_positions=1,
    )


def _aux_layers(ids: list[int], n_layers: int, predictor: Predictor, run: dict,
                measured: OfflineResult):  # fmt: skip
    """Each neighbour set of the config's aux ids, on the first `AUX_PROMPTS` prompts."""
    prompts = predictor.prompts[:AUX_PROMPTS]
    engine = subset(measured, len(prompts), prompts_key(prompts))
    for layers in neighbours(ids, n_layers):
        try:
            row = predictor.row(run, prompts=prompts, aux_layers=layers)
        except KitError:
            continue
        if row.result is None:
            continue
        got = _kept(
            "aux-layers",
            f"the engine feeds the draft target layers {layers} where its config names {ids}",
            0,
            row.result,
            engine,
            layers=layers,
            config_layers=ids,
            prompts=len(prompts),
        )
        if got is not None:
            return got
    return None


def neighbours(ids: list[int], n_layers: int) -> list[list[int]]:
    """Every id one layer off alone, then all of them together, inside the target."""
    out = []
    for i in range(len(ids)):
        for step in (-1, 1):
            moved = [*ids[:i], ids[i] + step, *ids[i + 1 :]]
            if 0 <= moved[i] < n_layers and moved[i] not in ids:
                out.append(moved)
    for step in (-1, 1):
        moved = [x + step for x in ids]
        if all(0 <= x < n_layers for x in moved):
            out.append(moved)
    return out
