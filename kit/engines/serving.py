"""The value types of the engines' serving rows (`kit/engines/<engine>/serving.py`).

What a release does with a launch line is a set of version-ranged rows per engine; the types they
hold are shared so that `kit.deployment` can read any engine's rows the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Method(StrEnum):
    """What a speculative algorithm / method name runs, in either engine."""

    EAGLE3 = "eagle3"  # the target hands the draft K aux hidden states; fc merges them
    EAGLE = "eagle"  # EAGLE-1/2 (and MTP heads run on the EAGLE path): one final hidden state
    DRAFT_MODEL = "draft_model"  # an independent small LM, no hidden states at all
    MTP = "mtp"
    NGRAM = "ngram"
    OTHER = "other"


class Positions(StrEnum):
    """Which positions the draft's RoPE sees when the target uses multimodal RoPE (mrope)."""

    ONE_D = "1-D positions"  # the draft never reads mrope positions
    IF_TARGET_MROPE = "mrope when the target uses it"
    IF_DRAFT_MROPE = "mrope when the draft config has mrope_section"


class SlidingWindow(StrEnum):
    """What a release does with a draft config's `layer_types` / `sliding_window`."""

    IGNORED = "ignored"  # the draft attends over the full context
    MISINDEXED = "misindexed"  # read at the target's layer index: outside layer_types
    HONOURED = "honoured"
    FLAG_ONLY = "only from a launch flag"  # the config is ignored; a flag sets the window


@dataclass(frozen=True)
class KnownIssue:
    """A runtime issue reported upstream for some releases under some settings: stated as a known
    issue (the kit cannot observe it from configs), only where every condition holds."""

    code: str
    title: str
    fix: str
    when: tuple[str, ...] = ()  # launch facts that must all hold (set in kit.deployment.lines)


class DraftDtype(StrEnum):
    """Which dtype the draft runs in when the launch line does not force one."""

    OWN_CONFIG = "--dtype, else the draft config's own dtype"
    TARGET = "the target's dtype"
