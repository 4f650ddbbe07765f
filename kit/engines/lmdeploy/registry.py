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
from kit.engines.base import EngineRelease, Row, VersionRange, pick
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


# Config builders are tried in the order their modules import (alphabetical:
# configurations/__init__.py walks the package; builder.py:37-43 takes the first whose condition
# holds, the default last), so a builder of a model_type sorting before `llama` takes the draft
# before Llama's builder can rename it. model_type -> (its module, the error it meets as a draft;
# None: the draft keeps its EAGLE name and LMDeploy builds the target class it names).
_DEEPSEEK = ("deepseek_v2", "AssertionError: spec_method == 'deepseek_mtp'")
_KIMI = (
    "kimi_k2",
    "ValueError: Kimi-K2 EAGLE3 draft config must use architecture Eagle3DeepseekV2ForCausalLM.",
)
_COMMON = {
    "deepseek_v2": _DEEPSEEK, "deepseek_v3": _DEEPSEEK, "deepseek_vl_v2": ("deepseek_vl2", None),
    "gemma": ("gemma", None), "gemma2": ("gemma", None), "gemma3_text": ("gemma", None),
    "gpt_oss": ("gpt_oss", None), "chatglm": ("chatglm", None),
}  # fmt: skip
CLAIMED_BEFORE_LLAMA: list[Row[dict[str, tuple[str, str | None]]]] = [
    Row(VersionRange("0.11.0", "0.15.0"), {**_COMMON, "kimi_k2": _DEEPSEEK},
        "0.11.0 " + P + "configurations/deepseek_v2.py:13, gemma.py, gpt_oss.py:11 conditions"),
    Row(VersionRange("0.15.0", "0.18.0"),
        {**_COMMON, "kimi_k2": _DEEPSEEK, "deepseek_v32": ("deepseek_v32", None),
         "glm_moe_dsa": ("deepseek_v32", None), "deepseek_v4": ("deepseek_v4", None),
         "glm4_moe": ("glm4", None), "glm4_moe_lite": ("glm4", None), "glm4v": ("glm4_1v", None)},
        "0.15.0 " + P + "configurations/deepseek_v2.py:13, deepseek_v32.py, glm4.py conditions"),
    Row(VersionRange("0.18.0"),
        {**_COMMON, "kimi_k2": _KIMI, "kimi_k25": ("kimi_k25", None),
         "deepseek_v32": ("deepseek_v32", None), "deepseek_v4": ("deepseek_v4", None),
         "glm4_moe": ("glm4", None), "glm4_moe_lite": ("glm4", None), "glm4v": ("glm4_1v", None),
         "glm_moe_dsa": ("glm_moe_dsa", None), "hy_v3": ("hy3", None)},
        "0.18.0 " + P + "configurations/deepseek_v2.py:13, kimi_k2.py:23-25, :64-69, gemma.py, "
        "gpt_oss.py:11 conditions"),
]  # fmt: skip


def claimed(model_type: str, release: EngineRelease) -> tuple[str, str | None, str] | None:
    """(builder module, its error, source) when a builder ahead of Llama's takes this
    model_type, else None."""
    row = pick(CLAIMED_BEFORE_LLAMA, release)
    hit = row.value.get(model_type)
    return (*hit, row.source) if hit else None


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
    """The class this release holds for the config's name (`Engine.draft_class` asks only for a
    config the release accepts)."""
    return built(cfg.architectures[0] if cfg.architectures else "", release)
