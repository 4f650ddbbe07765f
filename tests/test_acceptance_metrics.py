"""Prometheus exposition (written by prometheus_client, as both engines do), SGLang
/get_server_info and per-request meta_info."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from kit.acceptance import analyze, parse_files


def test_sglang_gauges(tmp_path):
    """sglang:spec_accept_length (0.5.23 observability/metrics_collector.py:512),
    sglang:spec_accept_rate (:518), sglang:spec_num_steps / spec_num_draft_tokens (≥0.5.13,
    :536,542): the 0.5.10 incident figures as a scrape."""
    reg = CollectorRegistry()
    labels = {"model_name": "kimi-k2.5", "engine_type": "unified"}
    for name, value in [
        ("sglang:spec_accept_length", 1.0),
        ("sglang:spec_accept_rate", 0.0),
        ("sglang:spec_num_steps", 4),
        ("sglang:spec_num_draft_tokens", 5),
    ]:
        Gauge(name, "doc", list(labels), registry=reg).labels(**labels).set(value)
    p = tmp_path / "metrics.prom"
    p.write_bytes(generate_latest(reg))
    (run,) = parse_files([p])
    assert run.engine_name == "sglang"
    assert run.num_steps == 4 and run.num_draft_tokens == 5
    assert run.accept_len.mean == 1.0
    assert run.release_range is not None and str(run.release_range).startswith(">=0.5.3.post2")
    assert "ZERO_ACCEPTANCE" in {f.code for f in analyze([run]).findings}


def test_vllm_counters_with_per_position(tmp_path):
    """vLLM V1 SpecDecodingProm counters (0.33.0 vllm/v1/spec_decode/metrics.py:200-262): exposed with `_total`; two engines'
    label sets are summed; per-position = accepted at i / drafts."""
    reg = CollectorRegistry()
    lab = ["model_name", "engine"]
    drafts = Counter("vllm:spec_decode_num_drafts", "d", lab, registry=reg)
    tokens = Counter("vllm:spec_decode_num_draft_tokens", "t", lab, registry=reg)
    acc = Counter("vllm:spec_decode_num_accepted_tokens", "a", lab, registry=reg)
    pos = Counter(
        "vllm:spec_decode_num_accepted_tokens_per_pos", "p", [*lab, "position"], registry=reg
    )
    for engine in ("0", "1"):
        drafts.labels("m", engine).inc(500)
        tokens.labels("m", engine).inc(1500)
        acc.labels("m", engine).inc(768)
        for i, n in enumerate((371.5, 251, 145.5)):
            pos.labels("m", engine, str(i)).inc(n)
    p = tmp_path / "vllm.prom"
    p.write_bytes(generate_latest(reg))
    (run,) = parse_files([p])
    (w,) = run.windows
    assert w.accept_len == pytest.approx(1 + 1536 / 1000)
    assert w.accept_rate == pytest.approx(1536 / 3000)
    assert run.per_position == [0.743, 0.502, 0.291]
    assert run.num_steps == 3


def test_server_info(tmp_path):
    """/get_server_info = server args + internal_states + version (0.5.10
    entrypoints/http_server.py:601-618): D, steps, topk and the release come from it."""
    info = {
        "speculative_algorithm": "EAGLE3",
        "speculative_num_steps": 4,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 5,
        "internal_states": [{"avg_spec_accept_length": 1.0, "last_gen_throughput": 25.1}],
        "version": "0.5.10",
    }
    p = tmp_path / "server_info.json"
    p.write_text(json.dumps(info))
    (run,) = parse_files([p])
    assert run.engine == "sglang==0.5.10"
    assert (run.num_steps, run.topk, run.num_draft_tokens) == (4, 1, 5)
    assert run.accept_len.mean == 1.0


def test_meta_info_jsonl_histogram(tmp_path):
    """0.5.10 managers/tokenizer_manager.py:1919-1943: spec_accept_rate = accepted/(verify·(D−1)),
    spec_accept_token_num / spec_draft_token_num (0.5.6-0.5.10) and spec_accept_histogram
    (0.5.10-0.5.15, index = drafts accepted in a step) pin 0.5.10 and give per-position rates."""
    rows = [
        {"text": "…", "meta_info": {"completion_tokens": 301, "spec_verify_ct": 100,
         "spec_accept_rate": 0.5, "spec_accept_length": 3.01, "spec_accept_token_num": 200,
         "spec_draft_token_num": 400, "spec_accept_histogram": [20, 20, 20, 20, 20]}},
        {"text": "…", "meta_info": {"completion_tokens": 101, "spec_verify_ct": 100,
         "spec_accept_rate": 0.0, "spec_accept_length": 1.01, "spec_accept_token_num": 0,
         "spec_draft_token_num": 400, "spec_accept_histogram": [100, 0, 0, 0, 0]}},
    ]  # fmt: skip
    p = tmp_path / "responses.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (run,) = parse_files([p])
    assert run.engine == "sglang==0.5.10"
    # P(a > i) per request, weighted by drafted tokens (400 each): (0.8+0)/2, (0.6+0)/2, …
    assert run.per_position == [0.4, 0.3, 0.2, 0.1]
    assert run.accept_rate.mean == pytest.approx(0.25)


def test_vllm_v0_gauges_and_counters(tmp_path):
    """V0 (≤0.9.x, 0.9.2 vllm/engine/metrics.py:203-222): gauges vllm:spec_decode_draft_acceptance_rate /
    _efficiency and counters vllm:spec_decode_num_{accepted,draft,emitted}_tokens_total; there
    is no drafts counter, so the rate is known and accept len is not; zero acceptance still shows."""
    reg = CollectorRegistry()
    Gauge("vllm:spec_decode_draft_acceptance_rate", "r", registry=reg).set(0.0)
    Gauge("vllm:spec_decode_efficiency", "e", registry=reg).set(0.25)
    Counter("vllm:spec_decode_num_accepted_tokens", "a", registry=reg).inc(0)
    Counter("vllm:spec_decode_num_draft_tokens", "d", registry=reg).inc(3000)
    Counter("vllm:spec_decode_num_emitted_tokens", "m", registry=reg).inc(1000)
    p = tmp_path / "v0.prom"
    p.write_bytes(generate_latest(reg))
    (run,) = parse_files([p])
    (w,) = run.windows
    assert w.accept_rate == 0.0 and w.accept_len is None
    assert ("vllm", "prometheus-v0") in run.formats
    assert "ZERO_ACCEPTANCE" in {f.code for f in analyze([run]).findings}


@pytest.mark.parametrize(
    ("keys", "label"),
    [
        ({"spec_accept_rate": 0.5, "spec_accept_length": 3.0}, "sglang>=0.5.3.post2"),
        ({"spec_accepted_drafts": 200, "spec_proposed_drafts": 400,
          "spec_accept_histogram": [20, 20, 20, 20, 20]}, "sglang>=0.5.11,<0.5.16"),
        ({"spec_accepted_drafts": 200, "spec_proposed_drafts": 400, "spec_num_correct_drafts": 200,
          "spec_num_proposed_drafts": 400}, "sglang>=0.5.12,<0.5.16"),
        ({"spec_num_correct_drafts": 200, "spec_num_proposed_drafts": 400,
          "spec_correct_drafts_histogram": [20, 20, 20, 20, 20]}, "sglang>=0.5.12"),
    ],
)  # fmt: skip
def test_meta_info_keys_date_the_release(tmp_path, keys, label):
    """meta_info keys per release (managers/tokenizer_manager.py; 0.5.10 :1919-1943):
    spec_accept_rate/length ≥0.5.3.post2; spec_accepted_drafts 0.5.11-0.5.15; spec_accept_histogram
    0.5.10-0.5.15; spec_num_correct_drafts ≥0.5.12 (0.5.23 keeps only the latter family)."""
    meta = {"completion_tokens": 301, "spec_verify_ct": 100, "spec_accept_length": 3.01, **keys}
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"meta_info": meta}))
    (run,) = parse_files([p])
    assert run.engine == label
    assert run.accept_len.mean == pytest.approx(keys.get("spec_accept_length", 3.01))


def test_lmdeploy_counters(tmp_path):
    """LMDeploy 0.18.0 lmdeploy/metrics/loggers.py:211-234: vLLM's counter names under
    `lmdeploy:`; accept len 1 + accepted / drafts from the totals since start."""
    reg = CollectorRegistry()
    lab = ["model_name"]
    for name, v in (("drafts", 400), ("draft_tokens", 1200), ("accepted_tokens", 0)):
        Counter(f"lmdeploy:spec_decode_num_{name}", "d", lab, registry=reg).labels("m").inc(v)
    p = tmp_path / "lmdeploy.prom"
    p.write_bytes(generate_latest(reg))
    (run,) = parse_files([p])
    assert run.engine == "lmdeploy" and run.accept_len.mean == 1.0 and run.scopes == {"lifetime": 1}
    assert "ZERO_ACCEPTANCE" in {f.code for f in analyze([run]).findings}


def _trtllm_scrape(tmp_path, per_position: bool, accepted_at: tuple[int, ...] = (70, 55, 42)):
    """TensorRT-LLM's /prometheus/metrics as its MetricsCollector writes it (NVIDIA/TensorRT-LLM
    PRs #12545, #12636; tensorrt_llm/metrics/collector.py): token counters from the iteration
    statistics, the last iteration's acceptance length, and per-position counters over finished
    requests, labelled token_position. 87 verify steps of 3 drafts each."""
    reg = CollectorRegistry()
    lab = {"model_name": "llama-3.1-8b", "engine_type": "trtllm"}
    counters = (("num_draft_tokens_total", 261), ("num_accepted_tokens_total", sum(accepted_at)))
    for name, value in counters:
        Counter(f"trtllm_spec_decode_{name}", "d", list(lab), registry=reg).labels(**lab).inc(value)
    Gauge("trtllm_spec_decode_acceptance_length", "d", list(lab), registry=reg).labels(**lab).set(
        2.5
    )
    if per_position:
        names = [*lab, "token_position"]
        drafted = Counter("trtllm_spec_decode_drafted_tokens_total", "d", names, registry=reg)
        accepted = Counter("trtllm_spec_decode_accepted_tokens_total", "d", names, registry=reg)
        for pos, n in enumerate(accepted_at):
            drafted.labels(**lab, token_position=str(pos)).inc(87)
            if n:  # the collector increments a position only when it accepted something
                accepted.labels(**lab, token_position=str(pos)).inc(n)
    p = tmp_path / "trtllm.prom"
    p.write_bytes(generate_latest(reg))
    return p


def test_trtllm_counters_with_per_position(tmp_path):
    (run,) = parse_files([_trtllm_scrape(tmp_path, per_position=True)])
    (w,) = run.windows
    assert run.engine_name == "tensorrt_llm" and run.scopes == {"lifetime": 1}
    assert w.accept_len == pytest.approx(1 + 167 / 87)
    assert w.accept_rate == pytest.approx(167 / 261)
    assert run.per_position == [round(n / 87, 4) for n in (70, 55, 42)]
    assert run.num_steps == 3
    assert not [f for f in analyze([run]).findings if f.severity >= 2]


def test_trtllm_token_counters_alone_give_the_rate_and_the_last_iteration(tmp_path):
    """Without finished requests' per-position counters there is no count of drafts: the rate
    comes from the token counters, the accept length from the gauge (one iteration's)."""
    (run,) = parse_files([_trtllm_scrape(tmp_path, per_position=False)])
    (w,) = run.windows
    assert w.accept_len == 2.5 and w.accept_rate == pytest.approx(167 / 261)
    assert run.scopes == {"interval": 1} and run.per_position == []


def test_trtllm_counters_at_zero_acceptance(tmp_path):
    (run,) = parse_files([_trtllm_scrape(tmp_path, per_position=True, accepted_at=(0, 0, 0))])
    assert run.accept_len.mean == 1.0
    assert "ZERO_ACCEPTANCE" in {f.code for f in analyze([run]).findings}


@pytest.mark.parametrize("suffix", ["", "_total"])
def test_llamacpp_counters_with_per_position(tmp_path, suffix):
    """llama.cpp's /metrics (ggml-org/llama.cpp PR #26389: vLLM's counter names under
    `llamacpp:`, written by the server's own exposition code, per-position labelled
    position), spelled as the PR's README lists them and with Prometheus' `_total`."""
    text = "".join(
        f"# HELP llamacpp:{name}{suffix} doc\n# TYPE llamacpp:{name}{suffix} counter\n"
        + "".join(f"llamacpp:{name}{suffix}{labels} {value}\n" for labels, value in samples)
        for name, samples in [
            ("prompt_tokens", [("", 20)]),
            ("spec_decode_num_drafts", [("", 87)]),
            ("spec_decode_num_draft_tokens", [("", 259)]),
            ("spec_decode_num_accepted_tokens", [("", 167)]),
            ("spec_decode_num_accepted_tokens_per_pos",
             [('{position="0"}', 70), ('{position="1"}', 55), ('{position="2"}', 42)]),
        ]
    )  # fmt: skip
    p = tmp_path / "llamacpp.prom"
    p.write_text(text)
    (run,) = parse_files([p])
    (w,) = run.windows
    assert run.engine_name == "llama.cpp"
    assert w.accept_len == pytest.approx(1 + 167 / 87) and w.accept_rate == pytest.approx(167 / 259)
    assert run.per_position == [round(n / 87, 4) for n in (70, 55, 42)]


def test_a_spec_counter_that_is_not_finite_is_not_read_as_a_count(tmp_path):
    """Found by fuzzing: `1e999` parses as infinity, and `int()` of it raised OverflowError. The
    exposition is refused as metrics (the note says why) and read as the text it is."""
    p = tmp_path / "vllm.prom"
    p.write_text('vllm:spec_decode_num_draft_tokens_total{engine="0"} 1e999\n')
    (run,) = parse_files([p])
    assert run.spec_windows == 0
    assert any("vllm:spec_decode_num_draft_tokens is inf" in n for n in run.notes)
