"""vLLM: everything the kit knows about how it loads, feeds, runs and reports an EAGLE-3 draft.

Read in the released `vllm` wheels on PyPI (`pip download --no-deps vllm==X`); every row cites
the file inside the wheel (`vllm/…`) for the release it names.

- `load`: which configs it refuses, the parameters it builds, what its loader does with each key;
- `acceptance`: what its logs and metrics print, and how the figures are computed.
"""

from __future__ import annotations

from kit.engines.vllm import acceptance, flags, load
from kit.engines.vllm.load import (
    CONFIG_FIX,
    SPECULATORS_FIX,
    config_problem,
    d2t_source,
    engine_params,
    from_target,
    missing_d2t_failure,
    num_aux,
    resolve_key,
    startup_failure,
)

NAME = "vllm"

RELEASES: tuple[str, ...] = (
    "0.9.2", "0.10.0", "0.10.1.1", "0.10.2", "0.11.0", "0.11.2", "0.12.0", "0.14.0",
    "0.18.0", "0.24.0", "0.28.0", "0.33.0",
)  # fmt: skip

__all__ = [
    "CONFIG_FIX",
    "NAME",
    "RELEASES",
    "SPECULATORS_FIX",
    "acceptance",
    "config_problem",
    "d2t_source",
    "engine_params",
    "flags",
    "from_target",
    "load",
    "missing_d2t_failure",
    "num_aux",
    "resolve_key",
    "startup_failure",
]
