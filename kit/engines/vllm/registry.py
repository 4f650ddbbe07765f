"""Which EAGLE-3 draft architectures each vLLM release registers, and the name it looks up.

A flat draft config goes through `EAGLEConfig` (`transformers_utils/configs/eagle.py`), which
renames its architecture for method `eagle3`: 0.9.2 and 0.10.0 put `Eagle3` in front of any name
that does not start with it; from 0.10.1.1 a name that starts or ends with `Eagle3` is kept. The
name is then looked up in `_SPECULATIVE_DECODING_MODELS` (`model_executor/models/registry.py`);
a name it does not hold finds no Transformers class either and stops the server:
`ValueError: Model architectures ['X'] are not supported for now.` A speculators config is
translated by `update_eagle3`, which names the class itself (`config.SPECULATORS_ARCH`).
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.classes import DraftClass, Shape, class_for, registered

REG = "vllm/model_executor/models/registry.py"
EAGLE_CONFIG = "vllm/transformers_utils/configs/eagle.py"
ALGOS = "vllm/transformers_utils/configs/speculators/algos.py"


def _cls(name: str, shape: Shape, first: str, lines: str) -> DraftClass:
    return DraftClass(name, shape, VersionRange(first), f"{REG}:{lines}")


# In order of preference for `kit fix`: the first one a release holds for a shape is written.
CLASSES: tuple[DraftClass, ...] = (
    _cls("LlamaForCausalLMEagle3", Shape.LLAMA, "0.10.2",
         "283 (0.10.2; 0.10.1.1 :265 has it commented out), :702 (0.33.0)"),
    _cls("Eagle3LlamaForCausalLM", Shape.LLAMA, "0.9.2", "242 (0.9.2), :700 (0.33.0)"),
    _cls("Eagle3Qwen2_5vlForCausalLM", Shape.LLAMA, "0.11.1", "405 (0.11.1), :703 (0.33.0)"),
    _cls("Eagle3Qwen3vlForCausalLM", Shape.LLAMA, "0.12.0", "427 (0.12.0), :704 (0.33.0)"),
    _cls("Eagle3MiniMaxM2ForCausalLM", Shape.LLAMA, "0.22.0", "603 (0.22.0), :701 (0.33.0)"),
    _cls("Eagle3Qwen3ForCausalLM", Shape.QWEN3, "0.24.0",
         "614 qwen3_eagle3 (0.24.0), :705 (0.33.0)"),
    _cls("Eagle3DeepseekV2ForCausalLM", Shape.MLA, "0.18.0",
         "558 deepseek_eagle3 (0.18.0), :712 (0.33.0)"),
    _cls("Eagle3DeepseekV3ForCausalLM", Shape.MLA, "0.18.0",
         "559 deepseek_eagle3.Eagle3DeepseekV2ForCausalLM (0.18.0), :713 (0.33.0)"),
)  # fmt: skip

# The rename EAGLEConfig applies for method eagle3: "prefix" (0.9.2, 0.10.0: Eagle3 + any name
# not starting with it), "keep_suffixed" (a name ending with Eagle3 is kept too).
RENAME: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.10.1.1"), "prefix",
        EAGLE_CONFIG + ":59-63 f'Eagle3{arch}' unless arch.startswith('Eagle3') (0.9.2)"),
    Row(VersionRange("0.10.1.1"), "keep_suffixed",
        EAGLE_CONFIG + ":56-61 kept if it starts or ends with Eagle3 (0.10.1.1; 0.33.0 :54-63)"),
]  # fmt: skip

# A name the registry does not hold (and no Transformers class has): the registry's error.
UNREGISTERED: list[Row[str]] = [
    Row(VersionRange(first, until), "ValueError: Model architectures ['{arch}'] are not "
        "supported for now.", f"{REG}:{line} _raise_for_unsupported ({read})")
    for first, until, line, read in (
        ("0.9.2", "0.10.2", 443, "0.9.2"),
        ("0.10.2", "0.11.1", 523, "0.10.2"),
        ("0.11.1", "0.14.0", 786, "0.11.1"),
        ("0.14.0", "0.18.0", 847, "0.14.0"),
        ("0.18.0", "0.24.0", 957, "0.18.0"),
        ("0.24.0", "0.28.0", 1062, "0.24.0"),
        ("0.28.0", "0.32.0", 1159, "0.28.0"),
        ("0.32.0", "0.33.0", 1206, "0.32.0"),
        ("0.33.0", None, 1250, "0.33.0"),
    )
]  # fmt: skip


def looked_up(arch: str, release: EngineRelease) -> str:
    """The name this release looks up for a flat config's architecture."""
    if arch.startswith("Eagle3"):
        return arch
    if pick(RENAME, release).value == "keep_suffixed" and arch.endswith("Eagle3"):
        return arch
    return "Eagle3" + arch


def built(arch: str, release: EngineRelease) -> DraftClass | None:
    """The class this release builds for a flat config naming `arch`, or None (refused)."""
    return registered(CLASSES, release).get(looked_up(arch, release))


def unregistered(arch: str, release: EngineRelease) -> tuple[str, str]:
    """(the start-up error for a name the registry lacks, its source)."""
    row = pick(UNREGISTERED, release)
    return row.value.format(arch=looked_up(arch, release)), row.source


def for_shape(shape: Shape, release: EngineRelease) -> DraftClass | None:
    return class_for(CLASSES, shape, release)


# `update_eagle3` names the class of a speculators draft itself: Eagle3LlamaForCausalLM; from
# 0.24 a {llama, qwen3} map gives Qwen3 drafts their own class (q_norm / k_norm).
QWEN3_CLASS: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.24.0"), False,
        ALGOS + ':34 architectures = ["Eagle3LlamaForCausalLM"] (0.11.1)'),
    Row(VersionRange("0.24.0"), True, ALGOS + " {llama, qwen3} architecture map (0.24.0)"),
]  # fmt: skip


def draft_class(cfg: DraftConfig, release: EngineRelease) -> DraftClass | None:
    """The class this release holds for the config's name (`Engine.draft_class` asks only for a
    config the release accepts)."""
    if cfg.source == "speculators":
        qwen3 = cfg.model_type == "qwen3" and pick(QWEN3_CLASS, release).value
        name = "Eagle3Qwen3ForCausalLM" if qwen3 else "Eagle3LlamaForCausalLM"
        return registered(CLASSES, release).get(name)
    return built(cfg.architectures[0] if cfg.architectures else "", release)
