"""The EAGLE-3 draft class TensorRT-LLM builds (1.2.0rc2, the default one-model mode).

`get_draft_model` builds `Eagle3ForCausalLM` whatever the draft config's `architectures` says
(`_torch/models/modeling_speculative.py:479-482` at the commit read): there is no name to get
wrong, and no class for another shape. The class is the Llama draft (`Eagle3Attention` over
[embeds ‖ hidden], `:30-63`); the commit read has no MLA draft, so an MLA checkpoint's layer
tensors find no module and the load fails (`load.unloaded_failure`).
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, VersionRange
from kit.engines.classes import DraftClass, Shape, class_for
from kit.engines.tensorrt_llm.config import AT, SPEC

CLASSES: tuple[DraftClass, ...] = (
    DraftClass("Eagle3ForCausalLM", Shape.LLAMA, VersionRange("1.2.0rc2"),
               f"{SPEC}:479-482 get_draft_model builds Eagle3ForCausalLM whatever architectures "
               f"says {AT}"),
)  # fmt: skip


def for_shape(shape: Shape, release: EngineRelease) -> DraftClass | None:
    return class_for(CLASSES, shape, release)


def draft_class(cfg: DraftConfig, release: EngineRelease) -> DraftClass | None:
    """The class this release builds whatever the config's name (`Engine.draft_class` asks only
    for a config the release accepts)."""
    return for_shape(Shape.LLAMA, release)
