"""Which EAGLE-3 draft architectures each LMDeploy release registers, and the name it looks up.

The model map (`pytorch/models/module_map.py`) holds `Eagle3LlamaForCausalLM` in every release
read and, from 0.18.0, the MLA draft `Eagle3DeepseekV2ForCausalLM`
(`pytorch/models/kimi_k25_eagle3.py`). A config builder is picked first, by the draft config:
Llama's renames `LlamaForCausalLM` to `Eagle3LlamaForCausalLM` (`configurations/llama.py:11,21`);
Kimi-K2's (0.18.0, `model_type: kimi_k2`) takes the MLA draft, which must be named
`Eagle3DeepseekV2ForCausalLM` (`configurations/kimi_k2.py:64-73`). An MLA draft written with a
DeepSeek `model_type` meets DeepSeek's builder, which asserts the method is `deepseek_mtp`.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease, VersionRange
from kit.engines.classes import DraftClass, Shape, class_for, registered

P = "lmdeploy/pytorch/"
LLAMA_RENAME = ("LlamaForCausalLM", "Eagle3LlamaForCausalLM")  # configurations/llama.py:11,21
KIMI_K2 = "kimi_k2"  # the draft config's model_type Kimi-K2's builder takes

CLASSES: tuple[DraftClass, ...] = (
    DraftClass("Eagle3LlamaForCausalLM", Shape.LLAMA, VersionRange("0.11.0"),
               P + "models/module_map.py:258 (0.11.0), :296 (0.15.0), :329 (0.18.0)"),
    DraftClass("Eagle3DeepseekV2ForCausalLM", Shape.MLA, VersionRange("0.18.0"),
               P + "models/module_map.py:334-335 (0.18.0), built for a draft config of "
               "model_type kimi_k2 (configurations/kimi_k2.py:22-26, 64-73)"),
)  # fmt: skip


def looked_up(arch: str) -> str:
    """The model-map name for a draft architecture (Llama's builder renames the EAGLE one)."""
    return LLAMA_RENAME[1] if arch == LLAMA_RENAME[0] else arch


def built(arch: str, release: EngineRelease) -> DraftClass | None:
    return registered(CLASSES, release).get(looked_up(arch))


def for_shape(shape: Shape, release: EngineRelease) -> DraftClass | None:
    return class_for(CLASSES, shape, release)


def spelling(cls: DraftClass) -> str:
    """What config.json should say to get `cls`: the EAGLE name Llama's builder renames."""
    return LLAMA_RENAME[0] if cls.name == LLAMA_RENAME[1] else cls.name


def draft_class(cfg: DraftConfig, release: EngineRelease) -> DraftClass | None:
    """The class this release builds for the config, None where it refuses it."""
    from kit.engines.lmdeploy import config

    if config.refuses_config(cfg, release):
        return None
    return built(config.architecture(cfg), release)
