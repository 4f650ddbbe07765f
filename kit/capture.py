"""Which target hidden states reach an EAGLE-3 draft, per engine release: the aux-capture rules.

EAGLE-3 feeds the draft the concatenation of K auxiliary hidden states of the target. Which
target layers are captured, how the draft config's ids are read, whether capture happens at all
and what the engine hands the draft instead differ by engine, release and target class. Every
rule below is a table of `Row`s citing the engine file:line it reproduces
(shared/reference/sglang-eagle3.md §C, §D, §E, §I; vllm-eagle3.md §3, §4).

Index convention used throughout the kit: a layer index k is the hidden state *after k decoder
layers* (HF `output_hidden_states[k]`, the input of layer k; k = 0 is the embedding output and
k = n the final pre-norm state). SGLang's `layers_to_capture` and vLLM's `aux_hidden_state_layers`
are both kept in this convention by the engines; a draft config's ids may not be
(`DraftConfig.aux_layer_convention`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kit.config import AFTER_K_LAYERS, OUTPUT_OF_LAYER, DraftConfig, TargetConfig
from kit.engines import EngineRelease, Row, VersionRange, parse_engine, pick
from kit.findings import Finding, Severity, to_json

# What the target hands the draft (CaptureReport.feeds).
AUX_CONCAT = "aux_concat"  # healthy: cat(aux states) -> fc
FINAL_HIDDEN_POST_NORM = "final_hidden_post_norm"  # no capture: the target's final normed state
CRASH = "crash"  # start-up error, or fc / the draft's width assert fails on the first batch


# ----------------------------------------------------------------------------------------------
# How a config's ids become the engine's list (the engine's `set_..._layers_to_capture` body).

IdRule = Callable[[Sequence[int], int], list[int]]

ID_RULES: dict[str, IdRule] = {
    "ids+1": lambda ids, n: [i + 1 for i in ids],
    "ids+1 only if ids[0]==1": lambda ids, n: [i + 1 for i in ids] if ids[0] == 1 else list(ids),
    "ids as-is if max(ids)==n, else ids+1": lambda ids, n: (
        list(ids) if max(ids) == n else [i + 1 for i in ids]
    ),
    "ids verbatim": lambda ids, n: list(ids),
}


def default_layers(n: int) -> list[int]:
    """Both engines' default: inputs of layers 2, n//2 and n-3 (= states after that many layers)."""
    return [2, n // 2, n - 3]


# ----------------------------------------------------------------------------------------------
# SGLang

SGLANG = "sglang"
GENERIC, DEEPSEEK, GPT_OSS = "generic", "deepseek", "gpt_oss"

# Target classes implementing (or inheriting) set_eagle3_layers_to_capture, from the first
# release that has it; the value is the family whose id rule applies (sglang §D, §E).
_LLAMA_SET = "0.4.4.post2 models/llama.py:627"
SGLANG_CAPTURE_CLASSES: dict[str, Row[str]] = {
    **{
        c: Row(VersionRange("0.4.4.post2"), GENERIC, _LLAMA_SET)
        for c in (
            "LlamaForCausalLM",
            "MistralForCausalLM",
            "Phi3ForCausalLM",
            "InternLM3ForCausalLM",
        )
    },
    "Llama4ForCausalLM": Row(VersionRange("0.4.6.post1"), GENERIC, "0.4.6.post1 models/llama4.py"),
    **{
        c: Row(VersionRange("0.4.9"), GENERIC, f"0.4.9 models/{m}.py")
        for c, m in (
            ("Llama4ForConditionalGeneration", "mllama4"),
            ("Qwen3ForCausalLM", "qwen3"),
            ("Qwen3MoeForCausalLM", "qwen3_moe"),
        )
    },
    "GptOssForCausalLM": Row(VersionRange("0.5.1"), GPT_OSS, "0.5.1 models/gpt_oss.py"),
    **{
        c: Row(VersionRange("0.5.2"), GENERIC, f"0.5.2 models/{m}.py")
        for c, m in (
            ("Qwen2ForCausalLM", "qwen2"),
            ("Qwen2MoeForCausalLM", "qwen2_moe"),
            ("Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl"),
            ("Glm4vForConditionalGeneration", "glm4v"),
            ("Glm4vMoeForConditionalGeneration", "glm4v_moe"),
        )
    },
    "ApertusForCausalLM": Row(VersionRange("0.5.3"), GENERIC, "0.5.3 models/apertus.py"),
    **{
        c: Row(VersionRange("0.5.5"), DEEPSEEK, "0.5.5 models/deepseek_v2.py:3822")
        for c in (
            "DeepseekV2ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLMNextN",
        )
    },
    "Glm4MoeForCausalLM": Row(VersionRange("0.5.5"), GENERIC, "0.5.5 models/glm4_moe.py"),
    "MiniMaxM2ForCausalLM": Row(VersionRange("0.5.6"), GENERIC, "0.5.6 models/minimax_m2.py"),
    # Kimi-K2.5 delegates to its inner DeepseekV3 language model.
    "KimiK25ForConditionalGeneration": Row(
        VersionRange("0.5.10"), DEEPSEEK, "0.5.10 models/kimi_k25.py:841-850"
    ),
    "Qwen3NextForCausalLM": Row(VersionRange("0.5.10"), GENERIC, "0.5.10 models/qwen3_next.py"),
    **{
        c: Row(VersionRange("0.5.12"), GENERIC, f"0.5.12 models/{m}.py")
        for c, m in (
            ("Gemma3ForCausalLM", "gemma3_causal"),
            ("Gemma3ForConditionalGeneration", "gemma3_mm"),
            ("Qwen3VLForConditionalGeneration", "qwen3_vl"),
            ("Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe"),
        )
    },
}

# Classes whose model file itself appears late (before that: not an SGLang architecture at all).
SGLANG_CLASS_ADDED: dict[str, Row[str]] = {
    "KimiK25ForConditionalGeneration": Row(VersionRange("0.5.9"), "", "0.5.9 models/kimi_k25.py"),
}

# Which draft-config ids the runner passes to set_eagle3_layers_to_capture (None: none read).
# Only the nested eagle_config is read; a top-level (speculators) list is ignored by every release.
SGLANG_IDS_SOURCE: list[Row[str | None]] = [
    Row(
        VersionRange("0.4.4.post2", "0.4.9"),
        None,
        "0.4.6.post1 model_executor/model_runner.py:227-229",
    ),
    Row(
        VersionRange("0.4.9", "0.5.23"),
        "eagle_config",
        "0.4.10 model_executor/model_runner.py:340-361",
    ),
    Row(
        VersionRange("0.5.23"),
        "eagle_config",
        "0.5.23 model_runner_components/spec_aux_hidden_state.py:185-196",
    ),
]

SGLANG_ID_RULE: dict[str, list[Row[str]]] = {
    GENERIC: [
        Row(VersionRange("0.4.9", "0.4.10"), "ids+1", "0.4.9 models/llama.py:700"),
        Row(VersionRange("0.4.10", "0.5.1"), "ids+1", "0.4.10 models/llama.py:743"),
        Row(VersionRange("0.5.1", "0.5.10"), "ids+1", "0.5.6 models/llama.py:730"),
        Row(VersionRange("0.5.10", "0.5.12"), "ids+1", "0.5.10 models/llama.py:783"),
        Row(VersionRange("0.5.12", "0.5.20"), "ids+1", "0.5.15 models/llama.py:811"),
        Row(VersionRange("0.5.20", "0.5.23"), "ids+1", "0.5.20 models/llama.py:890"),
        Row(VersionRange("0.5.23"), "ids+1", "0.5.23 models/llama.py:929"),
    ],
    DEEPSEEK: [
        Row(VersionRange("0.5.5", "0.5.6"), "ids+1", "0.5.5 models/deepseek_v2.py:3822"),
        Row(VersionRange("0.5.6", "0.5.10"), "ids+1", "0.5.6 models/deepseek_v2.py:4089"),
        Row(VersionRange("0.5.10", "0.5.13"), "ids+1", "0.5.10 models/deepseek_v2.py:2295"),
        Row(
            VersionRange("0.5.13", "0.5.23"),
            "ids+1 only if ids[0]==1",
            "0.5.13 models/deepseek_v2.py:2752 (PR #25454)",
        ),
        Row(
            VersionRange("0.5.23"),
            "ids+1 only if ids[0]==1",
            "0.5.23 models/deepseek_v2.py:3466-3473",
        ),
    ],
    GPT_OSS: [
        Row(VersionRange("0.5.1", "0.5.20"), "ids+1", "0.5.10 models/gpt_oss.py (llama pattern)"),
        Row(
            VersionRange("0.5.20"),
            "ids as-is if max(ids)==n, else ids+1",
            "0.5.23 models/gpt_oss.py:1347-1352",
        ),
    ],
}

# The target's decoder loop appends `hidden_states + residual` before layer i when i is listed,
# so only 0 <= i < n are ever captured; GPT-OSS's as-is rule exists for ids that reach n.
SGLANG_CAPTURE_LOOP: dict[str, list[Row[str]]] = {
    GENERIC: [Row(VersionRange("0.4.4.post2"), "0..n-1", "0.4.10 models/llama.py:330-332")],
    DEEPSEEK: [Row(VersionRange("0.4.4.post2"), "0..n-1", "0.5.6 models/deepseek_v2.py:3276-3310")],
    GPT_OSS: [
        Row(VersionRange("0.4.4.post2", "0.5.20"), "0..n-1", "0.4.10 models/llama.py:330-332"),
        Row(VersionRange("0.5.20"), "0..n", "0.5.23 models/gpt_oss.py:1347-1352"),
    ],
}

SGLANG_DEFAULT_IDS: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2"), "[2, n//2, n-3]", "0.4.10 models/llama.py:743"),
]

# eagle_config.use_aux_hidden_state: False switches capture off (True: honoured).
SGLANG_USE_AUX_FLAG: list[Row[bool]] = [
    Row(
        VersionRange("0.4.4.post2", "0.5.8"),
        False,
        "0.4.10 model_executor/model_runner.py:340-361 (flag not read)",
    ),
    Row(VersionRange("0.5.8"), True, "0.5.10 model_executor/model_runner.py:355-379"),
]

# The error a target class without set_eagle3_layers_to_capture raises at start-up.
SGLANG_MISSING_HOOK: list[Row[str]] = [
    Row(
        VersionRange("0.4.4.post2", "0.5.23"),
        "AttributeError: '{cls}' object has no attribute 'set_eagle3_layers_to_capture'",
        "0.5.10 model_executor/model_runner.py:667-670",
    ),
    Row(
        VersionRange("0.5.23"),
        "ValueError: Model {cls} does not implement set_eagle3_layers_to_capture, …",
        "0.5.23 model_runner_components/attention_backend_setup.py:54-61",
    ),
]

# CUDA graphs captured with the *default* ids, custom ids set only afterwards (fixed 0.5.11).
SGLANG_GRAPH_USES_DEFAULTS: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), False, "0.4.6.post1 cuda_graph_runner.py:246"),
    Row(
        VersionRange("0.4.9", "0.5.10"),
        True,
        "0.4.10 model_executor/cuda_graph_runner.py:303-305 then model_runner.py:334,361",
    ),
    Row(
        VersionRange("0.5.10", "0.5.11"),
        True,
        "0.5.10 model_executor/cuda_graph_runner.py:644-653 then model_runner.py:655,668",
    ),
    Row(VersionRange("0.5.11"), False, "0.5.11 model_executor/model_runner.py:762-764,814-823"),
]

# fc's input width: "3" (fixed) or "num_aux" (num_aux_hidden_states, else len(eagle_config ids),
# else 3), times the target width.
SGLANG_FC_IN: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), "3", "0.4.6.post1 models/llama_eagle3.py:109"),
    Row(VersionRange("0.4.9", "0.5.12"), "3", "0.5.10 models/llama_eagle3.py:138"),
    Row(VersionRange("0.5.12"), "num_aux", "0.5.12 models/llama_eagle3.py:160"),
]

# fc runs iff hidden_states.shape[-1] != embeds.shape[-1] (the same gate in every release).
SGLANG_FC_GATE: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), "width_gate", "0.4.6.post1 llama_eagle3.py:128"),
    Row(VersionRange("0.4.9", "0.5.3"), "width_gate", "0.4.10 models/llama_eagle3.py:148"),
    Row(VersionRange("0.5.3", "0.5.6"), "width_gate", "0.5.3 models/llama_eagle3.py:161"),
    Row(VersionRange("0.5.6", "0.5.10"), "width_gate", "0.5.6 models/llama_eagle3.py:162"),
    Row(VersionRange("0.5.10", "0.5.12"), "width_gate", "0.5.10 models/llama_eagle3.py:176"),
    Row(VersionRange("0.5.12", "0.5.15"), "width_gate", "0.5.12 models/llama_eagle3.py:218"),
    Row(VersionRange("0.5.15", "0.5.20"), "width_gate", "0.5.15 models/llama_eagle3.py:214"),
    Row(VersionRange("0.5.20", "0.5.23"), "width_gate", "0.5.20 models/llama_eagle3.py:229"),
    Row(VersionRange("0.5.23"), "width_gate", "0.5.23 models/llama_eagle3.py:238"),
]

# Without capture the logits processor stores the target's post-final-norm hidden state.
SGLANG_NO_AUX_FEED = "0.4.6.post1 layers/logits_processor.py:323-345"


# ----------------------------------------------------------------------------------------------
# vLLM

VLLM = "vllm"

# Where the runner reads ids from the draft config (empty: never; defaults used).
VLLM_IDS_SOURCE: list[Row[tuple[str, ...]]] = [
    Row(VersionRange("0.9.2", "0.11.2"), (), "0.9.2 v1/worker/gpu_model_runner.py (load_model)"),
    Row(
        VersionRange("0.11.2", "0.24.0"),
        ("top_level",),
        "0.11.2 v1/worker/gpu_model_runner.py (load_model)",
    ),
    Row(
        VersionRange("0.24.0"),
        ("top_level", "eagle_config"),
        "0.24.0 v1/worker/gpu_model_runner.py (load_model)",
    ),
]

VLLM_ID_RULE: list[Row[str]] = [
    Row(VersionRange("0.9.2"), "ids verbatim", "0.9.2 model_executor/models/llama.py:387-391"),
]

# ≤0.14 the loop appends before layer idx (ids 0..n-1); ≥0.18 after each layer (ids 0..n).
VLLM_CAPTURE_LOOP: list[Row[str]] = [
    Row(
        VersionRange("0.9.2", "0.18.0"),
        "0..n-1",
        "0.9.2 model_executor/models/llama.py:387-391",
    ),
    Row(VersionRange("0.18.0"), "0..n", "0.18.0 model_executor/models/llama.py"),
]

VLLM_DEFAULT_IDS: list[Row[str]] = [
    Row(
        VersionRange("0.9.2"),
        "[2, n//2, n-3]",
        "model_executor/models/llama.py get_eagle3_aux_hidden_state_layers",
    ),
]

# eagle_config.use_aux_hidden_state: False makes combine_hidden_states return its input (no fc).
VLLM_USE_AUX_FLAG: list[Row[bool]] = [
    Row(VersionRange("0.9.2", "0.12.0"), False, "0.11.0 model_executor/models/llama_eagle3.py"),
    Row(
        VersionRange("0.12.0"),
        True,
        "0.12.0 model_executor/models/llama_eagle3.py combine_hidden_states",
    ),
]

VLLM_FC_IN: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.24.0"), "3", "0.9.2 model_executor/models/llama_eagle3.py"),
    Row(VersionRange("0.24.0"), "num_aux", "0.24.0 model_executor/models/llama_eagle3.py"),
]

# No width gate: the proposer always calls combine_hidden_states (fc) for eagle3.
VLLM_FC_GATE: list[Row[str]] = [
    Row(VersionRange("0.9.2", "0.33.0"), "always", "0.9.2 v1/spec_decode/eagle.py:100-104"),
    Row(VersionRange("0.33.0"), "always", "0.33.0 v1/spec_decode/llm_base_proposer.py:549"),
]

# Target modules defining get_eagle3_aux_hidden_state_layers / SupportsEagle3 (vllm §4).
_VLLM_ADDED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.9.2", ("llama",)),
    ("0.10.1.1", ("qwen3",)),
    ("0.11.0", ("apertus", "gpt_oss", "minicpm", "qwen2")),
    ("0.11.2", ("mllama4", "qwen2_5_vl", "qwen3_moe")),
    ("0.14.0", ("mimo_v2_flash", "qwen3_vl")),
    (
        "0.18.0",
        (
            *("afmoe", "arcee", "deepseek_v2", "hunyuan_v1", "hunyuan_vision", "kimi_k25"),
            *("llava", "mistral3", "qwen3_5", "step1"),
        ),
    ),
    ("0.24.0", ("gemma4", "gemma4_mm", "laguna", "minimax_m2", "nemotron_h", "pixtral")),
    ("0.24.0", ("qwen3_next",)),
)
VLLM_MODULE_SINCE: dict[str, Row[bool]] = {
    m: Row(VersionRange(first), True, f"{first} model_executor/models/{m}.py")
    for first, mods in _VLLM_ADDED
    for m in mods
}

# Architecture -> vLLM model module (model_executor/models/registry.py).
VLLM_ARCH_MODULE: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen3NextForCausalLM": "qwen3_next",
    "GptOssForCausalLM": "gpt_oss",
    "MiniCPMForCausalLM": "minicpm",
    "ApertusForCausalLM": "apertus",
    "Llama4ForConditionalGeneration": "mllama4",
    "Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl",
    "Qwen3VLForConditionalGeneration": "qwen3_vl",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v2",
    "KimiK25ForConditionalGeneration": "kimi_k25",
    "MiniMaxM2ForCausalLM": "minimax_m2",
}

# Config-level allow-list (substring of the text config's model_type); gone by 0.18.
VLLM_TARGET_ALLOW: list[Row[tuple[str, ...] | None]] = [
    Row(VersionRange("0.9.2", "0.10.0"), ("llama",), "0.9.2 vllm/config.py"),
    Row(VersionRange("0.10.0", "0.11.0"), ("llama", "qwen"), "0.10.1.1 vllm/config.py"),
    Row(
        VersionRange("0.11.0", "0.18.0"),
        ("llama", "qwen", "minicpm", "gpt_oss"),
        "0.11.0 vllm/config/speculative.py",
    ),
    Row(VersionRange("0.18.0"), None, "0.18.0 supports_eagle3(model)"),
]


# ----------------------------------------------------------------------------------------------
# The report


@dataclass
class CaptureReport:
    """What the target hands the draft on the draft-extend step after each target pass.

    `captured_layers` is what eager (non-graph) target passes capture; `cuda_graph_layers` what
    batches replayed from CUDA graphs capture when a release differs there (steady-state decode
    runs from graphs). `hidden_width` is 0 when the server does not start.
    """

    engine: str
    target_class: str
    num_target_layers: int
    target_hidden: int
    draft_hidden: int
    aux_capture: bool
    config_layer_ids: list[int] | None  # ids the engine read from the draft config
    engine_layer_ids: list[int]  # the engine's own list (layers_to_capture / aux layers)
    captured_layers: list[int]
    trained_layers: list[int]  # the states the draft was trained on, same convention
    cuda_graph_layers: list[int] | None
    hidden_width: int
    fc_in_features: int
    fc_applied: bool
    feeds: str
    startup_error: str | None
    findings: list[Finding] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "target_class": self.target_class,
            "num_target_layers": self.num_target_layers,
            "target_hidden": self.target_hidden,
            "draft_hidden": self.draft_hidden,
            "aux_capture": self.aux_capture,
            "config_layer_ids": self.config_layer_ids,
            "engine_layer_ids": self.engine_layer_ids,
            "captured_layers": self.captured_layers,
            "trained_layers": self.trained_layers,
            "cuda_graph_layers": self.cuda_graph_layers,
            "hidden_width": self.hidden_width,
            "fc_in_features": self.fc_in_features,
            "fc_applied": self.fc_applied,
            "feeds": self.feeds,
            "startup_error": self.startup_error,
            "findings": to_json(self.findings),
            "sources": dict(self.sources),
        }


@dataclass
class _Capture:
    """The engine-specific half of a report, before widths and findings."""

    aux_on: bool
    config_ids: list[int] | None
    ignored_ids: list[int] | None  # ids the draft declares that this release does not read
    engine_ids: list[int]
    loop: str
    id_rule: str | None
    graph_ids: list[int] | None
    startup_error: str | None
    aux_off_reason: str | None
    fc_in: int
    fc_gate: str
    unverified: str | None = None
    sources: dict[str, str] = field(default_factory=dict)


def trained_layers(draft: DraftConfig, n: int) -> list[int]:
    """The target states the draft was trained on, as states after k layers.

    Without ids every trainer used [2, n//2, n-3] in this convention (checkpoint-formats.md §4).
    """
    if not draft.aux_layer_ids:
        return default_layers(n)
    if draft.aux_layer_convention == OUTPUT_OF_LAYER:
        return [i + 1 for i in draft.aux_layer_ids]
    return list(draft.aux_layer_ids)


def _fc_in(kind: str, draft: DraftConfig) -> int:
    if kind == "3":
        return 3 * draft.target_width
    k = draft.raw.get("num_aux_hidden_states")
    eagle_ids = draft.eagle_config.get("eagle_aux_hidden_state_layer_ids")
    k = k or (len(eagle_ids) if eagle_ids else 3)
    return int(k) * draft.target_width


def _read_ids(
    draft: DraftConfig, places: Sequence[str]
) -> tuple[list[int] | None, list[int] | None]:
    """(ids the engine reads, first of `places` that has any; ids the draft declares unread)."""
    declared = {
        "top_level": draft.raw.get("eagle_aux_hidden_state_layer_ids"),
        "eagle_config": draft.eagle_config.get("eagle_aux_hidden_state_layer_ids"),
    }
    read = next(([int(i) for i in declared[p]] for p in places if declared[p]), None)
    unread = next(
        ([int(i) for i in ids] for p, ids in declared.items() if ids and p not in places), None
    )
    return read, unread if read is None else None


def _in_loop(ids: Sequence[int], loop: str, n: int) -> list[int]:
    top = n if loop == "0..n" else n - 1
    return sorted({i for i in ids if 0 <= i <= top})


def _aux_switch(
    flag: Row[bool], draft: DraftConfig, override: bool | None, src: dict[str, str]
) -> tuple[bool, str | None]:
    """Whether the target captures aux states, and why not."""
    if override is not None:
        return override, None if override else "aux capture marked inactive (--no-aux-capture)"
    if flag.value and not draft.use_aux_hidden_state:
        src["use_aux_hidden_state"] = flag.source
        return False, "eagle_config.use_aux_hidden_state is false"
    return True, None


def _sglang(
    target_class: str,
    n: int,
    draft: DraftConfig,
    rel: EngineRelease,
    aux_override: bool | None,
    cuda_graph: bool,
) -> _Capture:
    added = SGLANG_CLASS_ADDED.get(target_class)
    cls_row = SGLANG_CAPTURE_CLASSES.get(target_class)
    family = cls_row.value if cls_row else GENERIC
    src: dict[str, str] = {}
    aux_on, off_reason = _aux_switch(pick(SGLANG_USE_AUX_FLAG, rel), draft, aux_override, src)

    startup = unverified = None
    if added and rel not in added.versions:
        startup = f"{target_class} is not an SGLang architecture before {added.versions.first}"
        src["target_class"] = added.source
    elif aux_on and cls_row is None:
        unverified = f"{target_class} is not in the kit's table of SGLang capture classes"
    elif aux_on and rel not in cls_row.versions:
        hook = pick(SGLANG_MISSING_HOOK, rel)
        startup = hook.value.format(cls=target_class)
        src["set_eagle3_layers_to_capture"] = f"{hook.source}; added in {cls_row.source}"
    elif cls_row is not None:
        src["set_eagle3_layers_to_capture"] = cls_row.source

    source_row = pick(SGLANG_IDS_SOURCE, rel)
    src["ids_source"] = source_row.source
    config_ids, ignored = _read_ids(draft, (source_row.value,) if source_row.value else ())

    default_row = pick(SGLANG_DEFAULT_IDS, rel)
    defaults = default_layers(n)
    id_rule = None
    if config_ids and aux_on and not startup:
        rule_row = pick(SGLANG_ID_RULE[family], rel)
        id_rule = rule_row.value
        engine_ids = ID_RULES[id_rule](config_ids, n)
        src["id_rule"] = rule_row.source
    else:
        engine_ids = defaults
        src["default_ids"] = default_row.source
    loop_row = pick(SGLANG_CAPTURE_LOOP[family], rel)
    src["capture_loop"] = loop_row.source

    graph_ids = None
    graph_row = pick(SGLANG_GRAPH_USES_DEFAULTS, rel)
    if cuda_graph and aux_on and graph_row.value:
        graph_ids = _in_loop(defaults, loop_row.value, n)
        src["cuda_graph"] = graph_row.source

    fc_row = pick(SGLANG_FC_IN, rel)
    gate_row = pick(SGLANG_FC_GATE, rel)
    src["fc_in"], src["fc_gate"] = fc_row.source, gate_row.source
    if not aux_on:
        src["feed_without_aux"] = SGLANG_NO_AUX_FEED
    return _Capture(
        aux_on=aux_on,
        config_ids=config_ids,
        ignored_ids=ignored,
        engine_ids=engine_ids,
        loop=loop_row.value,
        id_rule=id_rule,
        graph_ids=graph_ids,
        startup_error=startup,
        aux_off_reason=off_reason,
        fc_in=_fc_in(fc_row.value, draft),
        fc_gate=gate_row.value,
        unverified=unverified,
        sources=src,
    )


def _text_model_type(target: TargetConfig) -> str:
    key = target.text_config_key
    text = target.raw.get(key) if key else None
    return str(text.get("model_type", target.model_type)) if text else target.model_type


def _vllm(
    target_class: str,
    target: TargetConfig,
    draft: DraftConfig,
    rel: EngineRelease,
    aux_override: bool | None,
) -> _Capture:
    n = target.num_hidden_layers
    src: dict[str, str] = {}
    aux_on, off_reason = _aux_switch(pick(VLLM_USE_AUX_FLAG, rel), draft, aux_override, src)

    startup = unverified = None
    allow_row = pick(VLLM_TARGET_ALLOW, rel)
    text_type = _text_model_type(target)
    module = VLLM_ARCH_MODULE.get(target_class)
    if allow_row.value is not None and not any(a in text_type for a in allow_row.value):
        startup = (
            f"eagle3 refused for target model_type {text_type!r} "
            f"(allowed: {', '.join(allow_row.value)})"
        )
        src["target_allow_list"] = allow_row.source
    elif module is None:
        unverified = f"{target_class} is not in the kit's table of vLLM target modules"
    elif module not in VLLM_MODULE_SINCE or rel not in VLLM_MODULE_SINCE[module].versions:
        since = VLLM_MODULE_SINCE.get(module)
        startup = f"{target_class} ({module}.py) does not implement SupportsEagle3 in {rel}" + (
            f"; added in {since.versions.first}" if since else ""
        )
        src["target_module"] = since.source if since else f"model_executor/models/{module}.py"
    else:
        src["target_module"] = VLLM_MODULE_SINCE[module].source

    source_row = pick(VLLM_IDS_SOURCE, rel)
    src["ids_source"] = source_row.source
    config_ids, ignored = _read_ids(draft, source_row.value)
    rule_row = pick(VLLM_ID_RULE, rel)
    if config_ids:
        engine_ids = ID_RULES[rule_row.value](config_ids, n)
        src["id_rule"] = rule_row.source
    else:
        engine_ids = default_layers(n)
        src["default_ids"] = pick(VLLM_DEFAULT_IDS, rel).source
    loop_row = pick(VLLM_CAPTURE_LOOP, rel)
    fc_row, gate_row = pick(VLLM_FC_IN, rel), pick(VLLM_FC_GATE, rel)
    src["capture_loop"], src["fc_in"], src["fc_gate"] = (
        loop_row.source,
        fc_row.source,
        gate_row.source,
    )
    return _Capture(
        aux_on=aux_on,
        config_ids=config_ids,
        ignored_ids=ignored,
        engine_ids=engine_ids,
        loop=loop_row.value,
        id_rule=rule_row.value if config_ids else None,
        graph_ids=None,
        startup_error=startup,
        aux_off_reason=off_reason,
        fc_in=_fc_in(fc_row.value, draft),
        # the config flag makes combine_hidden_states return its input; a capture that is merely
        # inactive still goes through fc
        fc_gate="skipped" if off_reason and aux_override is None else gate_row.value,
        unverified=unverified,
        sources=src,
    )


def simulate_capture(
    target: TargetConfig,
    draft: DraftConfig,
    release: EngineRelease | str,
    target_class: str | None = None,
    aux_capture: bool | None = None,
    cuda_graph: bool = False,
) -> CaptureReport:
    """Which target states reach the draft, how wide, and whether `fc` runs.

    `aux_capture=None` follows the release's rules; False models a target whose capture is not
    active (the incident: the KimiK25 class ran without it); True forces it on.
    """
    rel = parse_engine(release) if isinstance(release, str) else release
    cls = target_class or target.architecture
    n, ht, h = target.num_hidden_layers, target.hidden_size, draft.hidden_size
    if rel.name == SGLANG:
        cap = _sglang(cls, n, draft, rel, aux_capture, cuda_graph)
    else:
        cap = _vllm(cls, target, draft, rel, aux_capture)
    aux_on = cap.aux_on and not cap.startup_error
    captured = _in_loop(cap.engine_ids, cap.loop, n) if aux_on else []
    engine_ids = cap.engine_ids if aux_on else []
    graph_ids = cap.graph_ids if aux_on else None

    if cap.startup_error:
        width, fc_applied, feeds = 0, False, CRASH
    else:
        width = len(captured) * ht if aux_on else ht
        # SGLang: fc iff hidden_states.shape[-1] != embeds.shape[-1]; vLLM: always (unless
        # the config flag made combine_hidden_states a pass-through)
        fc_applied = width != h if cap.fc_gate == "width_gate" else cap.fc_gate == "always"
        crashes = width != cap.fc_in if fc_applied else width != h
        feeds = CRASH if crashes else (AUX_CONCAT if aux_on else FINAL_HIDDEN_POST_NORM)

    report = CaptureReport(
        engine=str(rel),
        target_class=cls,
        num_target_layers=n,
        target_hidden=ht,
        draft_hidden=h,
        aux_capture=aux_on,
        config_layer_ids=cap.config_ids,
        engine_layer_ids=list(engine_ids),
        captured_layers=captured,
        trained_layers=trained_layers(draft, n),
        cuda_graph_layers=graph_ids,
        hidden_width=width,
        fc_in_features=cap.fc_in,
        fc_applied=fc_applied,
        feeds=feeds,
        startup_error=cap.startup_error,
        sources=cap.sources,
    )
    report.findings = _findings(report, cap, draft)
    return report


# ----------------------------------------------------------------------------------------------
# Findings


def _layers(ids: Sequence[int] | None) -> str:
    return "[" + ", ".join(str(i) for i in ids or ()) + "]"


def _findings(r: CaptureReport, cap: _Capture, draft: DraftConfig) -> list[Finding]:
    """What is wrong with the hand-over, most fundamental first."""
    out: list[Finding] = []
    src = cap.sources
    trained_w = len(r.trained_layers) * r.target_hidden
    if r.startup_error:
        out.append(
            Finding(
                code="AUX_CAPTURE_UNSUPPORTED",
                severity=Severity.CRITICAL,
                title=f"{r.target_class} cannot capture aux hidden states in {r.engine}: "
                "the server does not start",
                evidence=(
                    r.startup_error,
                    "EAGLE-3 needs the target to capture its aux hidden states "
                    f"({len(r.trained_layers)} × {r.target_hidden} = {trained_w} wide)",
                ),
                fix="use an engine release in which the target class implements aux capture "
                "(see source), or serve the target through a class that does",
                engine=r.engine,
                source=src.get("set_eagle3_layers_to_capture")
                or src.get("target_class")
                or src.get("target_module")
                or src.get("target_allow_list"),
                root_cause=True,
                data={"target_class": r.target_class},
            )
        )
        return out
    if cap.unverified:
        out.append(
            Finding(
                code="AUX_CAPTURE_UNVERIFIED",
                severity=Severity.INFO,
                title=f"aux capture support of {r.target_class} in {r.engine} is assumed",
                evidence=(cap.unverified,),
                fix="check that the target class implements aux capture in this release, or "
                "pass --target-class with the class the engine will build",
                engine=r.engine,
            )
        )
    if not r.fc_applied and r.feeds != CRASH and trained_w != r.draft_hidden:
        out.append(
            Finding(
                code="FC_BYPASSED",
                severity=Severity.CRITICAL,
                title="fc bypassed: the draft sees input unlike its training",
                evidence=(
                    f"target aux capture is off ({cap.aux_off_reason})",
                    f"the target hands the draft its final hidden state after the final norm: "
                    f"width {r.hidden_width}",
                    f"fc gate: hidden_states.shape[-1] ({r.hidden_width}) != embeds.shape[-1] "
                    f"({r.draft_hidden}) is False, so fc is skipped"
                    if cap.fc_gate == "width_gate"
                    else "combine_hidden_states returns its input unchanged: fc is skipped",
                    f"the draft was trained on {len(r.trained_layers)} target states "
                    f"{_layers(r.trained_layers)} concatenated: {trained_w} wide, projected by fc "
                    f"to {r.draft_hidden}",
                ),
                fix="make the target capture its aux hidden states: a release whose target class "
                "implements set_eagle3_layers_to_capture, and eagle_config.use_aux_hidden_state "
                "true (or absent)",
                engine=r.engine,
                source=src.get("fc_gate"),
                root_cause=True,
                data={"hidden_width": r.hidden_width, "expected_width": trained_w},
            )
        )
    if r.feeds == CRASH:
        expected = r.fc_in_features if r.fc_applied else r.draft_hidden
        evidence = [
            f"the target hands the draft {r.hidden_width} values per token "
            + (
                f"({len(r.captured_layers)} captured states {_layers(r.captured_layers)} "
                f"× {r.target_hidden})"
                if r.aux_capture
                else f"(its final hidden state: {cap.aux_off_reason})"
            ),
            f"fc expects {r.fc_in_features} inputs"
            if r.fc_applied
            else f"the draft layer expects {r.draft_hidden}",
        ]
        lost = sorted(set(r.engine_layer_ids) - set(r.captured_layers))
        if lost:
            evidence.append(
                f"layer ids {_layers(lost)} are outside the target's capture loop "
                f"({cap.loop}, n = {r.num_target_layers}) and are never captured"
            )
        out.append(
            Finding(
                code="AUX_WIDTH_MISMATCH",
                severity=Severity.CRITICAL,
                title=f"fc would crash: {r.hidden_width} wide input, {expected} expected",
                evidence=tuple(evidence),
                fix="capture exactly the layers the draft was trained on, with the target width "
                "the draft's fc was built for (target_hidden_size)",
                engine=r.engine,
                source=src.get("fc_gate"),
                root_cause=True,
                data={"hidden_width": r.hidden_width, "expected": expected},
            )
        )
    if r.aux_capture and cap.config_ids and r.captured_layers != r.trained_layers:
        convention = draft.aux_layer_convention or AFTER_K_LAYERS
        out.append(
            Finding(
                code="AUX_LAYER_OFFSET",
                severity=Severity.ERROR,
                title="the target captures other layers than the draft was trained on",
                evidence=(
                    f"draft ids {_layers(cap.config_ids)} ({draft.aux_ids_location}) were "
                    f"written as {convention.replace('_', ' ')}: trained on states after "
                    f"{_layers(r.trained_layers)} layers",
                    f"{r.engine} reads them with {cap.id_rule!r}: captures the states after "
                    f"{_layers(r.captured_layers)} layers",
                ),
                fix="write the ids in the convention this engine reads (SGLang: output of layer "
                "k, +1 applied; vLLM: state after k layers, verbatim)",
                engine=r.engine,
                source=src.get("id_rule"),
                data={"trained": r.trained_layers, "captured": r.captured_layers},
            )
        )
    if r.aux_capture and cap.ignored_ids:
        differs = r.captured_layers != r.trained_layers
        out.append(
            Finding(
                code="AUX_IDS_IGNORED",
                severity=Severity.ERROR if differs else Severity.INFO,
                title=f"{r.engine} does not read the draft's aux layer ids; it captures its "
                "defaults" + (", which differ from the draft's training" if differs else ""),
                evidence=(
                    f"draft ids {_layers(cap.ignored_ids)} at {draft.aux_ids_location} "
                    f"(trained on states after {_layers(r.trained_layers)} layers)",
                    f"captured: states after {_layers(r.captured_layers)} layers",
                ),
                fix="put the ids where this release reads them (SGLang: eagle_config, output-of-"
                "layer convention; vLLM ≥0.11.2: top level, verbatim)"
                if differs
                else "",
                engine=r.engine,
                source=src.get("ids_source"),
            )
        )
    if r.cuda_graph_layers is not None and r.cuda_graph_layers != r.captured_layers:
        out.append(
            Finding(
                code="AUX_LAYERS_DIFFER_UNDER_CUDA_GRAPH",
                severity=Severity.ERROR,
                title="CUDA-graph replays capture the default layers, eager passes the "
                "configured ones",
                evidence=(
                    f"eager (prefill / extend / --disable-cuda-graph): {_layers(r.captured_layers)}",
                    f"replayed from CUDA graphs (decode / verify): {_layers(r.cuda_graph_layers)}",
                    "the graphs are captured before the configured ids are set",
                ),
                fix="upgrade to sglang ≥0.5.11, use the default ids, or --disable-cuda-graph",
                engine=r.engine,
                source=src.get("cuda_graph"),
                data={"eager": r.captured_layers, "cuda_graph": r.cuda_graph_layers},
            )
        )
    return out
