"""Log and statistics signatures of causes the field reported in 2026, each on lines shaped like
the thread's and on a healthy control: llama.cpp's ratio under full-length drafts, TensorRT-LLM's
accept length falling with the batch, vLLM's FP8 KV cache at scale 1.0."""

from __future__ import annotations

import json

import pytest

from kit.acceptance import analyze, parse_files

LLAMA = (
    "0.06.896.015 I slot print_timing: id  1 | task {t} | draft acceptance = {r:.5f} ({a:5d} "
    "accepted / {g:5d} generated), mean acceptance length = {al:5.2f}, acceptance rate per "
    "position = (0.805, 0.632, 0.483)"
)


def read(tmp_path, text: str, name: str = "server.log"):
    path = tmp_path / name
    path.write_text(text)
    (run,) = parse_files([path])
    return run, {f.code: f for f in analyze([run]).findings}


@pytest.mark.parametrize(
    "accepted, generated, al, found",
    [(51, 171, 4.90, True),  # b9235 at p-min 0: 0.30, rounds of ~13 drafts, ~3.9 accepted each
     (167, 259, 2.92, False),  # PR #24536's own line: 0.64, healthy
     (3, 171, 1.05, False)],  # a draft that accepts nothing: zero acceptance, not this
)  # fmt: skip
def test_llamacpp_ratio_low_from_full_length_drafts(tmp_path, accepted, generated, al, found):
    lines = [LLAMA.format(t=t, r=accepted / generated, a=accepted, g=generated, al=al)
             for t in range(4)]  # fmt: skip
    _, found_codes = read(tmp_path, "\n".join(lines) + "\n")
    assert ("LOW_RATIO_FROM_FULL_DRAFTS" in found_codes) is found
    if found:
        assert "--spec-draft-p-min 0.75" in found_codes["LOW_RATIO_FROM_FULL_DRAFTS"].fix


def test_llamacpp_lines_of_builds_before_the_mean_length(tmp_path):
    """`draft acceptance rate = …` (builds 9159-9222, ggml-org/llama.cpp #23544) and `draft
    acceptance = …` without a mean length (b9235, #25792): counts read, no figure invented."""
    text = (
        "[40455] draft acceptance rate = 0.63658 ( 1093 accepted /  1717 generated)\n"
        "draft acceptance = 0.29825 (   51 accepted /   171 generated)\n"
    )
    run, _ = read(tmp_path, text)
    assert run.unparsed_lines == 0 and run.spec_windows == 2
    assert (run.accepted, run.drafted) == (1144, 1888) and run.accept_len.count == 0


def trt_iterations(path, fall: bool) -> None:
    """`llm.get_stats()` entries as JSON lines: 3 drafts per request, batch 1 to 64."""
    rows = []
    for i in range(80):
        batch = 1 + (i % 8) * 9
        per_request = 1.8 - (1.1 * batch / 64 if fall else 0.0)
        accepted = round(per_request * batch)
        rows.append({"iter": i, "specDecodingStats": {
            "numDraftTokens": 3 * batch, "numAcceptedTokens": accepted,
            "numRequestsWithDraftTokens": batch,
            "acceptanceLength": (accepted + batch) / batch}})  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


@pytest.mark.parametrize("fall", [True, False])
def test_trtllm_accept_length_falling_with_the_batch(tmp_path, fall):
    path = tmp_path / "stats.jsonl"
    trt_iterations(path, fall)
    (run,) = parse_files([path])
    found = {f.code: f for f in analyze([run]).findings}
    assert run.engine_name == "tensorrt_llm"
    assert ("ACCEPT_LEN_FALLS_WITH_BATCH" in found) is fall
    if fall:
        assert "PR #10654" in found["ACCEPT_LEN_FALLS_WITH_BATCH"].source


VLLM = (
    "(APIServer pid=7) INFO 10-22 10:27:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean "
    "acceptance length: 1.79, Accepted throughput: 10.00 tokens/s, Drafted throughput: 40.00 "
    "tokens/s, Accepted: 237 tokens, Drafted: 900 tokens, Per-position acceptance rate: 0.500, "
    "0.200, 0.090, Avg Draft acceptance rate: 26.3%"
)
WARNING = (
    "(EngineCore_DP0 pid=8) WARNING 10-22 10:25:40 [kv_cache.py:165] Using KV cache scaling "
    "factor 1.0 for fp8_e4m3. If this is unintended, verify that k/v_scale scaling factors are "
    "properly set in the checkpoint."
)


@pytest.mark.parametrize("warned", [True, False])
def test_vllm_warns_of_an_fp8_kv_cache_at_scale_one(tmp_path, warned):
    lines = ([WARNING] if warned else []) + [VLLM.format(s=s) for s in range(3)]
    _, found = read(tmp_path, "\n".join(lines) + "\n")
    assert ("KV_CACHE_SCALE_DEFAULTED" in found) is warned
    if warned:
        assert "line 1:" in found["KV_CACHE_SCALE_DEFAULTED"].evidence[0]
