"""How LMDeploy runs the draft's forward pass: fc only when the handed width differs from the
draft's (`FcGate.WIDTH`, as SGLang), one decoder layer, the next step fed the pre-norm state; the
proposer maps a drafted id through `draft_id_to_target_id`, which holds absolute target ids
(`TokenMap.ABSOLUTE`), and the logits always come from the draft's own `lm_head`."""

from __future__ import annotations

from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.lmdeploy.config import EAGLE3, P
from kit.engines.vocab import Era, FcGate, TokenMap

# One decoder layer only, so no later layer opens with any norm (`later_input_norm` is unused).
_ERA = Era(FcGate.WIDTH, "input_layernorm", token_map=TokenMap.ABSOLUTE, own_head_only=True)
ERAS: list[Row[Era]] = [
    Row(VersionRange("0.11.0"), _ERA,
        EAGLE3 + ":124-126 (0.11.0), :125-127 (0.15.0, 0.18.0) fc iff "
        "previous_hidden_states.shape[-1] != inputs_embeds.shape[-1]; "
        + P + "spec_decode/proposers/eagle3.py:62 (0.11.0), :122 (0.15.0), :137 (0.18.0) "
        "draft_id_to_target_id[draft_token_ids]; " + EAGLE3 + ":229-232 (0.11.0) get_logits: lm_head"),
]  # fmt: skip


def era(release: EngineRelease) -> Row[Era]:
    return pick(ERAS, release)
