"""Draft steps one position late: a release rule, and the finding that says what it costs.

A chain's first drafted token comes from the draft-extend pass, at the position the draft was
trained at; some releases run every later step one RoPE position further on
(`Engine.draft_positions`; SGLang before 0.5.12). Nothing fails and no log shows it: the draft
just accepts less. Offline acceptance measures the same wiring both ways and hands the comparison
here; without a target the finding says the cost is unmeasured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit.engines import ENGINES, EngineRelease, Row, all_releases
from kit.findings import Finding, Severity

if TYPE_CHECKING:
    from kit.offline_acceptance.intervals import Comparison

CODE = "DRAFT_POSITIONS_LATE"


def positions_late(n: int) -> str:
    """`n` positions late, in words."""
    return ("one position" if n == 1 else f"{n} positions") + " late"


def late_rule(release: EngineRelease) -> Row[int] | None:
    """The release's rule when it runs the steps after the first late; None when they run where
    trained (or the kit has not read the engine's rule)."""
    row = ENGINES[release.name].draft_positions(release)
    return row if row is not None and row.value else None


def fixed_in(release: EngineRelease) -> tuple[EngineRelease, Row[int]] | None:
    """The first read release after `release` that runs every step where trained, and its row."""
    engine = ENGINES[release.name]
    for later in all_releases(release.name):
        row = engine.draft_positions(later)
        if later.version > release.version and row is not None and not row.value:
            return later, row
    return None


def late_positions_finding(
    release: EngineRelease, measured: Comparison | None = None, releases: str | None = None
) -> Finding | None:
    """DRAFT_POSITIONS_LATE for a release that runs the draft steps late; None otherwise.

    `measured`: the release's offline accept len (`b`) against the same wiring with every step
    where trained (`a`): a warning when it loses beyond the prompts' noise, information when not.
    Without it the cost is stated as unmeasured, as information: a consistent deployment stays
    quiet until a measurement shows the loss. `releases` names a span of releases the finding
    stands for (the matrix).
    """
    row = late_rule(release)
    if row is None:
        return None
    n, who = row.value, releases or str(release)
    late = f"{who} draft{'s' * (releases is None)} {positions_late(n)}"
    fixed = fixed_in(release)
    where_fixed = "a release with the fix" if fixed is None else str(fixed[0])
    evidence = [
        "the first drafted token comes from the draft-extend pass, at the position the draft "
        f"was trained at; every later step of the chain runs {positions_late(n)}"
    ]
    if measured is None:
        title = f"{late}: its cost is unmeasured here (no target given)"
        evidence.append(
            "offline --engine with --target, or doctor --target, measures it on the draft"
        )
        severity = Severity.INFO  # stated, not loud: nothing shows what it costs this draft
    else:
        lost = measured.beyond_noise and measured.difference < 0
        title = (
            f"{late}: offline accept len {measured.b:.2f} here, {measured.a:.2f} with the draft "
            f"steps where {where_fixed} runs them"
            + ("" if lost else " (within the prompts' noise)")
        )
        evidence.append(measured.sentence())
        severity = Severity.WARNING if lost else Severity.INFO
    return Finding(
        code=CODE,
        severity=severity,
        title=title,
        evidence=tuple(evidence),
        fix=f"upgrade to {fixed[0]} or later: it runs every draft step where the draft was trained"
        if fixed
        else "",
        engine=str(release),
        source=row.source + ("" if fixed is None else f"; fixed: {fixed[1].source}"),
        data={"late_positions": n, "fixed_in": str(fixed[0]) if fixed else None}
        | ({} if measured is None else measured.to_dict()),
    )
