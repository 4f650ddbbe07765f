"""vLLM spec-decode log families (0.9.2-0.33.0 vllm/v1/spec_decode/metrics.py), rendered with the
release's `%`-format, and `vllm bench serve` result blocks."""

from __future__ import annotations

import pytest

from kit.acceptance import analyze, parse_files
from tests.conftest import DATA

V0 = (
    "Speculative metrics: Draft acceptance rate: {:.3f}, System efficiency: {:.3f}, Number of "
    "speculative tokens: {}, Number of accepted tokens: {}, Number of draft tokens: {}, Number of "
    "emitted tokens: {}."
)
V1_083 = (
    "SpecDecoding metrics: Draft acceptance rate: %.1f%%, Accepted: %d tokens, Drafted: %d tokens"
)
V1_085 = (
    "SpecDecoding metrics: Draft acceptance rate: %.1f%%, Mean acceptance length: %.2f, "
    "Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance rate: %s"
)
V1_0102 = (
    "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, "
    "Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, Per-position "
    "acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"
)
# 1000 drafts of k=3 tokens, 1536 accepted: 743 / 502 / 291 at positions 0, 1, 2.
POS = ", ".join(f"{p:.3f}" for p in (0.743, 0.502, 0.291))


def write(tmp_path, text, name="vllm.log"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_v0_speculative_metrics(tmp_path):
    """V0 engine (≤0.9.x; 0.9.2 vllm/engine/metrics.py:454-463): accept len = emitted tokens ·
    k / draft tokens (spec_decode/metrics.py:168-213): 3000 draft tokens of k = 3 are 1000 verify
    steps that emitted 2536 tokens."""
    line = "INFO 10-22 10:27:58 metrics.py:475] " + V0.format(0.512, 0.634, 3, 1536, 3000, 2536)
    (run,) = parse_files([write(tmp_path, line + "\n")])
    assert run.engine_name == "vllm"
    assert run.accept_len.mean == pytest.approx(2536 * 3 / 3000)
    assert run.accept_rate.mean == pytest.approx(0.512)
    assert run.engine == "vllm<0.10.0"


def test_v1_083_family(tmp_path):
    """vllm 0.8.3-0.8.4 v1/spec_decode/metrics.py: rate and counts only, no mean length."""
    line = "INFO 04-10 10:27:58 [metrics.py:70] " + V1_083 % (51.2, 1536, 3000)
    (run,) = parse_files([write(tmp_path, line + "\n")])
    assert run.accept_rate.mean == pytest.approx(0.512)
    assert run.accept_len.count == 0
    assert run.windows[0].accepted == 1536 and run.windows[0].drafted == 3000
    assert run.engine == "vllm>=0.8.3,<0.8.5"


@pytest.mark.parametrize(
    ("call_line", "label"), [(82, "vllm>=0.8.5,<0.9.2"), (87, "vllm>=0.9.2,<0.10.2")]
)
def test_v1_085_family_with_per_position(tmp_path, call_line, label):
    """vllm 0.8.5 v1/spec_decode/metrics.py:82 and 0.9.2-0.10.1.1 :87: per-position rates and
    mean acceptance length; the call line pins the release."""
    line = f"INFO 06-01 10:27:58 [metrics.py:{call_line}] " + V1_085 % (51.2, 2.54, 1536, 3000, POS)
    (run,) = parse_files([write(tmp_path, line + "\n")])
    assert run.per_position == [0.743, 0.502, 0.291]
    assert run.accept_len.mean == pytest.approx(2.54)
    assert run.engine == label


@pytest.mark.parametrize(
    ("call_line", "label"),
    [
        (96, "vllm>=0.10.2,<0.11.1"),
        (100, "vllm>=0.11.1,<0.19.0"),
        (101, "vllm>=0.19.0,<0.24.0"),
        (120, "vllm>=0.24.0"),
    ],
)
def test_v1_0102_family_with_apiserver_prefix(tmp_path, call_line, label):
    """vllm 0.10.2-0.33.0 v1/spec_decode/metrics.py:96 (0.10.2, 0.11.0), :100 (0.11.1-0.18), :101
    (0.19-0.23), :120 (0.24-0.33), with the `(APIServer pid=N) ` prefix; two windows 10 s
    apart."""
    lines = [
        f"(APIServer pid=4242) INFO 10-22 10:27:{s:02d} [metrics.py:{call_line}] "
        + V1_0102 % (2.54, 153.6, 300.0, 1536, 3000, POS, 51.2)
        for s in (38, 48)
    ]
    (run,) = parse_files([write(tmp_path, "\n".join(lines) + "\n")])
    assert run.unparsed_lines == 0
    assert run.window_count == 2
    assert run.windows[1].t - run.windows[0].t == 10
    assert run.accept_rate.mean == pytest.approx(0.512)
    assert run.per_position == [0.743, 0.502, 0.291]
    assert run.engine == label


def test_vllm_zero_acceptance(tmp_path):
    """vllm 0.11.0 metrics.py:96: zero acceptance prints mean length 1.00 and 0.0 %."""
    zero = ", ".join("0.000" for _ in range(3))
    line = "INFO 10-22 10:27:58 [metrics.py:96] " + V1_0102 % (1.0, 0.0, 300.0, 0, 3000, zero, 0.0)
    report = analyze(parse_files([write(tmp_path, (line + "\n") * 4)]), expected_step0=0.745)
    codes = {f.code for f in report.findings}
    assert {"ZERO_ACCEPTANCE", "LOW_FIRST_POSITION"} <= codes


def bench_block(per_pos: list[float]) -> str:
    """`vllm bench serve` result block, printed with serve.py's own formats (0.33
    vllm/benchmarks/serve.py L1473-1496: "{:<40} {:<10.2f}" / "{:<40} {:<10}")."""
    out = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]
    out.append("{:<40} {:<10.2f}".format("Output token throughput (tok/s):", 71.89))
    out.append("{s:{c}^{n}}".format(s="Speculative Decoding", n=50, c="-"))
    out.append("{:<40} {:<10.2f}".format("Acceptance rate (%):", 44.33))
    out.append("{:<40} {:<10.2f}".format("Acceptance length:", 4.10))
    out.append("{:<40} {:<10}".format("Drafts:", 499545))
    out.append("{:<40} {:<10}".format("Draft tokens:", 3496815))
    out.append("{:<40} {:<10}".format("Accepted tokens:", 1550240))
    out.append("Per-position acceptance (%):")
    for i, rate in enumerate(per_pos):
        out.append("{:<40} {:<10.2f}".format(f"  Position {i}:", rate * 100))
    out.append("=" * 50)
    return "\n".join(out) + "\n"


def test_bench_serve_block(tmp_path):
    """vllm 0.33 vllm/benchmarks/serve.py L1473-1496: the Speculative Decoding section."""
    (run,) = parse_files([write(tmp_path, "some preamble\n" + bench_block([0.7434, 0.58, 0.491]))])
    (w,) = run.windows
    assert w.kind == "bench"
    assert w.accept_len == pytest.approx(4.10)
    assert w.accept_rate == pytest.approx(0.4433)
    assert w.throughput == pytest.approx(71.89)
    assert run.per_position == [0.7434, 0.58, 0.491]
    assert run.unparsed_lines == 0 and run.other_lines == 1  # the preamble holds no figure


def test_per_position_cliff_is_acceptance_decay(tmp_path):
    """vllm 0.11.0 metrics.py:96 per-position rates 0.74, 0.60, 0.05: position 2 keeps 8 % of
    position 1 (geometric fall-off would keep ~80 %), reported as ACCEPTANCE_DECAY."""
    pos = "0.740, 0.600, 0.050"
    line = "INFO 10-22 10:27:58 [metrics.py:96] " + V1_0102 % (
        2.39,
        139.0,
        300.0,
        1390,
        3000,
        pos,
        46.3,
    )
    (finding,) = [f for f in analyze(parse_files([write(tmp_path, line + "\n")])).findings]
    assert finding.code == "ACCEPTANCE_DECAY" and finding.data["position"] == 1


SERVER_LOG = DATA / "samples" / "vllm-0.32.0-server.log"


def test_a_real_server_log_has_no_unread_lines(tmp_path):
    """vLLM 0.32.0's server log as its loggers print it (logger.py:28-33 prefix, the logo of
    api_utils.py:325-347, tqdm bars, uvicorn access lines, the request logger, a scheduler warning
    that speaks of acceptance rates, metrics.py:120 SpecDecoding lines): every line is read or
    holds no figure, so no UNPARSED_LINES; the 8 metrics lines are the windows."""
    (run,) = parse_files([SERVER_LOG])
    assert run.window_count == 8 and run.unparsed_lines == 0, run.unparsed_reasons
    text = [x for x in SERVER_LOG.read_text().splitlines() if x.strip()]  # blank lines: nothing
    assert run.other_lines == len(text) - 8
    assert run.formats == {("vllm", "v1-0.10.2", 120): 8}
    assert "UNPARSED_LINES" not in {f.code for f in analyze([run]).findings}
    spec = next(x for x in SERVER_LOG.read_text().splitlines() if "SpecDecoding" in x)
    garbled = tmp_path / "garbled.log"
    garbled.write_text(SERVER_LOG.read_text() + spec[:190] + "\n")
    (cut,) = parse_files([garbled])
    assert cut.unparsed_lines == 1 and cut.window_count == 8
    (f,) = [f for f in analyze([cut]).findings if f.code == "UNPARSED_LINES"]
    assert f.title.startswith("1 line of ")
