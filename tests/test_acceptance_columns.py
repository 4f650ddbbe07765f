"""The fast path for known line shapes (kit.acceptance.columns, kit.acceptance.logfile) reads a log
exactly as the field-by-field reader does: same windows, statistics, formats, examples and
unparsed lines."""

from __future__ import annotations

import random

import pytest

from kit.acceptance import columns, logfile, model, parse_files
from kit.acceptance.model import LogRun

PREFIXES = ["[2026-01-05 08:{m:02d}:{s:02d}] ", "[2026-01-05 08:{m:02d}:{s:02d}.{ms:03d} DP1 TP3] "]
FIGURES = "accept len: {al:.2f}, accept rate: {ar:.2f}, "
TAIL = "{graph} graph: True, gen throughput (token/s): {tp:.2f}, #queue-req: {q}"
BODIES = [
    "Decode batch, #running-req: {r}, #token: {tok}, token usage: 0.01, " + FIGURES + TAIL,
    "Decode batch. #running-req: {r}, #token: {tok}, token usage: 0.01, " + FIGURES + TAIL + ", ",
    "Decode batch [{it}], #running-req: {r}, #token: {tok}, token usage: 0.01, " + FIGURES + TAIL,
    "Decode batch, #running-req: {r}, #token: {tok}, token usage: 0.01, " + TAIL,  # spec off
]
OTHERS = [
    "[2026-01-05 08:00:00] Prefill batch, #new-seq: 1, #new-token: 12, #queue-req: 0",
    "[2026-01-05 08:00:00] avg_spec_accept_length=2.3456",
    "some words without a prefix",
    "",
    "[DP0 TP0] Decode batch, accept len: 1.00, accept rate: 0.20, cuda graph: True",  # trimmed
]
# Lines one character off a learned shape: each must be read as the field reader reads it.
ODD = [
    "[2026-01-05 08:00:00] Decode batch, #running-req: 3, #token: , token usage: 0.01, "
    + FIGURES
    + TAIL,  # an empty count the field reader does not read
    "[2026-01-05 08:00:00] Decode batch, #running-req: 3, #token: 123456789012, token usage: 0.01, "
    + FIGURES
    + TAIL,  # wider than one 8-byte word
    "[2026-01-05 08:00:00] Decode batch, #running-req: 3, #token: 9, token usage: 0.01, "
    "accept len: 12.345, accept rate: 0.10, " + TAIL,  # three decimals
    "[2026-01-05 08:00:00] Decode batch, #running-req: 3, #token: 9, token usage: 0.01, "
    "accept len: 1234567.00, accept rate: 0.10, " + TAIL,  # too wide to read in one word
    "[2026-01-05 08:00:00] Decode batch, #running-req: 3, #token: 9, token usage: 0.01, "
    "accept len: 2.00, accept rate: 0.40, " + TAIL + "\r",  # a Windows line end
    "[2026-01-05 08:00:00] Decode batch, #running-req: x, #token: 9, token usage: 0.01, "
    + FIGURES
    + TAIL,  # not a number where the running requests go
    "[2026-01-05 08:0x:00] Decode batch, #running-req: 3, #token: 9, token usage: 0.01, "
    + FIGURES
    + TAIL,  # a letter among the timestamp's digits: no time, same figures
    "[2026-01-05 08:00:00] Decode batch, #running-req: 3, #token: 9, token usage: 0.01, "
    "accept len: 2;50, accept rate: 0.50, " + TAIL,  # no point where a fixed width has one
    "[2026-01-05 08:00:00] Decode batch, #running-req: 3, #token: 9, token usage: 0.01, "
    "accept len: 2.50, accept rate: 0.5x, " + TAIL,  # a letter where a fixed width has a digit
]


def decode_line(rng: random.Random, i: int) -> str:
    al = 1.0 if i > 2000 and rng.random() < 0.3 else rng.uniform(1.1, 5)  # floor lines come late
    text = rng.choice(PREFIXES) + rng.choice(BODIES)
    return text.format(
        m=rng.randrange(60),
        s=rng.randrange(60),
        ms=rng.randrange(1000),
        it=rng.randrange(10**5),
        r=rng.randrange(300),
        tok=rng.randrange(10**6),
        al=al,
        ar=al / 5,
        graph=rng.choice(["cuda", "npu2", "npu3"]),  # a digit in the label varies within a shape
        tp=rng.uniform(0, 3000),
        q=rng.randrange(20),
    )


def mixed_log(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        r = rng.random()
        if r < 0.03:
            out.append(decode_line(rng, i)[: rng.randrange(20, 120)])  # cut off: unparsed
        elif r < 0.06:
            out.append(rng.choice(OTHERS))
        elif r < 0.07:
            out.append(rng.choice(ODD).format(al=2.5, ar=0.5, graph="cuda", tp=80.0, q=1))
        else:
            out.append(decode_line(rng, i))
    return "\n".join(out) + "\n"


def snapshot(run: LogRun) -> dict:
    stats = {
        name: (s.count, s.min, s.max, s.p50, dict(s.hist or {}), pytest.approx(s.mean))
        for name in ("accept_len", "accept_rate", "throughput")
        for s in [getattr(run, name)]
    }
    return {
        "windows": run.windows,
        "window_count": run.window_count,
        "stride": run.stride,
        "formats": list(run.formats.items()),  # order too: release inference reads it in order
        "stats": stats,
        "unparsed": (run.unparsed_lines, run.unparsed_reasons, run.unparsed_examples),
        "other_lines": run.other_lines,
        "counts": (run.spec_windows, run.floor_windows, dict(run.scopes)),
        "example_lines": run.example_lines,
        "engine": (run.engine, run.release_range and str(run.release_range), run.conflicts),
    }


@pytest.mark.parametrize(
    "seed, settle", [(0, columns.SETTLE_ROWS), (1, columns.SETTLE_ROWS), (2, 4)]
)
def test_fast_path_reads_like_the_full_parse(tmp_path, monkeypatch, seed, settle):
    """Small series and chunks, so thinning and chunk edges happen many times over; with few
    rows needed to settle a pattern's widths, copies with fixed widths read most lines."""
    monkeypatch.setattr(columns, "SETTLE_ROWS", settle)
    monkeypatch.setattr(model, "MAX_WINDOWS", 64)
    monkeypatch.setattr(logfile, "FIRST_CHUNK", 2000)
    monkeypatch.setattr(logfile, "CHUNK", 20_000)
    p = tmp_path / "server.log"
    p.write_text(mixed_log(random.Random(seed), 6000))
    (fast,) = parse_files([p])
    monkeypatch.setattr(columns, "MAX_PATTERNS", 0)  # every line field by field
    (full,) = parse_files([p])
    assert fast.window_count > 5000 and fast.stride > 1 and fast.unparsed_lines > 100
    assert snapshot(fast) == snapshot(full)


def test_first_floor_line_is_the_example(tmp_path):
    """A shape learned from healthy lines still leaves the first accept len 1.00 line to the
    full parse, so ZERO_ACCEPTANCE evidence quotes the first one."""
    line = (
        "[2026-01-05 08:00:{s:02d}] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, "
        "accept len: {al:.2f}, accept rate: 0.40, cuda graph: True, gen throughput (token/s): "
        "50.00, #queue-req: 0\n"
    )
    p = tmp_path / "server.log"
    p.write_text("".join(line.format(s=s, al=2.0 if s < 5 else 1.0) for s in range(10)))
    (run,) = parse_files([p])
    assert run.example_lines["floor"].startswith("line 6: ")
    assert run.accept_len.count == 10 and run.accept_len.hist == {2.0: 5, 1.0: 5}


def test_the_fast_path_takes_the_lines_of_a_known_shape(tmp_path, monkeypatch):
    """Not a vacuous comparison: after the first chunk, lines of a learned shape never reach the
    field reader (only new shapes, cut-off and odd lines do)."""
    monkeypatch.setattr(logfile, "FIRST_CHUNK", 2000)
    monkeypatch.setattr(logfile, "CHUNK", 20_000)
    p = tmp_path / "server.log"
    p.write_text(mixed_log(random.Random(2), 6000))
    reader = logfile.LogReader(LogRun(source=str(p)))
    fed = []
    feed = reader.lines.feed
    monkeypatch.setattr(reader.lines, "feed", lambda line, n: fed.append(n) or feed(line, n))
    with open(p, "rb") as f:
        reader.read(f)
    assert sum(pattern.hits for pattern in reader.patterns) > 5000
    assert len(fed) < 1000


def test_start_up_lines_printed_once_do_not_crowd_out_decode_lines(tmp_path, monkeypatch):
    """A server prints hundreds of distinct lines at start-up (arguments, weight loading), each
    once: they are not learned, so the decode lines after them still take the fast path."""
    monkeypatch.setattr(logfile, "FIRST_CHUNK", 2000)
    monkeypatch.setattr(logfile, "CHUNK", 20_000)
    rng = random.Random(3)
    start = [
        f"[2026-01-05 08:00:00 TP{i % 8}] Load weight {w}. avail mem={rng.uniform(10, 90):.2f} GB"
        for i, w in enumerate(["begin", "end", "shard"] * 100)
    ]
    p = tmp_path / "server.log"
    p.write_text("\n".join(start) + "\n" + "\n".join(decode_line(rng, i) for i in range(3000)))
    reader = logfile.LogReader(LogRun(source=str(p)))
    with open(p, "rb") as f:
        reader.read(f)
    assert reader.run.other_lines == 300 and reader.run.window_count == 3000
    assert sum(pattern.hits for pattern in reader.patterns) > 2500


def chunked_reader(tmp_path, monkeypatch, text: str) -> tuple[logfile.LogReader, list[int]]:
    """A reader of `text` in small chunks, and the numbers of the lines it fed the field reader."""
    monkeypatch.setattr(logfile, "FIRST_CHUNK", 2000)
    monkeypatch.setattr(logfile, "CHUNK", 20_000)
    p = tmp_path / "server.log"
    p.write_text(text)
    reader = logfile.LogReader(LogRun(source=str(p)))
    fed: list[int] = []
    feed = reader.lines.feed
    monkeypatch.setattr(reader.lines, "feed", lambda line, n: fed.append(n) or feed(line, n))
    with open(p, "rb") as f:
        reader.read(f)
    return reader, fed


def test_the_first_line_of_every_chunk_takes_the_fast_path(tmp_path, monkeypatch):
    """A pattern's first read starts up to 7 bytes before the line: the buffer holds room for
    it, so the first line of a chunk is not left to the field reader."""
    rng = random.Random(4)
    body = BODIES[0]
    lines = [PREFIXES[0].format(m=i // 60 % 60, s=i % 60) + body for i in range(3000)]
    text = "\n".join(line.format(r=rng.randrange(1, 9), tok=rng.randrange(10**5, 10**6),
                                  al=rng.uniform(1.1, 5), ar=0.5, graph="cuda",
                                  tp=rng.uniform(10, 99), q=0) for line in lines) + "\n"  # fmt: skip
    reader, fed = chunked_reader(tmp_path, monkeypatch, text)
    first_chunk = text[: logfile.FIRST_CHUNK].count("\n")
    assert fed == list(range(1, first_chunk + 1))  # those read before any shape was known
    assert reader.run.window_count == 3000


def test_numbers_of_one_width_are_read_at_fixed_offsets(tmp_path, monkeypatch):
    """A log's accept len, accept rate and queue keep one width for thousands of lines, then
    change: a copy of the pattern with those widths fixed reads the first lines, the pattern
    itself the others, and every figure is the field reader's."""
    rng = random.Random(5)
    out = []
    for i in range(4000):
        late = i > 3000 and rng.random() < 0.2  # accept len 12.34, two-digit queue, 1.00 usage
        al = rng.uniform(10, 20) if late else rng.uniform(1, 5)
        out.append(
            f"[2026-01-05 08:{i // 60 % 60:02d}:{i % 60:02d}] Decode batch, #running-req: "
            f"{rng.randrange(1, 300)}, #token: {rng.randrange(10**6)}, token usage: "
            f"{1.0 if late else rng.random():.2f}, accept len: {al:.2f}, accept rate: "
            f"{al / 20:.2f}, cuda graph: True, gen throughput (token/s): "
            f"{rng.uniform(1, 3000):.2f}, #queue-req: {rng.randrange(10, 99) if late else 0}"
        )
    text = "\n".join(out) + "\n"
    reader, fed = chunked_reader(tmp_path, monkeypatch, text)
    fixed = [p for p in reader.patterns if any(u.number and u.number.width for u in p.units)]
    assert len(fixed) == 1 and fixed[0].hits > 3000
    assert [u.number.width for u in fixed[0].units if u.number] == [None, None, 1, 1, 1, None, 1]
    assert sum(p.hits for p in reader.patterns if p not in fixed) > 150  # the other widths
    assert len(fed) < 50
    p = tmp_path / "server.log"
    (fast,) = parse_files([p])
    monkeypatch.setattr(columns, "MAX_PATTERNS", 0)
    (full,) = parse_files([p])
    assert snapshot(fast) == snapshot(full)


def test_a_byte_that_is_no_utf8_among_the_timestamps_digits_is_read_as_the_field_reader_does(
    tmp_path, monkeypatch
):
    """The prefix's digits are not checked by a pattern: a byte there that UTF-8 cannot decode
    gives a window without a time, as the field reader's, not a UnicodeDecodeError."""
    line = (
        b"[2026-01-05 08:00:%02d] Decode batch, #running-req: 3, #token: 9, token usage: 0.01, "
        b"accept len: 1.00, accept rate: 0.20, cuda graph: True, gen throughput (token/s): "
        b"80.00, #queue-req: 1\n"
    )
    good = b"".join(line % (i % 60) for i in range(3000))
    p = tmp_path / "server.log"
    p.write_bytes(good + (line % 1).replace(b"08:00:01", b"08:0\xff:01") * 3 + good)
    monkeypatch.setattr(model, "MAX_WINDOWS", 100_000)  # every window kept, the odd ones too
    (fast,) = parse_files([p])
    assert [w.t for w in fast.windows].count(None) == 3
    assert "floor" in fast.example_lines
    monkeypatch.setattr(columns, "MAX_PATTERNS", 0)
    (full,) = parse_files([p])
    assert snapshot(fast) == snapshot(full)


def test_a_line_cut_off_after_its_last_label_is_cut_off_on_the_fast_path_too(tmp_path, monkeypatch):
    """The last number of a learned line missing (`#queue-req: ` and the line break): the line
    ends where the number would have, so only its width (no digit) tells; the field reader calls
    it cut off, and so does the fast path, rather than reading it as a window."""
    line = (
        b"[2026-03-02 09:46:42 TP0] Decode batch, #running-req: 1, #token: 1028, token usage: "
        b"0.00, accept len: 1.00, accept rate: 0.20, cuda graph: False, gen throughput "
        b"(token/s): 24.80, #queue-req: 0\n"
    )
    good = line * 2000
    p = tmp_path / "server.log"
    p.write_bytes(good + line.replace(b": 0\n", b": \n") + good)
    monkeypatch.setattr(model, "MAX_WINDOWS", 100_000)
    (fast,) = parse_files([p])
    assert fast.window_count == 4000
    assert fast.unparsed_reasons == {"decode line cut off before #queue-req": 1}
    monkeypatch.setattr(columns, "MAX_PATTERNS", 0)
    (full,) = parse_files([p])
    assert snapshot(fast) == snapshot(full)
