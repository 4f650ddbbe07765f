"""Which target hidden states SGLang hands an EAGLE-3 draft, per release and target class.

The target class must implement `set_eagle3_layers_to_capture` (a start-up `AttributeError`, from
0.5.23 a `ValueError`, otherwise); the model runner passes it the draft config's
`eagle_config.eagle_aux_hidden_state_layer_ids` (from 0.4.9), which the class turns into its
capture list by an id rule; the target's decoder loop appends `hidden_states + residual` before
each listed layer. Without capture the logits processor keeps the final post-norm state, and the
draft's fc runs only when the width it is handed differs from its own (`FcGate.WIDTH`). Sources
are paths inside the wheel's `sglang/srt/`, with the release they were read in.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.engines.aux_ids import IdRule, Loop, aux_switch, default_layers, in_loop, read_ids
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.sglang.config import num_aux
from kit.engines.sglang.forward import era
from kit.engines.vocab import Capture

GENERIC, DEEPSEEK, GPT_OSS = "generic", "deepseek", "gpt_oss"

# Target classes implementing (or inheriting) set_eagle3_layers_to_capture, from the first
# release that has it; the value is the family whose id rule applies.
_LLAMA_SET = "0.4.4.post2 models/llama.py:627"
CAPTURE_CLASSES: dict[str, Row[str]] = {
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
CLASS_ADDED: dict[str, Row[str]] = {
    "KimiK25ForConditionalGeneration": Row(VersionRange("0.5.9"), "", "0.5.9 models/kimi_k25.py"),
}

# Which draft-config ids the runner passes to set_eagle3_layers_to_capture (None: none read).
# Only the nested eagle_config is read; a top-level (speculators) list is ignored by every release.
IDS_SOURCE: list[Row[str | None]] = [
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

ID_RULE: dict[str, list[Row[IdRule]]] = {
    GENERIC: [
        Row(VersionRange("0.4.9", "0.4.10"), IdRule.PLUS_ONE, "0.4.9 models/llama.py:700"),
        Row(VersionRange("0.4.10", "0.5.1"), IdRule.PLUS_ONE, "0.4.10 models/llama.py:743"),
        Row(VersionRange("0.5.1", "0.5.10"), IdRule.PLUS_ONE, "0.5.6 models/llama.py:730"),
        Row(VersionRange("0.5.10", "0.5.12"), IdRule.PLUS_ONE, "0.5.10 models/llama.py:783"),
        Row(VersionRange("0.5.12", "0.5.20"), IdRule.PLUS_ONE, "0.5.15 models/llama.py:811"),
        Row(VersionRange("0.5.20", "0.5.23"), IdRule.PLUS_ONE, "0.5.20 models/llama.py:890"),
        Row(VersionRange("0.5.23"), IdRule.PLUS_ONE, "0.5.23 models/llama.py:929"),
    ],
    DEEPSEEK: [
        Row(VersionRange("0.5.5", "0.5.6"), IdRule.PLUS_ONE, "0.5.5 models/deepseek_v2.py:3822"),
        Row(VersionRange("0.5.6", "0.5.10"), IdRule.PLUS_ONE, "0.5.6 models/deepseek_v2.py:4089"),
        Row(VersionRange("0.5.10", "0.5.13"), IdRule.PLUS_ONE, "0.5.10 models/deepseek_v2.py:2295"),
        Row(
            VersionRange("0.5.13", "0.5.23"),
            IdRule.PLUS_ONE_IF_FIRST_IS_ONE,
            "0.5.13 models/deepseek_v2.py:2752 (PR #25454)",
        ),
        Row(
            VersionRange("0.5.23"),
            IdRule.PLUS_ONE_IF_FIRST_IS_ONE,
            "0.5.23 models/deepseek_v2.py:3466-3473",
        ),
    ],
    GPT_OSS: [
        Row(
            VersionRange("0.5.1", "0.5.20"),
            IdRule.PLUS_ONE,
            "0.5.10 models/gpt_oss.py (llama pattern)",
        ),
        Row(
            VersionRange("0.5.20"),
            IdRule.AS_IS_IF_MAX_IS_N,
            "0.5.23 models/gpt_oss.py:1347-1352",
        ),
    ],
}

# The target's decoder loop appends `hidden_states + residual` before layer i when i is listed,
# so only 0 <= i < n are ever captured; GPT-OSS's as-is rule exists for ids that reach n.
CAPTURE_LOOP: dict[str, list[Row[Loop]]] = {
    GENERIC: [
        Row(VersionRange("0.4.4.post2"), Loop.BEFORE_EACH_LAYER, "0.4.10 models/llama.py:330-332")
    ],
    DEEPSEEK: [
        Row(
            VersionRange("0.4.4.post2"),
            Loop.BEFORE_EACH_LAYER,
            "0.5.6 models/deepseek_v2.py:3276-3310",
        )
    ],
    GPT_OSS: [
        Row(
            VersionRange("0.4.4.post2", "0.5.20"),
            Loop.BEFORE_EACH_LAYER,
            "0.4.10 models/llama.py:330-332",
        ),
        Row(VersionRange("0.5.20"), Loop.AFTER_EACH_LAYER, "0.5.23 models/gpt_oss.py:1347-1352"),
    ],
}

DEFAULT_IDS = "0.4.10 models/llama.py:743 get_eagle3_default_layers: [2, n//2, n-3]"

# eagle_config.use_aux_hidden_state: False switches capture off (True: honoured).
USE_AUX_FLAG: list[Row[bool]] = [
    Row(
        VersionRange("0.4.4.post2", "0.5.8"),
        False,
        "0.4.10 model_executor/model_runner.py:340-361 (flag not read)",
    ),
    Row(VersionRange("0.5.8"), True, "0.5.10 model_executor/model_runner.py:355-379"),
]

# The error a target class without set_eagle3_layers_to_capture raises at start-up.
MISSING_HOOK: list[Row[str]] = [
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
GRAPH_USES_DEFAULTS: list[Row[bool]] = [
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

# Without capture the logits processor stores the target's post-final-norm hidden state.
NO_AUX_FEED = "0.4.6.post1 layers/logits_processor.py:323-345"


def capture(
    target: TargetConfig,
    draft: DraftConfig,
    release: EngineRelease,
    target_class: str,
    aux_override: bool | None,
    cuda_graph: bool,
) -> Capture:
    """What this release's target hands the draft (before widths and findings)."""
    n = target.num_hidden_layers
    cls_row = CAPTURE_CLASSES.get(target_class)
    family = cls_row.value if cls_row else GENERIC
    src: dict[str, str] = {}
    flag = pick(USE_AUX_FLAG, release)
    aux_on, off_reason = aux_switch(flag.value, flag.source, draft, aux_override, src)
    startup, unverified = _class_support(target_class, cls_row, release, aux_on, src)

    ids_row = pick(IDS_SOURCE, release)
    src["ids_source"] = ids_row.source
    config_ids, ignored = read_ids(draft, (ids_row.value,) if ids_row.value else ())
    id_rule = None
    if config_ids and aux_on and not startup:
        rule_row = pick(ID_RULE[family], release)
        id_rule, engine_ids = rule_row.value, rule_row.value.apply(config_ids, n)
        src["id_rule"] = rule_row.source
    else:
        engine_ids = default_layers(n)
        src["default_ids"] = DEFAULT_IDS
    loop = pick(CAPTURE_LOOP[family], release)
    src["capture_loop"] = loop.source

    graph_ids = None
    graph_row = pick(GRAPH_USES_DEFAULTS, release)
    if cuda_graph and aux_on and graph_row.value:
        graph_ids = in_loop(default_layers(n), loop.value.top(n))
        src["cuda_graph"] = graph_row.source
    gate = era(release)
    src["fc_gate"] = gate.source
    if not aux_on:
        src["feed_without_aux"] = NO_AUX_FEED
    return Capture(
        aux_on=aux_on,
        config_ids=config_ids,
        ignored_ids=ignored,
        engine_ids=engine_ids,
        top_layer=loop.value.top(n),
        id_rule=str(id_rule) if id_rule else None,
        graph_ids=graph_ids,
        startup_error=startup,
        aux_off_reason=off_reason,
        fc_in=num_aux(draft, release) * draft.target_width,
        fc_gate=gate.value.fc_gate,
        unverified=unverified,
        sources=src,
    )


def _class_support(
    target_class: str,
    cls_row: Row[str] | None,
    release: EngineRelease,
    aux_on: bool,
    src: dict[str, str],
) -> tuple[str | None, str | None]:
    """(start-up error, unverified note) for the target class in this release."""
    added = CLASS_ADDED.get(target_class)
    if added and release not in added.versions:
        src["target_class"] = added.source
        return f"{target_class} is not an SGLang architecture before {added.versions.first}", None
    if aux_on and cls_row is None:
        return None, f"{target_class} is not in the kit's table of SGLang capture classes"
    if aux_on and release not in cls_row.versions:
        hook = pick(MISSING_HOOK, release)
        src["set_eagle3_layers_to_capture"] = f"{hook.source}; added in {cls_row.source}"
        return hook.value.format(cls=target_class), None
    if cls_row is not None:
        src["set_eagle3_layers_to_capture"] = cls_row.source
    return None, None
