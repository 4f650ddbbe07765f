"""SGLang decode-log lines rendered from each release's format (sources
in each test) are read, and the format alone narrows the release."""

from __future__ import annotations

import pytest

from kit.acceptance import parse_files

HEAD = "#running-req: 1, #token: 340, token usage: 0.00"
TAIL = "gen throughput (token/s): 188.68, #queue-req: 0"

# (release the format belongs to, engine file:line, rendered line, inferred engine label)
FORMATS = [
    ("0.4.4.post2-0.4.5", "0.4.4.post2 managers/scheduler.py:1079-1087",
     f"[2025-10-22 10:27:58 TP0] Decode batch. {HEAD}, accept len: 2.05, {TAIL}, ",
     "sglang>=0.4.4.post2,<0.4.6"),
    ("0.4.6.post1", "0.4.6.post1 managers/scheduler.py:1044-1068",
     f"[2025-10-22 10:27:58 TP0] Decode batch. {HEAD}, accept len: 2.05, {TAIL}",
     "sglang==0.4.6.post1"),
    ("0.4.7-0.4.9", "0.4.8 managers/scheduler.py:1316-1342",
     f"[2025-10-22 10:27:58] Decode batch. {HEAD}, accept len: 2.05, cuda graph: True, {TAIL}",
     "sglang>=0.4.7,<0.4.9.post1"),
    ("0.4.9.postX-0.5.3.post1", "0.4.10 managers/scheduler_metrics_mixin.py:170-191",
     f"[2025-10-22 10:27:58] Decode batch. {HEAD}, accept len: 2.05, cuda graph: True, {TAIL}, ",
     "sglang>=0.4.9.post1,<0.5.3.post2"),
    ("0.5.3.post2 (real line, issue #11948)", "0.5.3.post2 managers/scheduler_metrics_mixin.py:251,272",
     f"[2025-10-22 10:27:58 TP0] Decode batch. {HEAD}, accept len: 2.05, accept rate: 0.51, "
     f"cuda graph: True, {TAIL}, ",
     "sglang>=0.5.3.post2,<0.5.4"),
    ("0.5.4", "0.5.4 managers/scheduler_metrics_mixin.py:249,270",
     f"[2025-10-22 10:27:58] Decode batch [1234], {HEAD}, accept len: 2.05, accept rate: 0.51, "
     f"cuda graph: True, {TAIL}, ",
     "sglang==0.5.4"),
    ("0.5.5-0.5.8", "0.5.6 managers/scheduler_metrics_mixin.py:270-307",
     f"[2025-10-22 10:27:58] Decode batch, {HEAD}, accept len: 2.05, accept rate: 0.51, "
     f"cuda graph: True, {TAIL}, ",
     "sglang>=0.5.5,<0.5.9"),
    ("0.5.9-0.5.10", "0.5.10 observability/scheduler_metrics_mixin.py:608-657",
     f"[2025-10-22 10:27:58] Decode batch, {HEAD}, accept len: 2.05, accept rate: 0.51, "
     f"cuda graph: True, {TAIL}",
     "sglang>=0.5.9,<0.5.11"),
    ("0.5.11-0.5.23", "0.5.11 observability/scheduler_metrics_mixin.py:528-547",
     f"[2025-10-22 10:27:58] Decode batch, {HEAD}, accept len: 2.05, accept rate: 0.35, "
     f"cuda graph: True, {TAIL}",
     "sglang>=0.5.11"),
]  # fmt: skip


def write(tmp_path, text: str, name: str = "server.log"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("versions", "source", "line", "label"), FORMATS, ids=[f[0] for f in FORMATS]
)
def test_every_decode_format_is_read_and_dated(tmp_path, versions, source, line, label):
    """Each rendered line (versions and sources: 0.4.4.post2
    managers/scheduler.py:1079-1087, 0.4.6.post1 scheduler.py:1044-1068, 0.4.8
    scheduler.py:1316-1342, 0.4.10 scheduler_metrics_mixin.py:170-191, 0.5.3.post2 :251,272, 0.5.4
    :249,270, 0.5.6 :270-307, 0.5.10 observability/scheduler_metrics_mixin.py:608-657, 0.5.11
    :528-547) parses to accept len 2.05 / 188.68 tok/s, and the format (header, rate field,
    graph field, trailing `, `; the rate arithmetic for ≥0.5.9) names the release range."""
    (run,) = parse_files([write(tmp_path, line + "\n")])
    assert run.accept_len.mean == pytest.approx(2.05)
    assert run.throughput.mean == pytest.approx(188.68)
    assert run.unparsed_lines == 0
    assert run.engine == label
    assert any(source in s for s in run.format_sources)


def test_rate_arithmetic_gives_d_per_release(tmp_path):
    """Worked check, issue #11948 (0.5.3.post3, steps=3, D=4): 2.05/4 → 0.51 under
    0.5.3.post2 scheduler_metrics_mixin.py:257-272; the same accept len prints 0.35 under 0.5.11
    observability/scheduler_metrics_mixin.py:528-547 ((2.05−1)/(4−1)). Both imply D = 4."""
    old = write(tmp_path, FORMATS[4][2] + "\n", "old.log")
    new = write(tmp_path, FORMATS[8][2] + "\n", "new.log")
    r_old, r_new = parse_files([old, new])
    assert r_old.formula.value.expr == "accept_len / (num_steps + 1)"
    assert r_old.num_steps == 3
    assert r_new.formula.value.expr == "(accept_len - 1) / (D - 1)"
    assert r_new.num_draft_tokens == 4


def test_prefixes_hybrid_pd_graph_and_dspark_fields(tmp_path):
    """Prefix orders DP/PP/TP/EP and .msecs (0.5.10 utils/common.py:1136-1142), hybrid SWA
    pool fields and PD-decode fields (0.5.10 observability/scheduler_metrics_mixin.py:553-623),
    `npu graph` (≥0.5.9, :648-654), MFU suffix after #queue-req (:659-668), and DSpark `cap len` /
    `block accept len` (≥0.5.16, 0.5.23 metrics_reporter.py:963-1042) are all read."""
    lines = [
        "[2026-01-05 08:00:00.123 DP1 PP0 TP3 EP3] Decode batch, #running-req: 8, #full token: 900, "
        "full token usage: 0.01, #swa token: 300, swa token usage: 0.00, accept len: 3.10, "
        "accept rate: 0.53, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 1, "
        "#retracted-req: 0, npu graph: True, gen throughput (token/s): 901.50, #queue-req: 2",
        "[2026-01-05 08:00:10 TP0] Decode batch, #running-req: 8, #token: 900, token usage: 0.01, "
        "accept len: 3.30, accept rate: 0.58, cap len: 4.00, block accept len: 3.30, "
        "cuda graph: True, gen throughput (token/s): 950.00, #queue-req: 0, "
        "est. decode TFLOPS/s (per GPU): 12.00",
    ]
    (run,) = parse_files([write(tmp_path, "\n".join(lines) + "\n")])
    assert run.unparsed_lines == 0
    assert run.accept_len.count == 2
    assert [w.running for w in run.windows] == [8, 8]
    assert run.windows[1].t - run.windows[0].t == pytest.approx(9.877)
    assert run.release_range is not None and str(run.release_range).startswith(">=0.5.16")


def test_avg_spec_accept_length_line(tmp_path):
    """`logger.info(f"{avg_spec_accept_length=}")` on /set_internal_state (0.4.6.post1
    scheduler.py:1681-1686) is read as a cumulative accept len."""
    (run,) = parse_files([write(tmp_path, "[2025-10-22 10:27:58] avg_spec_accept_length=2.3456\n")])
    assert run.accept_len.mean == pytest.approx(2.3456)
    assert run.windows[0].kind == "avg_spec"


def test_spec_off_decode_lines_give_throughput_only(tmp_path):
    """Without speculation 0.5.10 prints no accept fields (observability/
    scheduler_metrics_mixin.py:615-619): a baseline run with throughput and no accept len."""
    line = (
        "[2026-03-02 09:50:53 TP0] Decode batch, #running-req: 1, #token: 1212, token usage: 0.00, "
        "cuda graph: False, gen throughput (token/s): 25.64, #queue-req: 0\n"
    )
    (run,) = parse_files([write(tmp_path, line * 3)])
    assert run.window_count == 3
    assert run.accept_len.count == 0
    assert run.throughput.mean == pytest.approx(25.64)
