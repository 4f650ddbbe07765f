"""Aux ids off by one: the draft measured with every aux id one layer lower and one higher.

A config can name the right layers in the wrong convention (an export writing "output of layer
k" where the engine reads "state after k layers", or a hand edit), and then every engine captures
neighbours of the states the draft was trained on: acceptance drops, nothing fails, and no table
can tell, because the config is the only record of training. The weights can: a draft accepts
best on the states it learned. Two extra evaluations on the same prompts (the target's
continuation is reused, `measure.continued`), compared pairwise with the config's ids.
"""

from __future__ import annotations

from pathlib import Path

from kit.checkpoint.draft import Draft, open_draft
from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.offline_acceptance.deployment import healthy
from kit.offline_acceptance.intervals import Comparison
from kit.offline_acceptance.result import OfflineRow, compare
from kit.offline_acceptance.wiring import Feed

SHIFTS = (-1, 1)


def aux_shift_finding(
    target_dir: str | Path, draft: str | Path | Draft, reference: OfflineRow, **kw
) -> Finding | None:
    """AUX_IDS_SHIFTED when the draft accepts more, beyond the prompts' noise, with its aux ids
    shifted by one than with its config's; None otherwise (or for a draft fed no aux states)."""
    if reference.result is None or reference.wiring is None:
        return None
    if reference.wiring.feeds != Feed.AUX_CONCAT:
        return None
    best: tuple[int, Comparison] | None = None
    for shift in SHIFTS:
        layers = [i + shift for i in reference.wiring.layers]
        try:
            row = healthy(target_dir, draft, aux_layers=layers, **kw)
        except KitError:  # past the first or last layer: no such neighbour
            continue
        if row.result is None:
            continue
        c = compare(reference.result, row.result, "the config's aux ids", f"ids {shift:+d}")
        if (
            c.beyond_noise
            and c.difference > 0
            and (best is None or c.difference > best[1].difference)
        ):
            best = (shift, c)
    return None if best is None else _finding(draft, *best)


def _finding(draft: str | Path | Draft, shift: int, c: Comparison) -> Finding:
    ids = open_draft(draft, weights=True).draft_config.aux_layer_ids
    named = f"{ids}" if ids else "the engine's default ids"
    better = [i + shift for i in ids] if ids else None
    return Finding(
        code="AUX_IDS_SHIFTED",
        severity=Severity.ERROR,
        title=f"the draft accepts more with its aux ids shifted by {shift:+d} than with {named}: "
        "its config names neighbours of the layers it was trained on",
        evidence=(
            c.sentence(),
            f"offline accept len {c.b:.2f} with every aux id {shift:+d}, {c.a:.2f} as configured",
        ),
        fix=(
            f"set eagle_aux_hidden_state_layer_ids to {better} (check the trainer's convention: "
            "state after k layers, or output of layer k)"
            if better
            else "write the aux layer ids the draft was trained on into its config"
        ),
        root_cause=True,
        data={"shift": shift, "config_ids": ids, **c.to_dict()},
    )
