"""How SGLang runs the draft's forward pass: fc only when the handed width differs from the
draft's (`FcGate.WIDTH`), and layers after the first open with `hidden_norm`, fused with the
residual (multi-layer drafts exist from 0.5.12)."""

from __future__ import annotations

from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vocab import Era, FcGate

# The gate is the same in every release; each row names the line in its releases. Later layers
# exist from 0.5.12 (llama_eagle3.py:93-100: hidden_norm(hidden_states, residual)).
_ERA = Era(FcGate.WIDTH, "hidden_norm")
_GATE = "models/llama_eagle3.py:{} fc iff hidden_states.shape[-1] != embeds.shape[-1] ({})"
ERAS: list[Row[Era]] = [
    Row(VersionRange(first, until), _ERA, _GATE.format(line, read))
    for first, until, line, read in (
        ("0.4.4.post2", "0.4.9", 128, "0.4.6.post1"),
        ("0.4.9", "0.5.3", 148, "0.4.10"),
        ("0.5.3", "0.5.6", 161, "0.5.3"),
        ("0.5.6", "0.5.10", 162, "0.5.6"),
        ("0.5.10", "0.5.12", 176, "0.5.10"),
        ("0.5.12", "0.5.15", 218, "0.5.12"),
        ("0.5.15", "0.5.20", 214, "0.5.15"),
        ("0.5.20", "0.5.23", 229, "0.5.20"),
        ("0.5.23", None, 238, "0.5.23"),
    )
]


def era(release: EngineRelease) -> Row[Era]:
    return pick(ERAS, release)
