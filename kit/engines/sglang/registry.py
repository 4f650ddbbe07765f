"""Which EAGLE-3 draft architectures each SGLang release registers.

SGLang's model registry collects every `EntryClass` of `srt/models/*.py` and builds the class the
draft config's `architectures` names, as written (its draft renames touch target classes only,
e.g. `DeepseekV3ForCausalLM` to its NextN class: 0.5.23 `configs/model_config.py:1033-1037`).
The EAGLE-3 draft classes: `LlamaForCausalLMEagle3` in every release, and the MLA draft
`Eagle3DeepseekV2ForCausalLM` (`models/kimi_k25_eagle3.py`) from 0.5.12. A name with `Eagle3` the
registry does not hold is no Transformers class either: up to 0.4.6.post1 the registry refuses
it, from 0.4.7 the Transformers fallback does (`model_loader/utils.py`
`resolve_transformers_arch`). A speculators config has no class at all (`config.NO_SPECULATORS`).
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.classes import DraftClass, Shape, class_for, registered

W = "sglang/srt/"

CLASSES: tuple[DraftClass, ...] = (
    DraftClass("LlamaForCausalLMEagle3", Shape.LLAMA, VersionRange("0.4.4.post2"),
               W + "models/llama_eagle3.py:196 EntryClass (0.4.4.post2; 0.5.23 :387)"),
    DraftClass("Eagle3DeepseekV2ForCausalLM", Shape.MLA, VersionRange("0.5.12"),
               W + "models/kimi_k25_eagle3.py:472 EntryClass (0.5.12; 0.5.23 :523)"),
)  # fmt: skip

_NO_MODULE = (
    "ValueError: Cannot find model module. '{arch}' is not a registered model in the "
    "Transformers library (only relevant if the model is meant to be in Transformers) and "
    "'AutoModel' is not present in the model config's 'auto_map' (relevant if the model is "
    "custom)."
)
UNREGISTERED: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.4.7"),
        "ValueError: Model architectures ['{arch}'] are not supported for now.",
        W + "models/registry.py:33 _raise_for_unsupported (0.4.4.post2, 0.4.6.post1)"),
    *(Row(VersionRange(first, until), _NO_MODULE,
          W + f"model_loader/utils.py:{line} resolve_transformers_arch ({read})")
      for first, until, line, read in (
          ("0.4.7", "0.5.6", 52, "0.4.7"),
          ("0.5.6", "0.5.9", 54, "0.5.6"),
          ("0.5.9", "0.5.10", 55, "0.5.9"),
          ("0.5.10", "0.5.12", 151, "0.5.10"),
          ("0.5.12", "0.5.18", 153, "0.5.12"),
          ("0.5.18", "0.5.20", 155, "0.5.18"),
          ("0.5.20", None, 156, "0.5.20; 0.5.23"),
      )),
]  # fmt: skip


def built(arch: str, release: EngineRelease) -> DraftClass | None:
    """The draft class this release registers under `arch`, or None."""
    return registered(CLASSES, release).get(arch)


def unregistered(arch: str, release: EngineRelease) -> tuple[str, str]:
    """(the start-up error for an EAGLE-3 name the registry lacks, its source)."""
    row = pick(UNREGISTERED, release)
    return row.value.format(arch=arch), row.source


def for_shape(shape: Shape, release: EngineRelease) -> DraftClass | None:
    return class_for(CLASSES, shape, release)


def draft_class(cfg: DraftConfig, release: EngineRelease) -> DraftClass | None:
    """The class this release holds for the config's name (`Engine.draft_class` asks only for a
    config the release accepts)."""
    return built(cfg.architectures[0] if cfg.architectures else CLASSES[0].name, release)
