"""Whether a draft is an EAGLE-3 head or an EAGLE-1/2 head, from its config and `fc` shape.

The serving flag must name the same algorithm: an EAGLE-3 draft run as EAGLE never receives the
target's aux hidden states (sglang PR #21272), run as an independent draft model it is not a
language model at all (vllm-ascend issue #13665).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from kit.checkpoint.config import DraftConfig


class DraftKind(StrEnum):
    EAGLE3 = "EAGLE-3"
    EAGLE = "EAGLE-1/2"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Kind:
    kind: DraftKind
    evidence: str


def draft_kind(draft: DraftConfig, folder: Path | None = None) -> Kind:
    """Config fields only EAGLE-3 trainers write decide first; else the `fc` weight's input
    width (EAGLE-3: K aux states, EAGLE-1/2: embedding ++ hidden = 2 x hidden)."""
    raw = draft.raw
    spec_type = raw.get("speculators_model_type")
    if spec_type:
        kind = DraftKind.EAGLE3 if "eagle3" in str(spec_type) else DraftKind.EAGLE
        return Kind(kind, f"speculators_model_type {spec_type!r}")
    archs = [str(a) for a in draft.architectures]
    if any("eagle3" in a.lower() for a in archs):
        return Kind(DraftKind.EAGLE3, f"architectures {archs}")
    if draft.aux_layer_ids or draft.draft_vocab_size_key or draft.target_hidden_size:
        fields = [k for k in ("draft_vocab_size", "target_hidden_size") if k in raw]
        if draft.aux_layer_ids:
            fields.append("eagle_aux_hidden_state_layer_ids")
        return Kind(DraftKind.EAGLE3, "EAGLE-3 config fields: " + ", ".join(fields))
    shape = _fc_shape(folder) if folder else None
    if shape and len(shape) == 2:
        if shape[1] == 2 * draft.hidden_size:
            return Kind(DraftKind.EAGLE, f"fc.weight {list(shape)}: 2 x hidden inputs")
        if shape[1] % draft.target_width == 0 and shape[1] // draft.target_width >= 3:
            return Kind(DraftKind.EAGLE3, f"fc.weight {list(shape)}: aux hidden states in")
    return Kind(DraftKind.UNKNOWN, "no EAGLE-3 config field and no fc weight to measure")


def _fc_shape(folder: Path) -> tuple[int, ...] | None:
    """The header shape of fc.weight (no tensor bytes are read)."""
    from kit.checkpoint.files import open_checkpoint
    from kit.errors import KitError

    try:
        ck = open_checkpoint(folder)
    except KitError:
        return None
    info: Any = ck.tensors.get("fc.weight") or ck.tensors.get("model.fc.weight")
    return tuple(info.shape) if info is not None else None
