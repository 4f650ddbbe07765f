"""Every format users paste, read by field name to the figure it states, with or without an engine
named: bare SGLang fragments, DP-attention lines as users trim them, vLLM per-request metrics, the
output of vLLM's spec_decode.py example, vLLM lines with fields in another order, V0 lines,
LMDeploy, llama.cpp and TensorRT-LLM. Each is read healthy and at zero acceptance; zero acceptance
is flagged exactly where every figure is at the floor."""

from __future__ import annotations

import json

import pytest

from kit.acceptance import analyze, parse_files
from kit.cli import main

CRITICAL = {"ZERO_ACCEPTANCE", "NEAR_ZERO_ACCEPTANCE"}


def read(tmp_path, text: str, name: str = "pasted.log", **kw):
    p = tmp_path / name
    p.write_text(text)
    (run,) = parse_files([p], **kw)
    return run, {f.code for f in analyze([run]).findings}


@pytest.mark.parametrize("engine", [None, "sglang"])
def test_bare_fragment_without_its_prefix(tmp_path, engine):
    """`accept len: …, accept rate: …` alone. 1.00 / 0.20 fits accept_len / (num_steps + 1)
    (0.5.3.post2 managers/scheduler_metrics_mixin.py:257-272) and accept_len / D (0.5.6 :276-294)
    with n = 5: both readings are reported, neither is picked; zero acceptance either way."""
    run, codes = read(tmp_path, "accept len: 1.00, accept rate: 0.20\n", engine=engine)
    assert run.accept_len.mean == 1.0 and run.accept_rate.mean == 0.2
    assert [r["versions"] for r in run.readings] == [">=0.5.3.post2,<0.5.6", ">=0.5.6,<0.5.11"]
    assert {r["denominator"] for r in run.readings} == {5}
    assert run.formula is None and run.engine == "sglang"
    assert "ZERO_ACCEPTANCE" in codes


def test_bare_fragment_whose_rate_only_one_release_prints(tmp_path):
    """3.42 / 0.61: only (accept_len − 1) / (D − 1) with D = 5 gives 0.61 (0.5.11
    observability/scheduler_metrics_mixin.py:528-547), so the text itself dates it ≥ 0.5.11."""
    run, codes = read(tmp_path, "accept len: 3.42, accept rate: 0.61\n", engine="sglang")
    assert run.accept_len.mean == 3.42
    assert run.engine == "sglang>=0.5.11" and run.num_draft_tokens == 5
    assert not codes & CRITICAL


DP_LINES = [
    "[DP0 TP0] Decode batch, accept len: {al:.2f}, accept rate: {ar:.2f}, cuda graph: True",
    "[2026-01-05 08:00:{s:02d} DP3 TP24] Decode batch, accept len: {al:.2f}, accept rate: "
    "{ar:.2f}, cuda graph: False",
    "[DP12 TP0] Decode batch, #running-req: {s}, accept len: {al:.2f}, accept rate: {ar:.2f}, "
    "cuda graph: True, gen throughput (token/s): 1{s}.50",
]


@pytest.mark.parametrize("al", [1.0, 2.83])
def test_dp_attention_lines_as_users_trim_them(tmp_path, al):
    """`[DP0 TP0] Decode batch, accept len: …, accept rate: …, cuda graph: …` (no timestamp,
    no #queue-req): the comma header dates it ≥ 0.5.5 (0.5.6 scheduler_metrics_mixin.py
    :270-307); the rate at D = 4 (al / 4) reads as 0.5.6-0.5.10's accept_len / D."""
    lines = [t.format(al=al, ar=al / 4, s=10 + i) for i, t in enumerate(DP_LINES * 3)]
    run, codes = read(tmp_path, "\n".join(lines) + "\n", engine="sglang")
    assert run.window_count == 9 and run.unparsed_lines == 0
    assert run.accept_len.mean == pytest.approx(al)
    assert str(run.release_range).startswith(">=0.5.5")
    assert (codes & CRITICAL == {"ZERO_ACCEPTANCE"}) is (al == 1.0)


def test_a_line_cut_mid_field_is_not_a_trimmed_line(tmp_path):
    run, _ = read(tmp_path, "[DP0 TP0] Decode batch, accept len: 1.00, accept rate: 0.2\n")
    assert run.accept_len.count == 0 and run.unparsed_lines == 1


def per_request(hist: list[int]) -> dict:
    """vLLM 0.33.0 RequestSpecDecodeMetrics.to_dict (v1/metrics/stats.py:397-422)."""
    steps, accepted = sum(hist), sum(j * n for j, n in enumerate(hist))
    return {
        "mean_acceptance_length": 1.0 + accepted / steps,
        "draft_acceptance_rate": accepted / (steps * (len(hist) - 1)),
        "acceptance_histogram": hist,
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": steps * (len(hist) - 1),
        "num_spec_tokens": len(hist) - 1,
    }


@pytest.mark.parametrize("hist", [[40, 0, 0, 0], [10, 10, 10, 10]])
def test_vllm_per_request_metrics_pasted_and_as_a_response(tmp_path, hist):
    """`"speculative_decoding": {…}` pasted from a completion, and the whole JSON response of
    /v1/completions: accept len 1 + accepted / steps, position i accepted in Σ_{j>i} hist[j]."""
    obj = per_request(hist)
    pasted, codes = read(tmp_path, f'"speculative_decoding": {json.dumps(obj)}\n')
    response = {
        "id": "cmpl-9",
        "choices": [{"text": "x"}],
        "metrics": {"speculative_decoding": obj},
    }
    answer, _ = read(tmp_path, json.dumps(response), name="response.json")
    for run in (pasted, answer):
        assert run.accept_len.mean == pytest.approx(obj["mean_acceptance_length"])
        assert run.windows[0].kind == "vllm_request"
    steps = sum(hist)
    assert pasted.per_position == pytest.approx([sum(hist[i + 1 :]) / steps for i in range(3)])
    assert (codes & CRITICAL == {"ZERO_ACCEPTANCE"}) is (hist[0] == steps)


@pytest.mark.parametrize("detailed", [False, True])
def test_vllm_per_request_metrics_in_a_saved_stream(tmp_path, detailed):
    """A streamed chat completion saved as it came (vllm PR #48915: with
    --per-request-spec-decode-metrics the final usage chunk, `choices: []`, carries
    `metrics.speculative_decoding`; `detailed` adds the per-step lists, 0.33.0
    v1/metrics/stats.py:417-419). The token chunks and `[DONE]` are no acceptance lines."""
    obj = per_request([30, 5, 3, 5])
    if detailed:
        obj |= {"per_step_accepted": [0] * 30 + [1] * 5 + [2] * 3 + [3] * 5,
                "per_step_drafted": [3] * 43}  # fmt: skip
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    text = "".join(
        f"data: {json.dumps(chunk | {'choices': [{'index': 0, 'delta': {'content': w}}]})}\n\n"
        for w in ("The", " answer")
    )
    final = chunk | {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 86},
                     "metrics": {"speculative_decoding": obj}}  # fmt: skip
    text += f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n"
    run, _ = read(tmp_path, text, name="stream.txt")
    assert run.window_count == 1 and run.unparsed_lines == 0
    assert run.accept_len.mean == pytest.approx(obj["mean_acceptance_length"])
    assert run.per_position == pytest.approx([13 / 43, 8 / 43, 5 / 43], abs=1e-4)


def example_output(drafts: int, accepted_per_pos: list[int]) -> str:
    """What vllm 0.18.0 examples/offline_inference/spec_decode.py:207-219 prints."""
    k, accepted = len(accepted_per_pos), sum(accepted_per_pos)
    lines = ["-" * 50, "total_num_output_tokens: 25600", f"num_drafts: {drafts}",
             f"num_draft_tokens: {drafts * k}", f"num_accepted_tokens: {accepted}",
             f"mean acceptance length: {1 + accepted / drafts:.2f}", "-" * 50]  # fmt: skip
    lines += [f"acceptance at token {i}: {n / drafts:.2f}" for i, n in enumerate(accepted_per_pos)]
    return "INFO 06-01 10:00:00 [llm.py:300] Processed prompts\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize("per_pos", [[0, 0, 0], [6144, 3768, 2048]])
def test_vllm_spec_decode_example_output(tmp_path, per_pos):
    run, codes = read(tmp_path, example_output(8192, per_pos))
    assert run.unparsed_lines == 0 and run.window_count == 1
    assert run.accept_len.mean == pytest.approx(round(1 + sum(per_pos) / 8192, 2))
    assert run.per_position == pytest.approx([round(n / 8192, 2) for n in per_pos])
    assert run.scopes == {"run": 1}
    assert (codes & CRITICAL == {"ZERO_ACCEPTANCE"}) is (sum(per_pos) == 0)


def test_vllm_fields_in_another_order_and_an_unknown_call_line(tmp_path):
    """The 0.10.2+ fields (v1/spec_decode/metrics.py:120 in 0.24-0.33) in another order, logged
    from metrics.py:105, a line no release logs from: read by field, the family dates it ≥ 0.10.2
    and the call line, a hint only, raises no conflict."""
    line = (
        "(APIServer pid=4242) INFO 10-22 10:27:{s:02d} [metrics.py:105] SpecDecoding metrics: "
        "Accepted: {a} tokens, Drafted: 3000 tokens, Mean acceptance length: {al:.2f}, Avg Draft "
        "acceptance rate: {pct:.1f}%, Per-position acceptance rate: {pp}, Accepted throughput: "
        "{atp:.2f} tokens/s, Drafted throughput: 300.00 tokens/s"
    )
    for a, pp in ((0, "0.000, 0.000, 0.000"), (1536, "0.743, 0.502, 0.291")):
        text = "\n".join(
            line.format(s=s, a=a, al=1 + a / 1000, pct=a / 30, pp=pp, atp=a / 10) for s in (8, 18)
        )
        run, codes = read(tmp_path, text + "\n", engine="vllm")
        assert run.accept_len.mean == pytest.approx(1 + a / 1000, abs=0.005)
        assert run.engine == "vllm>=0.10.2" and not run.conflicts
        assert (codes & CRITICAL == {"ZERO_ACCEPTANCE"}) is (a == 0)


def test_vllm_call_line_of_another_release_is_ignored_not_a_conflict(tmp_path):
    """metrics.py:87 is where 0.9.2-0.10.1.1 log the 0.8.5 family; a 0.10.2-family line from :87
    comes from a build between releases: the family's range stands, no conflict."""
    line = (
        "INFO 10-22 10:27:58 [metrics.py:87] SpecDecoding metrics: Mean acceptance length: 2.54, "
        "Accepted throughput: 153.60 tokens/s, Drafted throughput: 300.00 tokens/s, Accepted: 1536 "
        "tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.743, 0.502, 0.291, Avg "
        "Draft acceptance rate: 51.2%\n"
    )
    run, _ = read(tmp_path, line)
    assert run.engine == "vllm>=0.10.2" and not run.conflicts


V0 = (
    "INFO 06-10 12:00:{s:02d} metrics.py:439] Speculative metrics: Draft acceptance rate: {r:.3f}, "
    "System efficiency: {eff:.3f}, Number of speculative tokens: {k}, Number of accepted tokens: "
    "{acc}, Number of draft tokens: {dr}, Number of emitted tokens: {em}."
)


def test_vllm_v0_accept_len_is_emitted_tokens_per_verify_step(tmp_path):
    """The issue's V0 line (0.9.2 vllm/engine/metrics.py:454-463): one verify step of k = 5
    drafts, 1 emitted token, 1 accepted (after a rejection: V0 counts it anyway,
    spec_decode/metrics.py:39-46). Accept len = emitted · k / draft tokens = 1.00, and system
    efficiency 1 / (k + 1) = 0.167 agrees; zero acceptance."""
    text = V0.format(s=0, r=0.2, eff=0.167, k=5, acc=1, dr=5, em=1) + "\n"
    run, codes = read(tmp_path, text)
    assert run.accept_len.mean == 1.0
    assert run.accept_len.mean == pytest.approx(0.167 * (5 + 1), abs=0.005)
    assert "ZERO_ACCEPTANCE" in codes
    assert (
        "accepted anywhere" in analyze([run]).to_dict()["runs"][0]["interpretation"]["rate_formula"]
    )


def test_vllm_v0_healthy_figures_agree_with_system_efficiency(tmp_path):
    """1000 verify steps of k = 4: 2600 emitted (1.6 drafts accepted per step), 1900 accepted
    anywhere; efficiency 2600 / 5000 = 0.52 → accept len 2.6 = 0.52 · 5."""
    text = V0.format(s=1, r=0.475, eff=0.52, k=4, acc=1900, dr=4000, em=2600) + "\n"
    run, codes = read(tmp_path, text)
    assert run.accept_len.mean == pytest.approx(2.6)
    assert run.accept_len.mean == pytest.approx(0.52 * 5)
    assert not codes & CRITICAL


LMDEPLOY = (
    "[2026-02-11 09:15:{s:02d} DP0] Avg thr (in/out): 120.5 / {g:.1f} tokens/s, Server "
    "(succeeded/failed/routed/waiting): 12 / 0 / 12 / 0, Engine (running/waiting): 4 / 0, KV cache: "
    "12.3%, SpecDecoding metrics: Draft acceptance rate: {pct:.2f}%, Mean acceptance length: "
    "{al:.2f}, Accepted: {a} tokens, Drafted: 3000 tokens, Per-position acceptance rate: {pp}"
)


@pytest.mark.parametrize("a", [0, 1536])
def test_lmdeploy_stats_line(tmp_path, a):
    """lmdeploy 0.18.0 lmdeploy/metrics/loggers.py:75-95 appended to the `Avg thr` line
    (:110-128): vLLM's field names with a two-decimal rate, one interval per line."""
    pp = "0.000, 0.000, 0.000" if a == 0 else "0.743, 0.502, 0.291"
    text = LMDEPLOY.format(s=2, g=88.2, pct=a / 30, al=1 + a / 1000, a=a, pp=pp) + "\n"
    run, codes = read(tmp_path, text, engine="lmdeploy")
    assert run.engine == "lmdeploy" and run.accept_len.mean == pytest.approx(1 + a / 1000, 0.01)
    assert run.throughput.mean == 88.2 and run.accepted == a
    assert (codes & CRITICAL == {"ZERO_ACCEPTANCE"}) is (a == 0)


def llama_lines(accepted: int, generated: int, steps: int, pp: list[float]) -> str:
    """llama.cpp (commit 001d906a): the per-request line of PR #24536 and the cumulative
    `statistics draft-eagle3:` line of common/speculative.cpp common_speculative_print_stats."""
    rates = ", ".join(f"{p:.3f}" for p in pp)
    return (
        f"0.16.519.195 I slot print_timing: id  0 | task 42 | draft acceptance = "
        f"{accepted / generated:0.5f} ({accepted:5d} accepted / {generated:5d} generated), mean "
        f"acceptance length = {1 + accepted / steps:5.2f}, acceptance rate per position = ({rates})\n"
        f"0.16.519.216 I statistics     draft-eagle3: #calls(b,g,a) =    2 {steps:6d} {steps:6d}, "
        f"#gen drafts = {steps:6d}, #acc drafts = {accepted // 2:5d}, #gen tokens = {generated:6d}, "
        f"#acc tokens = {accepted:5d}, #mean acc len = {1 + accepted / steps:.2f}, #acc rate/pos = "
        f"({rates}), dur(b,g,a) = 0.004, 808.560, 0.264 ms\n"
    )


@pytest.mark.parametrize("accepted", [0, 257])
def test_llama_cpp_eagle3_lines(tmp_path, accepted):
    text = llama_lines(accepted, 388, 97, [accepted / 388 * 1.2, accepted / 388 * 0.8])
    run, codes = read(tmp_path, text)
    assert run.engine == "llama.cpp" and run.window_count == 2
    assert run.accept_len.min == pytest.approx(1 + accepted / 97, abs=0.005)
    assert run.scopes == {"request": 1, "lifetime": 1}
    assert (codes & CRITICAL == {"ZERO_ACCEPTANCE"}) is (accepted == 0)


def test_llama_cpp_older_line_with_its_trace_line(tmp_path):
    """Before PR #24536: `…, mean len = L` and `acc per pos = (…)` on a trace line of its own."""
    text = (
        "0.22.856.327 I slot print_timing: id  0 | task 0 | draft acceptance = 0.76049 (  308 "
        "accepted /   405 generated), mean len =  2.52\n"
        "0.22.856.330 T slot print_timing: id  0 | task 0 |      acc per pos = (0.847, 0.670)\n"
    )
    run, _ = read(tmp_path, text)
    assert run.accept_len.mean == 2.52 and run.per_position == [0.847, 0.67]
    assert run.unparsed_lines == 0


def trt_stats(iterations: list[tuple[int, int, int]]) -> list[dict]:
    """`llm.get_stats()` entries (TensorRT-LLM jsonSerialization.cpp:34-43, commit 086f6921)."""
    out = []
    for i, (drafted, accepted, reqs) in enumerate(iterations):
        spec = {"numDraftTokens": drafted, "numAcceptedTokens": accepted,
                "numRequestsWithDraftTokens": reqs,
                "acceptanceLength": (accepted + reqs) / reqs if reqs else 0.0,
                "iterLatencyMS": 3.0, "draftOverhead": 0.1}  # fmt: skip
        out.append({"iter": i, "iterLatencyMS": 20.0, "numActiveRequests": 8,
                    "specDecodingStats": spec})  # fmt: skip
    return out


@pytest.mark.parametrize("accepted", [0, 12])
def test_tensorrt_llm_iteration_stats(tmp_path, accepted):
    stats = trt_stats([(0, 0, 0), (24, accepted, 8), (24, accepted, 8)])
    run, codes = read(tmp_path, json.dumps(stats), name="stats.json")
    assert run.engine == "tensorrt_llm" and run.window_count == 2 and run.other_lines == 1
    assert run.accept_len.mean == pytest.approx((accepted + 8) / 8)
    assert (codes & CRITICAL == {"ZERO_ACCEPTANCE"}) is (accepted == 0)
    lines, _ = read(tmp_path, "\n".join(json.dumps(s) for s in stats) + "\n", name="stats.log")
    assert lines.window_count == 2 and lines.accept_len.mean == run.accept_len.mean


def test_an_acceptance_line_no_reader_knows_is_shown_not_skipped(tmp_path):
    run, codes = read(tmp_path, "[2026-01-05 08:00:00] spec: acceptance ratio is 0.42 today\n")
    assert run.unparsed_reasons == {"acceptance figure not understood": 1}
    assert "acceptance ratio" in run.unparsed_examples[0]
    assert {"NO_ACCEPTANCE_DATA", "UNPARSED_LINES"} <= codes


def test_a_name_alone_that_contradicts_the_format_is_a_conflict(tmp_path, capsys):
    p = tmp_path / "v.log"
    p.write_text(V0.format(s=0, r=0.2, eff=0.167, k=5, acc=1, dr=5, em=1) + "\n")
    assert main(["acceptance", str(p), "--engine", "sglang", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "ENGINE_FORMAT_CONFLICT" in {f["code"] for f in out["findings"]}


def test_an_unknown_engine_name_is_one_error(tmp_path, capsys):
    p = tmp_path / "x.log"
    p.write_text("accept len: 2.00\n")
    assert main(["acceptance", str(p), "--engine", "trtllm"]) == 2
    assert "unknown engine 'trtllm'" in capsys.readouterr().err
    # LMDeploy is a modelled engine: its release is read like any other
    assert main(["acceptance", str(p), "--engine", "lmdeploy==0.18.0"]) == 0
    assert main(["acceptance", str(p), "--engine", "lmdeploy==9.0.0"]) == 2
    assert "outside the supported range" in capsys.readouterr().err
