"""How engines turn a draft config's aux layer ids into the target states they capture.

Ids are kept as states after k decoder layers (k = 0 the embeddings, k = n the final pre-norm
state): the convention vLLM stores and SGLang's `layers_to_capture` ends up in. A config's ids may
be written in another convention (`kit.checkpoint.config.OUTPUT_OF_LAYER`), which is what an id rule undoes.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from kit.checkpoint.config import OUTPUT_OF_LAYER, DraftConfig


class IdRule(StrEnum):
    """How an engine's `set_..._layers_to_capture` turns config ids into its own list."""

    PLUS_ONE = "ids+1"
    PLUS_ONE_IF_FIRST_IS_ONE = "ids+1 only if ids[0]==1"
    AS_IS_IF_MAX_IS_N = "ids as-is if max(ids)==n, else ids+1"
    VERBATIM = "ids verbatim"

    def apply(self, ids: Sequence[int], n: int) -> list[int]:
        plus_one = [i + 1 for i in ids]
        if self is IdRule.PLUS_ONE:
            return plus_one
        if self is IdRule.PLUS_ONE_IF_FIRST_IS_ONE:
            return plus_one if ids[0] == 1 else list(ids)
        if self is IdRule.AS_IS_IF_MAX_IS_N:
            return list(ids) if max(ids) == n else plus_one
        return list(ids)


def default_layers(n: int) -> list[int]:
    """Both engines' default: inputs of layers 2, n//2 and n-3 (= states after that many layers)."""
    return [2, n // 2, n - 3]


def trained_layers(draft: DraftConfig, n: int) -> list[int]:
    """The target states the draft was trained on. Without ids every trainer used the engines'
    default ([2, n//2, n-3] in this convention)."""
    if not draft.aux_layer_ids:
        return default_layers(n)
    if draft.aux_layer_convention == OUTPUT_OF_LAYER:
        return [i + 1 for i in draft.aux_layer_ids]
    return list(draft.aux_layer_ids)


def read_ids(
    draft: DraftConfig, places: Sequence[str]
) -> tuple[list[int] | None, list[int] | None]:
    """(the ids the engine reads: the first of `places` that has any; ids the draft declares
    elsewhere, which the engine does not read, when it reads none)."""
    declared = {
        "top_level": draft.raw.get("eagle_aux_hidden_state_layer_ids"),
        "eagle_config": draft.eagle_config.get("eagle_aux_hidden_state_layer_ids"),
    }
    read = next(([int(i) for i in declared[p]] for p in places if declared[p]), None)
    unread = next(
        ([int(i) for i in ids] for p, ids in declared.items() if ids and p not in places), None
    )
    return read, unread if read is None else None


def in_loop(ids: Sequence[int], top: int) -> list[int]:
    """The ids a capture loop that can append states 0 … `top` actually captures."""
    return sorted({i for i in ids if 0 <= i <= top})


class Loop(StrEnum):
    """Which states a target's decoder loop can append."""

    BEFORE_EACH_LAYER = "0..n-1"  # appends hidden + residual before layer i is run
    AFTER_EACH_LAYER = "0..n"  # also after the last layer: the final pre-norm state

    def top(self, n: int) -> int:
        return n if self is Loop.AFTER_EACH_LAYER else n - 1


GIVEN_OFF = "aux capture off as given (--no-aux-capture), not detected from the configs"


def aux_flag_key(draft: DraftConfig) -> str:
    """Where config.json sets `use_aux_hidden_state` (inside `transformer_layer_config` for a
    speculators config)."""
    return draft.provenance.get("use_aux_hidden_state", "eagle_config.use_aux_hidden_state")


def aux_switch(
    honours_flag: bool,
    flag_source: str,
    draft: DraftConfig,
    override: bool | None,
    sources: dict[str, str],
) -> tuple[bool, str | None]:
    """Whether the target captures aux states, and why not: an override the user gave wins
    (and is said to be given), else the draft's `eagle_config.use_aux_hidden_state: false` in a
    release that reads it."""
    if override is not None:
        return override, None if override else GIVEN_OFF
    if honours_flag and not draft.use_aux_hidden_state:
        sources["use_aux_hidden_state"] = flag_source
        return False, f"{aux_flag_key(draft)} is false"
    return True, None
