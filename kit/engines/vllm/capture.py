"""Which target hidden states vLLM hands an EAGLE-3 draft, per release and target class.

The model runner reads ids from the draft config (top level from 0.11.1, also `eagle_config` from
0.24) and passes them verbatim, else the target's defaults; the target's forward appends the
state before each listed layer (after each from 0.18, so id n, the final pre-norm state, is
reachable). The target must implement `SupportsEagle3` (a config-level model_type allow-list up to
0.14). The proposer always runs `combine_hidden_states` (fc) on what it is handed and asserts the
result is the draft's width: no width gate. From 0.12 a draft config whose `eagle_config` says
`use_aux_hidden_state: false` switches both off: the runner captures nothing and hands the draft
the target's last (post-norm) hidden state, which `combine_hidden_states` returns unchanged. Sources are paths inside the wheel's `vllm/`, with the
release they were read in.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.engines.aux_ids import IdRule, Loop, aux_flag_key, aux_switch, default_layers, read_ids
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vllm.config import USE_AUX_SWITCH, num_aux
from kit.engines.vllm.forward import era
from kit.engines.vocab import Capture, FcGate

RUNNER = "vllm/v1/worker/gpu_model_runner.py"

# Where the runner reads ids from the draft config (empty: never; the target's defaults).
IDS_SOURCE: list[Row[tuple[str, ...]]] = [
    Row(VersionRange("0.9.2", "0.11.1"), (),
        "0.9.2 " + RUNNER + ":1797-1798 get_eagle3_aux_hidden_state_layers() only"),
    Row(VersionRange("0.11.1", "0.22.0"), ("top_level",),
        "0.11.1 " + RUNNER + ":3395-3420 hf_config.eagle_aux_hidden_state_layer_ids"),
    Row(VersionRange("0.22.0"), ("top_level", "eagle_config"),
        "0.22.0 " + RUNNER + ":5241-5253, 0.24.0 :5353-5381 top level, else eagle_config"),
]  # fmt: skip
ID_RULE = Row(
    VersionRange("0.9.2"),
    IdRule.VERBATIM,
    "0.11.1 " + RUNNER + ":3413-3420 ids passed to set_aux_hidden_state_layers as is",
)
DEFAULT_IDS = "0.14.0 vllm/model_executor/models/llama.py:608-615 (2, n // 2, n - 3)"

# ≤0.14 the loop appends before layer idx (ids 0..n-1); ≥0.18 after each layer (ids 0..n).
CAPTURE_LOOP: list[Row[Loop]] = [
    Row(VersionRange("0.9.2", "0.18.0"), Loop.BEFORE_EACH_LAYER,
        "0.9.2 vllm/model_executor/models/llama.py:387-391; 0.14.0 :446"),
    Row(VersionRange("0.18.0"), Loop.AFTER_EACH_LAYER,
        "0.18.0 vllm/model_executor/models/llama.py:419-426 _maybe_add_hidden_state(idx + 1)"),
]  # fmt: skip

# Target modules defining get_eagle3_aux_hidden_state_layers / SupportsEagle3.
_ADDED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.9.2", ("llama",)),
    ("0.10.1.1", ("qwen3",)),
    ("0.11.0", ("apertus", "gpt_oss", "minicpm", "qwen2")),
    ("0.11.1", ("mllama4", "qwen2_5_vl", "qwen3_moe")),
    ("0.14.0", ("mimo_v2_flash", "qwen3_vl")),
    (
        "0.18.0",
        (
            *("afmoe", "arcee", "deepseek_v2", "hunyuan_v1", "hunyuan_vision", "kimi_k25"),
            *("llava", "mistral3", "qwen3_5", "step1"),
        ),
    ),
    ("0.19.0", ("pixtral",)),
    ("0.22.0", ("gemma4", "gemma4_mm", "laguna", "minimax_m2", "nemotron_h")),
    ("0.24.0", ("qwen3_next",)),
)
MODULE_SINCE: dict[str, Row[bool]] = {
    m: Row(
        VersionRange(first),
        True,
        f"{first} vllm/model_executor/models/{m}.py get_eagle3_aux_hidden_state_layers",
    )
    for first, mods in _ADDED
    for m in mods
}

# Architecture -> vLLM model module (model_executor/models/registry.py).
ARCH_MODULE: dict[str, str] = {
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
TARGET_ALLOW: list[Row[tuple[str, ...] | None]] = [
    Row(VersionRange("0.9.2", "0.10.1.1"), ("llama",),
        "0.9.2 vllm/config.py:2906-2912; 0.10.0 :3027-3031"),
    Row(VersionRange("0.10.1.1", "0.11.0"), ("llama", "qwen"),
        "0.10.1.1 vllm/config/__init__.py:2347-2353"),
    Row(VersionRange("0.11.0", "0.18.0"), ("llama", "qwen", "minicpm", "gpt_oss"),
        "0.11.1 vllm/config/speculative.py:621-631; 0.14.0 :633-643"),
    Row(VersionRange("0.18.0"), None, "0.18.0 supports_eagle3(model): no model_type allow-list"),
]  # fmt: skip


def capture(
    target: TargetConfig,
    draft: DraftConfig,
    release: EngineRelease,
    target_class: str,
    aux_override: bool | None,
    cuda_graph: bool,
) -> Capture:
    """What this release's target hands the draft (before widths and findings). vLLM captures
    the same layers with and without CUDA graphs, so `cuda_graph` changes nothing here."""
    n = target.num_hidden_layers
    src: dict[str, str] = {}
    switch = pick(USE_AUX_SWITCH, release)
    aux_on, off_reason = aux_switch(switch.value, switch.source, draft, aux_override, src)
    startup, unverified = _target_support(target_class, target, release, src)

    ids_row = pick(IDS_SOURCE, release)
    src["ids_source"] = ids_row.source
    config_ids, ignored = read_ids(draft, ids_row.value)
    if config_ids:
        engine_ids = ID_RULE.value.apply(config_ids, n)
        src["id_rule"] = ID_RULE.source
    else:
        engine_ids = default_layers(n)
        src["default_ids"] = DEFAULT_IDS
    loop, gate = pick(CAPTURE_LOOP, release), era(release)
    src["capture_loop"], src["fc_gate"] = loop.source, gate.source
    # the config switch makes combine_hidden_states return its input; a capture that is merely
    # inactive (given) still goes through fc
    config_off = off_reason is not None and aux_override is None
    if config_off:
        src["fc_gate"] = switch.source
    return Capture(
        aux_on=aux_on,
        config_ids=config_ids,
        ignored_ids=ignored,
        engine_ids=engine_ids,
        top_layer=loop.value.top(n),
        id_rule=str(ID_RULE.value) if config_ids else None,
        graph_ids=None,
        startup_error=startup,
        aux_off_reason=off_reason,
        fc_in=num_aux(draft, release) * draft.target_width,
        fc_gate=FcGate.SKIPPED if config_off else gate.value.fc_gate,
        unverified=unverified,
        sources=src,
        fixes={"FC_BYPASSED": _switch_fix(draft, release)} if config_off else {},
    )


def _switch_fix(draft: DraftConfig, release: EngineRelease) -> str:
    width = num_aux(draft, release) * draft.target_width
    return (
        f"delete `{aux_flag_key(draft)}: false` from config.json (or set it true): the draft's fc "
        f"was trained on the target's aux states ({width} wide), not on its last hidden state"
    )


def _text_model_type(target: TargetConfig) -> str:
    key = target.text_config_key
    text = target.raw.get(key) if key else None
    return str(text.get("model_type", target.model_type)) if text else target.model_type


def _target_support(
    target_class: str, target: TargetConfig, release: EngineRelease, src: dict[str, str]
) -> tuple[str | None, str | None]:
    """(start-up error, unverified note) for the target class in this release."""
    allow = pick(TARGET_ALLOW, release)
    text_type = _text_model_type(target)
    module = ARCH_MODULE.get(target_class)
    if allow.value is not None and not any(a in text_type for a in allow.value):
        src["target_allow_list"] = allow.source
        allowed = ", ".join(allow.value)
        return f"eagle3 refused for target model_type {text_type!r} (allowed: {allowed})", None
    if module is None:
        return None, f"{target_class} is not in the kit's table of vLLM target modules"
    since = MODULE_SINCE.get(module)
    if since is None or release not in since.versions:
        src["target_module"] = since.source if since else f"vllm/model_executor/models/{module}.py"
        added = f"; added in {since.versions.first}" if since else ""
        return (
            f"{target_class} ({module}.py) does not implement SupportsEagle3 in {release}{added}",
            None,
        )
    src["target_module"] = since.source
    return None, None
