"""SGLang: everything the kit knows about how it loads, feeds, runs and reports an EAGLE-3 draft.

Read in the released `sglang` wheels on PyPI (`pip download --no-deps sglang==X`); every row cites
the file and line inside the wheel's `sglang/srt/` for the release it names.

- `config`: which draft configs it refuses, what it reads from them, the form it wants;
- `params`: the parameters its draft module builds; `load`: what its loader does with each key;
- `capture`: which target states it hands the draft; `forward`: how the draft's forward runs;
- `acceptance`: what its decode log and metrics print, the formulas behind the printed rate, and
  how it verifies a drafted token at a temperature.
"""

from __future__ import annotations

from kit.engines.base import Engine

# Releases read (0.4.4.post1 has no EAGLE-3 module; there is no 0.5.0 on PyPI).
RELEASES: tuple[str, ...] = (
    "0.4.4.post2", "0.4.4.post3", "0.4.4.post4", "0.4.5", "0.4.6.post1", "0.4.7", "0.4.8",
    "0.4.9", "0.4.9.post6", "0.4.10", "0.5.1", "0.5.2", "0.5.3", "0.5.3.post1",
    "0.5.3.post2", "0.5.3.post3", "0.5.4", "0.5.5", "0.5.6", "0.5.7", "0.5.8", "0.5.9",
    "0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14", "0.5.15", "0.5.16", "0.5.17",
    "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23",
)  # fmt: skip

ENGINE = Engine.register(__name__, RELEASES)
