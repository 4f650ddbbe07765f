"""LMDeploy (PyTorch engine): everything the kit knows about how it loads, feeds, runs and counts
an EAGLE-3 draft.

Read in the released `lmdeploy` wheels on PyPI (`pip download --no-deps lmdeploy==X`); every row
cites the file and line inside the wheel's `lmdeploy/` for the releases it names. EAGLE-3 arrives
in 0.11.0 (0.10.2 has no `llama_eagle3.py`); the draft module and its loader are the same in
every release read.

- `config`: which draft configs stop it at start-up, what it builds from them, the form it wants;
- `params`: the parameters its draft module builds; `load`: what its loader does with each key;
- `capture`: which target states it hands the draft; `forward`: how the draft's forward runs;
- `acceptance`: how its metrics count accepted tokens.
"""

from __future__ import annotations

from kit.engines.base import Engine

# Releases read: the first with EAGLE-3, one in the middle, the latest on PyPI.
RELEASES: tuple[str, ...] = ("0.11.0", "0.15.0", "0.18.0")

ENGINE = Engine.register(__name__, RELEASES)
