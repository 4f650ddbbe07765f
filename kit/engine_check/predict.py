"""The kit's side of the engine check: its prediction for the installed release, on the same
prompts and settings the engine ran, and the same under a what-if (a shorter chain, the draft
steps late, other target layers), for the explanations `hypotheses.py` tries.

The target and the draft are loaded once; every prediction reuses them, and the target's
continuation of each prompt group is computed once per setting (`measure.continued`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kit.offline_acceptance.counts import Counts
from kit.offline_acceptance.prompts import Prompt
from kit.offline_acceptance.result import OfflineResult, OfflineRow


@dataclass
class Predictor:
    """Predictions for one release on one prompt set (`options`: `Options` fields)."""

    target_dir: Path
    draft: Path
    release: str
    prompts: list[Prompt]
    options: dict[str, Any] = field(default_factory=dict)
    counted_as: str | None = None  # whose stop counting (default: the release's)
    _loaded: tuple[Any, Any, Any] | None = None

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            from kit.checkpoint.config import load_target_config
            from kit.checkpoint.draft import open_draft
            from kit.offline_acceptance.target import load_target

            self._loaded = (
                load_target(self.target_dir),
                open_draft(self.draft, weights=True),
                load_target_config(self.target_dir),
            )
        return self._loaded

    def row(
        self, run: dict[str, Any], prompts: list[Prompt] | None = None, **what_if
    ) -> OfflineRow:
        """The release's wiring for the run's options (`what_if`: `evaluate`'s what-ifs, or `k`)."""
        from kit.offline_acceptance.measure import evaluate

        model, opened, config = self._load()
        options = {**self.options, **run, "progress": False}
        options["count_as"] = self.counted_as or self.release
        if "k" in what_if:
            options["k"] = what_if.pop("k")
        return evaluate(
            self.target_dir, opened, self.release, prompts=prompts or self.prompts, target=model,
            target_config=config, **what_if, **options,
        )  # fmt: skip


def measured_result(
    predicted: OfflineResult, per_prompt: list[dict[str, Any]], key: int
) -> OfflineResult:
    """The engine's counts as a result beside the kit's (same wiring, settings and intervals)."""
    counts = [Counts(**c) for c in per_prompt]
    return OfflineResult(predicted.wiring, predicted.settings, counts, key)


def subset(result: OfflineResult, n: int, key: int) -> OfflineResult:
    """The first `n` prompts of a result (`key`: those prompts' key)."""
    return replace(result, per_prompt=result.per_prompt[:n], prompts_key=key, findings=[],
                   trained_positions=None)  # fmt: skip


def widened(result: OfflineResult, k: int) -> OfflineResult:
    """A result of a shorter chain read at chain length `k`: nothing accepted past its end."""
    pad = k - result.k
    counts = [replace(c, per_position=[*c.per_position, *[0] * pad]) for c in result.per_prompt]
    return replace(result, per_prompt=counts, settings=replace(result.settings, k=k), findings=[],
                   trained_positions=None)  # fmt: skip


def counted_one_short(result: OfflineResult) -> OfflineResult:
    """The same verify steps, each counted with one accepted draft fewer (none below zero):
    what an engine reports when its count drops one token a step."""
    counts = [
        replace(c, accepted=c.accepted - c.per_position[0], per_position=[*c.per_position[1:], 0])
        for c in result.per_prompt
    ]
    return replace(result, per_prompt=counts, findings=[], trained_positions=None)


def prompts_key(prompts: list[Prompt]) -> int:
    """The key `measure` gives a prompt list (raw ids, as given)."""
    return hash(tuple(tuple(p.ids) for p in prompts))
