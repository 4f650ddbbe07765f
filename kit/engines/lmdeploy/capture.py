"""Which target hidden states LMDeploy hands an EAGLE-3 draft, per release and target class.

No release reads the draft's aux ids. The target's config builder sets its own
`aux_hidden_state_layers = (2, n // 2, n - 3)` when the engine runs eagle3, and the target's
decoder loop appends `hidden_states + residual` before each listed layer (the input of layer k =
the state after k layers). Only two builders do so: Llama's, for a config whose
`architectures[0]` is exactly `LlamaForCausalLM`, in every release read, and Kimi-K2's (outer
`kimi_k25` or text `kimi_k2` configs) from 0.18.0. Any other target starts, captures nothing and
hands over its final normed hidden state; the draft's fc then runs only if that width differs
from the draft's (`FcGate.WIDTH`). Sources are paths inside the wheel.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.engines.aux_ids import GIVEN_OFF, Loop, default_layers, read_ids
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.lmdeploy.config import P, num_aux
from kit.engines.lmdeploy.forward import era
from kit.engines.vocab import Capture

LLAMA_BUILDER = (
    P + "configurations/llama.py:11 architectures[0] in ['LlamaForCausalLM'], :26-28 "
    "aux_hidden_state_layers = (2, n // 2, n - 3) (0.11.0, 0.15.0, 0.18.0)"
)
KIMI_BUILDER = (
    "0.18.0 " + P + "configurations/kimi_k25.py:12,25 -> kimi_k2.py:25,82-83 "
    "aux_hidden_state_layers = (2, n // 2, n - 3); models/kimi_k2_language.py:831-851"
)

# Targets whose config builder sets aux_hidden_state_layers: by architectures[0] …
CAPTURE_ARCH: dict[str, Row[bool]] = {
    "LlamaForCausalLM": Row(VersionRange("0.11.0"), True, LLAMA_BUILDER),
}
# … or by model_type (outer or text config).
CAPTURE_MODEL_TYPE: dict[str, Row[bool]] = {
    "kimi_k25": Row(VersionRange("0.18.0"), True, KIMI_BUILDER),
    "kimi_k2": Row(VersionRange("0.18.0"), True, KIMI_BUILDER),
}
# Target architectures that are not in LMDeploy's model map before a release.
CLASS_ADDED: dict[str, Row[str]] = {
    "KimiK25ForConditionalGeneration": Row(
        VersionRange("0.18.0"), "", "0.18.0 " + P + "models/module_map.py:119-120"
    ),
}

# The draft's own ids are never read: no reader of eagle_aux_hidden_state_layer_ids anywhere.
IDS_SOURCE = P + "configurations/llama.py:26-28: the target's own layers, no draft config read"
DEFAULT_IDS = LLAMA_BUILDER
CAPTURE_LOOP: list[Row[Loop]] = [
    Row(VersionRange("0.11.0", "0.15.0"), Loop.BEFORE_EACH_LAYER,
        "0.11.0 " + P + "models/llama.py:260-261 hidden_states + residual before layer idx"),
    Row(VersionRange("0.15.0"), Loop.BEFORE_EACH_LAYER,
        "0.15.0, 0.18.0 " + P + "models/llama.py:266-267 hidden_states + residual before layer idx"),
]  # fmt: skip
# Without aux states the target's output is its final hidden state after the final norm.
NO_AUX_FEED = (
    P + "models/llama.py:271,276 (0.11.0), :277,282 (0.18.0) final norm; "
    "spec_decode/base.py:67 (0.11.0), :145 (0.18.0) aux_hidden_states replace it only if present"
)

IDS_FIX = (
    "LMDeploy reads no aux layer ids: it captures the inputs of target layers (2, n // 2, n - 3); "
    "train the draft on those states, or serve it with an engine that reads its ids"
)
AUX_FIX = (
    "LMDeploy captures aux states only for a target whose architectures[0] is LlamaForCausalLM "
    "(from 0.18.0 also Kimi-K2 / K2.5): serve the target under that class"
)


def capture(
    target: TargetConfig,
    draft: DraftConfig,
    release: EngineRelease,
    target_class: str,
    aux_override: bool | None,
    cuda_graph: bool,
) -> Capture:
    """What this release's target hands the draft (before widths and findings). LMDeploy's CUDA
    graphs keep the aux outputs (models/llama.py get_outputs_cudagraph), so `cuda_graph`
    changes nothing here."""
    n = target.num_hidden_layers
    src: dict[str, str] = {"ids_source": IDS_SOURCE, "default_ids": DEFAULT_IDS}
    startup = _not_an_architecture(target_class, release, src)
    captures = _captures(target_class, target, release, src)
    aux_on, off_reason = captures, None
    if aux_override is not None:
        aux_on, off_reason = aux_override, None if aux_override else GIVEN_OFF
    elif not captures:
        off_reason = f"{release} sets no aux_hidden_state_layers for a {target_class} target"
        src["feed_without_aux"] = NO_AUX_FEED
    _, declared = read_ids(draft, ())
    loop, gate = pick(CAPTURE_LOOP, release), era(release)
    src["capture_loop"], src["fc_gate"] = loop.source, gate.source
    return Capture(
        aux_on=aux_on,
        config_ids=None,
        ignored_ids=declared,
        engine_ids=default_layers(n),
        top_layer=loop.value.top(n),
        id_rule=None,
        graph_ids=None,
        startup_error=startup,
        aux_off_reason=off_reason,
        fc_in=num_aux(draft, release) * draft.target_width,
        fc_gate=gate.value.fc_gate,
        sources=src,
        fixes={"AUX_IDS_IGNORED": IDS_FIX, "FC_BYPASSED": AUX_FIX},
    )


def _text_model_type(target: TargetConfig) -> str:
    key = target.text_config_key
    text = target.raw.get(key) if key else None
    return str(text.get("model_type", "")) if isinstance(text, dict) else ""


def _captures(
    target_class: str, target: TargetConfig, release: EngineRelease, src: dict[str, str]
) -> bool:
    """Whether the target's config builder sets aux_hidden_state_layers in this release."""
    rows = [CAPTURE_ARCH.get(target_class)]
    rows += [CAPTURE_MODEL_TYPE.get(t) for t in (target.model_type, _text_model_type(target))]
    row = next((r for r in rows if r is not None and release in r.versions), None)
    src["target_builder"] = row.source if row else LLAMA_BUILDER
    return row is not None


def _not_an_architecture(
    target_class: str, release: EngineRelease, src: dict[str, str]
) -> str | None:
    """The start-up error of a target class LMDeploy cannot build at all in this release."""
    added = CLASS_ADDED.get(target_class)
    if added is None or release in added.versions:
        return None
    src["target_class"] = added.source
    return (
        f"RuntimeError: Can not found rewrite for architectures: ['{target_class}'] "
        f"(an LMDeploy architecture from {added.versions.first})"
    )
