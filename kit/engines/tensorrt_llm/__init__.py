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

from kit.engines.base import Engine

# Releases read: version.py at the commit read says 1.2.0rc2 (a pre-release NVIDIA publishes).
RELEASES: tuple[str, ...] = ("1.2.0rc2",)

ENGINE = Engine.register(__name__, RELEASES)
