"""How vLLM runs the draft's forward pass: `combine_hidden_states` (fc) on the target's states at
every draft step 0, never on the draft's own hidden state, and layers after the first open with
`input_layernorm`, fused with the residual."""

from __future__ import annotations

from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vocab import Era, FcGate

# No width gate: the proposer always runs combine_hidden_states (fc) for eagle3. Later layers
# exist from 0.11.1 (llama_eagle3.py:91-93: input_layernorm(hidden_states, residual)). The head
# is always the draft's own ParallelLMHead(draft_vocab_size): tie_word_embeddings is never read
# (0.9.2 … 0.33.0 llama_eagle3.py; 0.33.0 :329); a checkpoint without one borrows the target's
# (load.SHARING), which the load replay reports as that parameter's state.
_ERA = Era(FcGate.ALWAYS, "input_layernorm", own_head_only=True)
ERAS: list[Row[Era]] = [
    Row(VersionRange("0.9.2", "0.33.0"), _ERA,
        "v1/spec_decode/eagle.py:100-104 combine_hidden_states, then assert width (0.9.2)"),
    Row(VersionRange("0.33.0"), _ERA,
        "v1/spec_decode/llm_base_proposer.py:549 combine_hidden_states (0.33.0)"),
]  # fmt: skip


def era(release: EngineRelease) -> Row[Era]:
    return pick(ERAS, release)
