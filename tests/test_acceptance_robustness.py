"""Bad input never crashes a parse: garbage, binary data, cut-off lines and two engines' lines in
one file are counted as unparsed and reported."""

from __future__ import annotations

import random

from kit.acceptance import analyze, parse_files

SGL = (
    "[2026-03-02 09:46:21 TP0] Decode batch, #running-req: 1, #token: 508, token usage: 0.00, "
    "accept len: 2.00, accept rate: 0.40, cuda graph: False, gen throughput (token/s): 50.00, "
    "#queue-req: 0\n"
)
VLLM = (
    "(APIServer pid=7) INFO 10-22 10:27:58 [metrics.py:96] SpecDecoding metrics: Mean acceptance "
    "length: 2.54, Accepted throughput: 153.60 tokens/s, Drafted throughput: 300.00 tokens/s, "
    "Accepted: 1536 tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.743, 0.502, "
    "0.291, Avg Draft acceptance rate: 51.2%\n"
)


def test_garbage_text(tmp_path):
    """Random words: no window, a NO_ACCEPTANCE_DATA finding. A line that names acceptance with a
    figure after it is unparsed; one with neither acceptance nor a decode header holds nothing
    to read and is not."""
    rng = random.Random(0)
    words = ["accept", "len:", "Decode", "rate", "::", "[", "]", "batch", "%", "1.0"]
    lines = [" ".join(rng.choices(words, k=8)) for _ in range(200)]
    (run,) = parse_files([write(tmp_path / "garbage.log", lines)])
    assert run.window_count == 0 and 50 < run.unparsed_lines < 200
    assert run.unparsed_lines + run.other_lines == 200
    codes = {f.code for f in analyze([run]).findings}
    assert {"NO_ACCEPTANCE_DATA", "UNPARSED_LINES"} <= codes
    named = [x for x in lines if "1.0" in x.partition("accept")[2] and "Decode" not in x]
    plain = [x for x in lines if "accept" not in x and "Decode" not in x]
    assert len(named) > 10 and len(plain) > 10
    (run,) = parse_files([write(tmp_path / "named.log", named)])
    assert run.unparsed_lines == len(named)
    (run,) = parse_files([write(tmp_path / "plain.log", plain)])
    assert run.unparsed_lines == 0 and run.other_lines == len(plain)


def write(path, lines: list[str]):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_binary_data(tmp_path):
    """Random bytes (NULs, invalid UTF-8, a 200 kB stretch with no newline) around a good line."""
    rng = random.Random(1)
    blob = bytes(rng.randrange(256) for _ in range(4096)).translate(None, b"\r\n")
    p = tmp_path / "binary.log"
    p.write_bytes(blob + b"\n" + SGL.encode() + b"\x00" * 200_000 + b"\n" + blob[:50] + b"\n")
    (run,) = parse_files([p])
    assert run.accept_len.count == 1
    assert run.unparsed_lines == 3
    assert run.unparsed_reasons["over-long line"] == 1


def test_truncated_lines(tmp_path):
    """Lines cut anywhere (no `#queue-req`, half a number, half a vLLM line) are unparsed."""
    lines = [SGL[:cut] + "\n" for cut in (60, 120, 150, 180)] + [VLLM[:150] + "\n"]
    p = tmp_path / "cut.log"
    p.write_text(SGL + "".join(lines) + SGL)
    (run,) = parse_files([p])
    assert run.accept_len.count == 2
    assert run.unparsed_lines == 5


def test_two_engines_in_one_file(tmp_path):
    """SGLang first: the vLLM lines are counted as unparsed, the SGLang ones read."""
    p = tmp_path / "mixed.log"
    p.write_text(SGL * 3 + VLLM * 2 + SGL)
    (run,) = parse_files([p])
    assert run.engine_name == "sglang"
    assert run.accept_len.count == 4
    assert run.unparsed_lines == 2
    assert run.unparsed_reasons["vllm line in a sglang log"] == 2


def test_empty_and_broken_json(tmp_path):
    """An empty file and a JSON file cut in half: no crash, nothing read, the rest reported."""
    empty = tmp_path / "empty.log"
    empty.write_text("")
    cut = tmp_path / "cut.json"
    cut.write_text('{"internal_states": [{"avg_spec_accept_length": 1.0}], "vers')
    e, c = parse_files([empty, cut])
    assert e.window_count == 0 and e.unparsed_lines == 0
    assert c.window_count == 0 and c.unparsed_lines == 1


def test_long_runs_keep_exact_statistics_in_a_thinned_series(monkeypatch):
    """Past MAX_WINDOWS the series keeps every stride-th window; counts, mean, median stay exact."""
    from kit.acceptance import model

    monkeypatch.setattr(model, "MAX_WINDOWS", 10)
    run = model.LogRun(source="x")
    for i in range(100):
        run.add(model.Window(accept_len=1 + (i % 5) / 4, line_no=i + 1))
    assert run.window_count == 100 and run.accept_len.count == 100
    assert len(run.windows) < 10 and run.stride == 16
    assert [w.line_no for w in run.windows] == list(range(1, 101, 16))
    assert run.accept_len.mean == 1.5 and run.accept_len.p50 == 1.5
