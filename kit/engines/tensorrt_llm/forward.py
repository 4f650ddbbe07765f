"""How TensorRT-LLM runs the draft's forward pass (1.2.0rc2): `apply_eagle3_fc` runs fc only
when the hidden state it is handed is not the draft's width (`FcGate.WIDTH`), and every decoder
layer is an EAGLE-3 layer: layers after the first add the previous residual to their input and
read [input_layernorm(embeds) ‖ hidden_norm(h)] again (`EVERY_LAYER_READS_EMBEDS`)."""

from __future__ import annotations

from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.tensorrt_llm.config import AT, SPEC
from kit.engines.vocab import EVERY_LAYER_READS_EMBEDS, Era, FcGate

ERAS: list[Row[Era]] = [
    Row(VersionRange("1.2.0rc2"), Era(FcGate.WIDTH, EVERY_LAYER_READS_EMBEDS),
        f"{SPEC}:325-340 apply_eagle3_fc: fc iff hidden_states.shape[-1] != hidden_size; "
        f":233-249 layers > 0 take hidden_states + residual, then Eagle3DecoderLayer "
        f"(:109-140) {AT}"),
]  # fmt: skip


def era(release: EngineRelease) -> Row[Era]:
    return pick(ERAS, release)
