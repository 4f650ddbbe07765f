"""One prompt's verify-step counts: what the offline walk produces and an engine's counters are
compared with. Kept apart from `sampling` (which needs torch) so a saved result or engine-check
report reads back on the core install."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Counts:
    """One prompt's verify steps: how many, what was accepted (per draft position), emitted."""

    steps: int = 0
    accepted: int = 0
    emitted: int = 0
    per_position: list[int] = field(default_factory=list)
