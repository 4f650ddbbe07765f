"""Which target hidden states TensorRT-LLM hands an EAGLE-3 draft (1.2.0rc2).

The target's decoder layers call `spec_metadata.maybe_capture_hidden_states(layer_idx,
hidden_states, residual)` after their MLP, so id k is the output of layer k (the state after
k + 1 layers). The ids come from the speculative config's `eagle3_layers_to_capture`, which the
kit cannot see; the draft config's ids are never read. Without them the metadata captures
(1, n // 2 - 1, n - 4), and refuses a target of 2 … 5 layers. fc runs when the handed width is
not the draft's (`FcGate.WIDTH`).
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.engines.aux_ids import IdRule, Loop, aux_switch, read_ids
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.tensorrt_llm.config import AT, num_aux
from kit.engines.tensorrt_llm.forward import era
from kit.engines.vocab import Capture

EAGLE3 = "tensorrt_llm/_torch/speculative/eagle3.py"
UTILS = "tensorrt_llm/_torch/speculative/utils.py"

# Default capture without eagle3_layers_to_capture: output-of-layer ids (1, n//2 - 1, n - 4);
# a target of 2 … 5 layers is refused, a one-layer target captures its only layer.
DEFAULT_IDS: list[Row[str]] = [
    Row(VersionRange("1.2.0rc2"), "1, n//2-1, n-4",
        f"{EAGLE3}:104-115 Eagle3SpecMetadata.__post_init__ (stored copy 001e6700; "
        "Eagle3OneModelSpecMetadata the same); layers_to_capture = "
        f"spec_config.eagle3_layers_to_capture ({UTILS} get_spec_metadata) {AT}"),
]  # fmt: skip
# Where the draft config's ids are read: nowhere.
IDS_SOURCE = Row(
    VersionRange("1.2.0rc2"),
    (),
    f"{UTILS} get_spec_metadata passes spec_config.eagle3_layers_to_capture only; the draft "
    "config's eagle_aux_hidden_state_layer_ids is not read",
)
# The target writes the state after its layer: output of layer k = state after k + 1 layers.
CAPTURE_LOOP = Row(
    VersionRange("1.2.0rc2"),
    Loop.AFTER_EACH_LAYER,
    "tensorrt_llm/_torch/models/modeling_llama.py LlamaDecoderLayer.forward: "
    "maybe_capture_hidden_states(self.layer_idx, hidden_states, residual) after the MLP; "
    f"{EAGLE3} maybe_capture_hidden_states saves hidden_states + residual",
)
ID_RULE = IdRule.PLUS_ONE  # output of layer k, in the kit's states-after-k convention

# Target classes whose decoder layers call maybe_capture_hidden_states (stored copies read).
CAPTURE_CLASSES: dict[str, str] = {
    "LlamaForCausalLM": "tensorrt_llm/_torch/models/modeling_llama.py LlamaDecoderLayer",
    "Qwen3ForCausalLM": "tensorrt_llm/_torch/models/modeling_qwen3.py Qwen3DecoderLayer",
    "DeepseekV3ForCausalLM": "tensorrt_llm/_torch/models/modeling_deepseekv3.py DecoderLayer",
}
NO_FALLBACK = (
    "TensorRT-LLM has no fallback feed: a target that does not capture leaves the draft's "
    "hidden-state buffer unwritten (torch.empty); traced as one target-wide state"
)


def default_ids(n: int) -> tuple[int, ...] | None:
    """TensorRT-LLM's own default (output-of-layer ids), None where it refuses the target."""
    if n == 1:
        return (0,)
    if n <= 5:
        return None
    return (1, n // 2 - 1, n - 4)


def capture(
    target: TargetConfig,
    draft: DraftConfig,
    release: EngineRelease,
    target_class: str,
    aux_override: bool | None,
    cuda_graph: bool,
) -> Capture:
    """What this release's target hands the draft (before widths and findings). CUDA graphs
    capture the same layers, so `cuda_graph` changes nothing here."""
    n = target.num_hidden_layers
    src: dict[str, str] = {"ids_source": IDS_SOURCE.source}
    aux_on, off_reason = aux_switch(False, "", draft, aux_override, src)
    _, ignored = read_ids(draft, IDS_SOURCE.value)
    row = pick(DEFAULT_IDS, release)
    src["default_ids"] = row.source
    own = default_ids(n)
    startup = None
    if own is None:
        startup = f"ValueError: Not enough hidden layers for default EAGLE3 capture (n = {n})"
        src["target_module"] = row.source
    gate = era(release)
    src["capture_loop"], src["fc_gate"] = CAPTURE_LOOP.source, gate.source
    unverified = _unverified(target_class, aux_override, src)
    return Capture(
        aux_on=aux_on,
        config_ids=None,
        ignored_ids=ignored,
        engine_ids=ID_RULE.apply(own or (), n),
        top_layer=CAPTURE_LOOP.value.top(n),
        id_rule=None,
        graph_ids=None,
        startup_error=startup,
        aux_off_reason=off_reason,
        fc_in=num_aux(draft, release) * draft.target_width,
        fc_gate=gate.value.fc_gate,
        unverified=unverified,
        sources=src,
    )


def _unverified(target_class: str, aux_override: bool | None, src: dict[str, str]) -> str | None:
    if aux_override is False:
        return NO_FALLBACK
    where = CAPTURE_CLASSES.get(target_class)
    if where is None:
        return f"{target_class} is not in the kit's table of TensorRT-LLM capturing targets"
    src["target_module"] = where
    return None
