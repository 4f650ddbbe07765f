"""Mutated engine log lines, Prometheus text and server info through analyze_logs and doctor.

The seeds are the incident's logs, the acceptance lines the format tests read, and what the fake
SGLang and vLLM servers send. A case makes a line's numbers hostile (`accept len: 999…9`, nan,
1e999), breaks its bytes, cuts it, makes it 300 kB long or appends JSON nested thousands deep.
"""

from __future__ import annotations

import json
from unittest import mock

from fuzz_inputs import (
    DRAFT,
    RELEASES,
    TARGET,
    Fence,
    flip_bytes,
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
from kit.acceptance import columns, logfile, parse_files
from kit.errors import KitError

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
DECODE = sorted({line for line in LINES if "Decode batch" in line and "accept len: " in line})


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


@st.composite
def after_a_learned_shape(draw: st.DrawFn) -> bytes:
    """A decode line repeated past the first chunk (its shape learned, its copies read by the
    fast path), mutated copies of it, then the line again."""
    seed = draw(st.sampled_from(DECODE))
    block = ((seed + "\n") * (logfile.FIRST_CHUNK // len(seed) + 20)).encode()
    digits = [i for i, c in enumerate(seed.encode()) if 48 <= c <= 57]
    edits = st.lists(
        st.tuples(st.sampled_from(digits), st.integers(0, 255)), min_size=1, max_size=3
    )
    same_shape = edits.map(lambda e: flip_bytes(seed.encode(), e))  # any byte where a digit was
    bent = draw(st.lists(st.one_of(mutated_line(seed), same_shape), min_size=1, max_size=6))
    return block + b"\n".join(bent) + b"\n" + block


def read_as_run(path) -> tuple | None:
    """What a log's run holds (None: refused in one line)."""
    try:
        (run,) = parse_files([path])
    except KitError:
        return None
    stats = [(s.count, s.min, s.max, dict(s.hist or {})) for s in (run.accept_len, run.throughput)]
    return (run.windows, run.window_count, list(run.formats.items()), run.unparsed_lines,
            dict(run.unparsed_reasons), run.unparsed_examples, run.other_lines, stats,
            run.example_lines)  # fmt: skip


@more(2)
@given(after_a_learned_shape())
def test_mutated_lines_after_a_learned_shape_read_as_the_field_reader_reads_them(text: bytes):
    """The fast path checks a line's bytes against the shape it learned: a mutated line is read
    exactly as reading every line field by field reads it, and never escapes as a traceback."""
    with Fence() as fence:
        log = fence.inside / "server.log"
        log.write_bytes(text)
        fast = read_as_run(log)
        with mock.patch.object(columns, "MAX_PATTERNS", 0):
            full = read_as_run(log)
        assert fast == full
