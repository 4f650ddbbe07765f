"""TensorRT-LLM (PyTorch backend): how it loads, feeds and runs an EAGLE-3 draft, and counts it.

Read in the public NVIDIA/TensorRT-LLM repository (the PyPI wheel only fetches NVIDIA's own):
the draft model at commit b35ac1b6, whose `tensorrt_llm/version.py` is 1.2.0rc2, the only
release listed; the loader, spec-decode metadata and sampler in stored copies of the same API
(their rows say so). Every row cites the file (and line where read at that commit).

- `config`: which draft configs it refuses, what it reads from them, the form it wants;
- `params`: the parameters its draft module builds; `load`: what its loader does with each key
  (and `unloaded_failure`: a parameter no tensor fills fails the load);
- `capture`: which target states it hands the draft; `forward`: how the draft's forward runs;
- `acceptance`: how it counts accepted draft tokens.
"""

from __future__ import annotations

from kit.engines.tensorrt_llm import acceptance, capture, config, forward, load, params
from kit.engines.tensorrt_llm.capture import capture as capture_aux
from kit.engines.tensorrt_llm.config import (
    CONFIG_FIX,
    constructor_failure,
    honours,
    num_aux,
    refuses_config,
    rewritten_config,
)
from kit.engines.tensorrt_llm.forward import era
from kit.engines.tensorrt_llm.load import (
    SHAPE_CHECK,
    d2t_source,
    from_target,
    missing_d2t_failure,
    resolve_key,
    unloaded_failure,
)
from kit.engines.tensorrt_llm.params import engine_params

NAME = "tensorrt_llm"

# Releases read: version.py at the commit read says 1.2.0rc2 (a pre-release NVIDIA publishes).
RELEASES: tuple[str, ...] = ("1.2.0rc2",)

__all__ = [
    "CONFIG_FIX",
    "NAME",
    "RELEASES",
    "SHAPE_CHECK",
    "acceptance",
    "capture",
    "capture_aux",
    "config",
    "constructor_failure",
    "d2t_source",
    "engine_params",
    "era",
    "forward",
    "from_target",
    "honours",
    "load",
    "missing_d2t_failure",
    "num_aux",
    "params",
    "refuses_config",
    "resolve_key",
    "rewritten_config",
    "unloaded_failure",
]
