"""Mutated engine log lines, Prometheus text and server info through analyze_logs and doctor.

The seeds are the incident's logs, the acceptance lines the format tests read, and what the fake
SGLang and vLLM servers send. A case makes a line's numbers hostile (`accept len: 999…9`, nan,
1e999), breaks its bytes, cuts it, makes it 300 kB long or appends JSON nested thousands deep.
"""

from __future__ import annotations

import json

from fuzz_inputs import (
    DRAFT,
    RELEASES,
    TARGET,
    Fence,
    log_lines,
    more,
    mutated_json,
    mutated_line,
    server_texts,
    survives,
)
from hypothesis import given
from hypothesis import strategies as st

import kit

LINES = log_lines()
INFO, SGLANG_METRICS, VLLM_METRICS = server_texts()
# llama.cpp's and TensorRT-LLM's spec-decode counters (llama.cpp PR #26389; TensorRT-LLM
# tensorrt_llm/metrics/collector.py), as their servers write them
OTHER_METRICS = """# TYPE llamacpp:spec_decode_num_drafts counter
llamacpp:spec_decode_num_drafts 87
llamacpp:spec_decode_num_draft_tokens 259
llamacpp:spec_decode_num_accepted_tokens 167
llamacpp:spec_decode_num_accepted_tokens_per_pos{position="0"} 70
llamacpp:spec_decode_num_accepted_tokens_per_pos{position="1"} 55
# TYPE trtllm_spec_decode_num_draft_tokens_total counter
trtllm_spec_decode_num_draft_tokens_total{model_name="m",engine_type="trtllm"} 261.0
trtllm_spec_decode_num_accepted_tokens_total{model_name="m",engine_type="trtllm"} 167.0
trtllm_spec_decode_acceptance_length{model_name="m",engine_type="trtllm"} 2.5
trtllm_spec_decode_drafted_tokens_total{model_name="m",token_position="0"} 87.0
trtllm_spec_decode_accepted_tokens_total{model_name="m",token_position="0"} 70.0
"""
METRIC_LINES = (SGLANG_METRICS + VLLM_METRICS).decode().splitlines() + OTHER_METRICS.splitlines()
ENGINES = st.sampled_from([None, *RELEASES])


def log_text(seeds: list[str]) -> st.SearchStrategy[bytes]:
    """A few real lines kept as they are and a few mutated, in any order."""
    kept = st.lists(st.sampled_from(seeds).map(str.encode), max_size=6)
    bent = st.lists(st.sampled_from(seeds).flatmap(mutated_line), min_size=1, max_size=6)
    return st.tuples(kept, bent).flatmap(lambda kb: st.permutations(kb[0] + kb[1])).map(b"\n".join)


@given(log_text(LINES), ENGINES)
def test_mutated_log_lines_are_read_or_refused_in_one_line(text: bytes, engine: str | None):
    with Fence() as fence:
        log = fence.inside / "server.log"
        log.write_bytes(text)
        report = survives(kit.analyze_logs, [log], engine=engine)
        if report is not None:
            json.dumps(report.to_dict())  # what the CLI prints: every figure serialises
        survives(kit.doctor, DRAFT, target_config=TARGET, logs=[log], engine=engine)


@more(3)
@given(log_text(METRIC_LINES), ENGINES)
def test_mutated_prometheus_text_is_read_or_refused_in_one_line(text: bytes, engine: str | None):
    with Fence() as fence:
        scrape = fence.inside / "metrics.prom"
        scrape.write_bytes(b"# HELP vllm:x doc\n" + text)
        survives(kit.analyze_logs, [scrape], engine=engine)


@more(3)
@given(mutated_json(INFO), ENGINES)
def test_mutated_server_info_is_read_or_refused_in_one_line(text: bytes, engine: str | None):
    with Fence() as fence:
        info = fence.inside / "server_info.json"
        info.write_bytes(text)
        survives(kit.analyze_logs, [info], engine=engine)
        lines = fence.inside / "lines.jsonl"
        lines.write_bytes(text.replace(b"\n", b" ") + b"\n" + text[: len(text) // 2])
        survives(kit.analyze_logs, [lines], engine=engine)
