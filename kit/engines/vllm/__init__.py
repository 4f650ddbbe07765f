"""vLLM: everything the kit knows about how it loads, feeds, runs and reports an EAGLE-3 draft.

Read in the released `vllm` wheels on PyPI (`pip download --no-deps vllm==X`); every row cites
the file inside the wheel (`vllm/…`) for the release it names.

- `config`: which draft configs it refuses, what it reads from them, the form it wants;
- `params`: the parameters its draft module builds; `load`: what its loader does with each key;
- `capture`: which target states it hands the draft; `forward`: how the draft's forward runs;
- `acceptance`: what its logs and metrics print, and how the figures are computed.
"""

from __future__ import annotations

from kit.engines.base import Engine

RELEASES: tuple[str, ...] = (
    "0.9.2", "0.10.0", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.14.0",
    "0.18.0", "0.19.0", "0.22.0", "0.24.0", "0.25.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0",
    "0.32.0", "0.33.0",
)  # fmt: skip

ENGINE = Engine.register(__name__, RELEASES)
