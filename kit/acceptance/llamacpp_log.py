"""llama.cpp's speculative-decoding lines (its server runs EAGLE-3 drafts as `draft-eagle3`).

Read in ggml-org/llama.cpp at commit 001d906a6d86e2490e394361e7cc6f478b100088 (older builds print
`draft acceptance rate = R ( N accepted / M generated)` and no mean length, as quoted in
ggml-org/llama.cpp issue #23544 for builds 9159-9222 and #25792 for b9235; read the same way):

- per request, when a slot finishes (`tools/server/server-context.cpp`, `print_timings`):
  `draft acceptance = R (N accepted / M generated), mean len = L` with `acc per pos = (…)` on a
  trace line of its own; the release that added the per-position rates (PR #24536) prints
  `…, mean acceptance length = L, acceptance rate per position = (…)` on the one line. L is
  1 + accepted / verify steps, R accepted / generated draft tokens.
- per implementation, after each request (`common/speculative.cpp`,
  `common_speculative_print_stats`): `statistics draft-eagle3: #calls(b,g,a) = B G A, #gen drafts
  = …, #acc drafts = …, #gen tokens = M, #acc tokens = N, #mean acc len = L, #acc rate/pos = (…)`.
  Its counters are never reset: the figures are cumulative over the server's life.
"""

from __future__ import annotations

import re

from kit.acceptance import fields
from kit.acceptance.model import Kind, Window

REQUEST_MARKS, STATS_MARK = ("draft acceptance = ", "draft acceptance rate = "), "#acc tokens"
_COUNTS = re.compile(r"\(\s*(\d+) accepted /\s*(\d+) generated\)")
_CALLS = re.compile(r"#calls\(b,g,a\)\s*=\s*(\d+)\s+(\d+)\s+(\d+)")
_IMPL = re.compile(r"statistics\s+([\w.-]+):")
PER_POS_LINE = re.compile(r"^(?:.*\| )?\s*acc per pos = \(([^)]*)\)\s*$")
_LISTS = ("acceptance rate per position", "acc rate/pos")

Signature = tuple[str, str]


class Garbled(Exception):
    """A llama.cpp acceptance line whose figures cannot be read."""


def request(line: str, line_no: int, mark: str) -> Window:
    """The per-request `draft acceptance = …` line (the mean length only in builds with it)."""
    m = _COUNTS.search(line)
    f = fields.pairs(line[line.index(mark) :], lists=_LISTS)
    al = fields.number(f.get("mean acceptance length", f.get("mean len")))
    if m is None:
        raise Garbled("draft acceptance line without counts")
    pp = f.get("acceptance rate per position")
    return Window(
        accept_len=al,
        accept_rate=fields.number(f.get("draft acceptance", f.get("draft acceptance rate"))),
        per_position=fields.numbers(pp) if pp else None,
        accepted=int(m[1]),
        drafted=int(m[2]),
        line_no=line_no,
        kind=Kind.LLAMA_REQUEST,
    )


def stats(line: str, line_no: int) -> tuple[Window, str]:
    """The cumulative `statistics <impl>: …` line and the implementation's name."""
    f = fields.pairs(line, lists=_LISTS)
    accepted, drafted = fields.count(f.get("acc tokens")), fields.count(f.get("gen tokens"))
    calls = _CALLS.search(line)
    if accepted is None or drafted is None or calls is None:
        raise Garbled("statistics line without whole token counts")
    verify = int(calls[3])
    al = fields.number(f.get("mean acc len"))
    if al is None and verify:
        al = 1 + accepted / verify
    pp = f.get("acc rate/pos")
    impl = _IMPL.search(line)
    w = Window(
        accept_len=al,
        accept_rate=accepted / drafted if drafted else None,
        per_position=fields.numbers(pp) if pp else None,
        accepted=accepted,
        drafted=drafted,
        line_no=line_no,
        kind=Kind.LLAMA_STATS,
    )
    return w, impl[1] if impl else "?"


def parse_line(line: str, line_no: int) -> tuple[Window, Signature] | None:
    """A window for a llama.cpp acceptance line; None for any other line. Raises `Garbled`."""
    mark = next((m for m in REQUEST_MARKS if m in line), None)
    if mark is not None:
        return request(line, line_no, mark), ("llama.cpp", "request")
    if STATS_MARK in line and "statistics" in line:
        w, impl = stats(line, line_no)
        return w, ("llama.cpp", f"stats {impl}")
    return None
