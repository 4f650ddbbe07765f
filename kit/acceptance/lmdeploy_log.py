"""LMDeploy's periodic stats line with its `SpecDecoding metrics:` part (EAGLE-3 since 0.11.0).

`[%Y-%m-%d %H:%M:%S DPn] Avg thr (in/out): P / G tokens/s, …, SpecDecoding metrics: Draft
acceptance rate: R%, Mean acceptance length: L, Accepted: N tokens, Drafted: M tokens,
Per-position acceptance rate: …` (`kit.engines.lmdeploy.acceptance.SPEC_LOG`). The spec part
has vLLM's field names, so it is read by field with vLLM's V1 reader; the rate's two decimals and
the `Avg thr` head tell the engine apart.
"""

from __future__ import annotations

import re

from kit.acceptance import sglang_log, vllm_log
from kit.acceptance.model import Window

_THROUGHPUT = re.compile(r"Avg thr \(in/out\): [0-9.]+ / ([0-9.]+) tokens/s")
Signature = tuple[str, str]


def parse_line(line: str, line_no: int) -> tuple[Window, Signature] | None:
    """A window for an LMDeploy stats line with spec-decode figures; None for any other line.

    Raises `vllm_log.Garbled` when the figures cannot be read.
    """
    if vllm_log.V1_MARK not in line or not vllm_log.is_lmdeploy(line):
        return None
    w, _family = vllm_log.v1_fields(line[line.index(vllm_log.V1_MARK) :])
    m = _THROUGHPUT.search(line)
    w.throughput = float(m[1]) if m else None
    w.t, w.line_no = sglang_log.timestamp(line), line_no
    return w, ("lmdeploy", "spec_log")
