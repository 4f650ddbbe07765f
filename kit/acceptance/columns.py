"""The fast path for log lines of a shape already read: whole chunks at once, in numpy.

A line's *pattern* is its text with the number after each `key: ` (and in a `[N]` header) left
open and every other character fixed; the digits of the prefix (`[2026-03-02 10:00:04 TP0] `) are
open too but keep their width. The first line of each shape is read field by field
(`kit.acceptance.lines`) and its pattern learned; later lines are checked against the known
patterns a chunk at a time. A numpy gather costs about the same for 1 byte as for 64, so each
fixed text is read with one gather together with the 8 bytes after it, where the next number
starts; the text is compared as 64-bit words and the number's width and value come from its word
by SWAR arithmetic (eight digits a word). A line that matches differs from the learned one only in
its numbers, so the field reader would find the same fields at the same keys, the same format
signature and the same figures; lines that match no pattern go to that reader.

Two kinds of pattern: a decode pattern (an SGLang `Decode batch` line) yields accept len, accept
rate, throughput and running requests for every line; any other pattern (prefill lines, engine
lines without an acceptance figure) only counts lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kit.acceptance.fields import mentions_acceptance
from kit.acceptance.sglang_log import _PREFIX, Layout, Signature, decode_layout

MAX_PATTERNS = 32  # of each kind; a log has a few shapes (prefixes, graph labels, pool fields)
IDLE_CHUNKS = 4  # a pattern that matched nothing in this many chunks in a row is no longer tried
FIELD_KEYS = {", accept len: ": "accept_len", ", accept rate: ": "accept_rate",
              ", gen throughput (token/s): ": "throughput", "#running-req: ": "running"}  # fmt: skip
_NUMBER = re.compile(r"(?<=: )\d+(?:\.\d+)?(?=, |,$|$)|(?<=\[)\d+(?=\])")
_U = np.uint64
_ZEROS, _NINES = _U(0x3030303030303030), _U(0x7676767676767676)
_HIGH = _U(0x8080808080808080)
_PAIRS, _QUADS = _U(0x00FF00FF00FF00FF), _U(0x0000FFFF0000FFFF)
MAX_DIGITS = 7  # an integer part of eight digits or more is left to the field reader
MAX_DECIMALS = 6
MAX_LINE = 1024  # longer lines are never learned (real decode lines are under 600 characters)
MAX_NUMBERS = 32
PAD = 4096  # zero bytes after a chunk: a pattern checked against a short last line reads past it
_ALL = _U(0xFFFFFFFFFFFFFFFF)


class Chunk:
    """A chunk of whole lines, and views of it as fixed-size records at every byte offset (no
    copy). The buffer holds PAD zero bytes past `size`, so a record read at a short last line
    stays inside it."""

    def __init__(self, buf: bytearray | bytes, size: int) -> None:
        self.buf, self.size = buf, size
        self._views: dict[int, np.ndarray] = {}

    def read(self, at: np.ndarray, size: int) -> np.ndarray:
        """The `size` bytes at each offset, as one record per row: one gather, whatever the
        size (a gather costs the same for 1 byte or 64)."""
        view = self._views.get(size)
        if view is None:
            view = np.ndarray((self.size + PAD - size,), f"V{size}", self.buf, strides=(1,))
            self._views[size] = view
        return view[at]


def _value(x: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The integer the first `width` (1-8) digit bytes of each word spell."""
    y = (x ^ _ZEROS) << ((8 - width) << 3)  # width: uint8; a bad row's garbage is never read
    y = (y * _U(10) + (y >> _U(8))) & _PAIRS
    y = (y * _U(100) + (y >> _U(16))) & _QUADS
    return (y * _U(10000) + (y >> _U(32))).astype(np.uint32)  # the low 32 bits hold the value


def _checks(text: bytes, skip: int, open_digits: bool = False) -> list[tuple[int, _U, _U]]:
    """(word, keep mask, wanted bits) for `text` starting `skip` bytes into a record of 8-byte
    words; with `open_digits` its digits may be anything (the prefix's timestamp: it decides no
    field the field reader reads, only the timestamp, which is parsed from the same bytes)."""
    out = []
    end = skip + len(text)
    for w in range(skip // 8, -(-end // 8)):
        keep = want = 0
        for i in range(max(skip, w * 8), min(end, w * 8 + 8)):
            c = text[i - skip]
            if not (open_digits and 48 <= c <= 57):
                keep |= 0xFF << 8 * (i - w * 8)
                want |= c << 8 * (i - w * 8)
        if keep:
            out.append((w, _U(keep), _U(want)))
    return out


@dataclass(frozen=True)
class _Number:
    """A number of any width with `decimals` digits after its point; `name` if it is kept."""

    decimals: int
    name: str | None


@dataclass(frozen=True)
class _Unit:
    """Fixed text, then an open number (None: the text ends the line)."""

    text: bytes
    number: _Number | None


@dataclass
class Pattern:
    """One line shape: a prefix of fixed width, then fixed texts and open numbers to the end."""

    prefix: bytes
    units: list[_Unit]
    layout: Layout | None  # the decode layout (None: a line counted, not read)
    sig: Signature | None
    template: str = ""  # the line with its open numbers and prefix digits blanked: its identity
    hits: int = 0
    idle: int = 0  # chunks in a row it was tried on and matched nothing
    scale: dict[str, int] = field(default_factory=dict)  # kept number -> 10**decimals

    def __post_init__(self) -> None:
        """Each unit is read with one gather: its text and the 8 bytes where its number starts,
        in whole 8-byte words, started early enough that the number starts a word (the bytes
        before the text are not checked). The first unit's gather holds the prefix too."""
        self._reads = []
        for i, unit in enumerate(self.units or [_Unit(b"", None)]):
            head = self.prefix if i == 0 else b""
            lead = -(len(head) + len(unit.text)) % 8
            merged: dict[int, tuple[int, int]] = {}  # word -> (keep, want): one check a word
            for w, keep, want in _checks(head, lead, True) + _checks(unit.text, lead + len(head)):
                k, v = merged.get(w, (0, 0))
                merged[w] = (k | int(keep), v | int(want))
            checks = [(w, _U(k), _U(v)) for w, (k, v) in sorted(merged.items())]
            size = lead + len(head) + len(unit.text) + 8
            self._reads.append((lead, size, checks))

    def match(
        self, chunk: Chunk, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(rows that match, kept numbers as scaled integers) for lines [starts, ends).

        Units are read in order, one gather each (where each starts depends on the widths of
        the numbers before it); a row that differs anywhere gets bits in `bad`.
        """
        bad = np.zeros(len(starts), np.uint64)
        at, skip = starts, len(self.prefix)
        values: dict[str, np.ndarray] = {}
        for (lead, size, checks), unit in zip(self._reads, self.units or [_Unit(b"", None)],
                                              strict=True):  # fmt: skip
            words = chunk.read(at - lead, size).view(np.uint64).reshape(len(at), -1)
            for w, keep, want in checks:
                bad |= (words[:, w] ^ want) & keep if keep != _ALL else words[:, w] ^ want
            at = at + skip + len(unit.text)
            if unit.number is not None:
                at = at + _number(unit.number, words[:, -1], bad, values)
            skip = 0
        ok = bad == 0
        ok &= at == ends
        return ok, values


def _number(number: _Number, x: np.ndarray, bad: np.ndarray, values: dict) -> np.ndarray:
    """The width of the number at the start of each word `x` (digits, point, decimals); a kept
    number's value, scaled by 10**decimals, goes into `values`; bad rows get bits in `bad`.

    An unkept number's point and decimals are skipped unchecked: no field the field reader reads
    can hide in them, and the text after them is checked.
    """
    t = x ^ _ZEROS
    nondigit = ((t + _NINES) | t) & _HIGH
    width = np.bitwise_count((nondigit & -nondigit) - _U(1)) >> 3  # uint8, 0-8
    dec = number.decimals
    if number.name is not None:  # (an unkept number of no digit or too many fails the text after)
        bad |= (width - 1) > (6 - dec if dec else MAX_DIGITS - 1)  # none wraps to 255
        shift = width << 3
        if dec:
            bad |= ((x >> shift) & _U(0xFF)) ^ _U(46)  # the point
            bad |= (nondigit >> (shift + 8)) & _U((1 << (8 * dec)) - 1)  # the decimals
            low = (_U(1) << shift) - _U(1)
            x = (x & low) | ((x >> _U(8)) & ~low)  # the point taken out: the digits in a row
        values[number.name] = _value(x, width + dec)
    return width + (1 + dec if dec else 0)


def template(line: str) -> str:
    """A line's identity as a pattern: its open numbers and prefix digits blanked."""
    m = _PREFIX.match(line)
    head = m.group(0) if m else ""
    body = line[len(head) :]
    return re.sub(r"\d", "0", head) + _NUMBER.sub(lambda m: "#" * (1 + m[0].count(".")), body)


def learn(line: str) -> Pattern | None:
    """The pattern of a line the field reader just read (ASCII, up to 1 kB); None if it has none."""
    if len(line) > MAX_LINE or not line.isascii():
        return None
    m = _PREFIX.match(line)
    head = m.group(0) if m else ""
    body = line[len(head) :]
    layout = decode_layout(line) if "Decode batch" in body else None
    if layout is not None and layout.sig[4] is None:
        return None  # a trimmed line: read field by field
    if layout is None and mentions_acceptance(line):
        return None  # a figure only the field reader reads
    units: list[_Unit] = []
    scale: dict[str, int] = {}
    at = 0
    for num in _NUMBER.finditer(body):
        text = body[at : num.start()]
        decimals = len(num.group(0).partition(".")[2])
        if decimals > MAX_DECIMALS:
            return None
        name = next((v for k, v in FIELD_KEYS.items() if text.endswith(k)), None)
        name = name if layout is not None and name not in scale else None  # first one only
        units.append(_Unit(text.encode(), _Number(decimals, name)))
        if name:
            scale[name] = 10**decimals
        at = num.end()
    if at < len(body):
        units.append(_Unit(body[at:].encode(), None))
    if len(units) > MAX_NUMBERS:
        return None
    sig = layout.sig if layout else None
    return Pattern(head.encode(), units, layout, sig, template=template(line), scale=scale)


@dataclass
class Matches:
    """What the known patterns matched in one chunk: per line, the pattern (-1: none) and the
    kept numbers of decode lines."""

    pattern: np.ndarray
    values: dict[str, np.ndarray]


def match_chunk(
    patterns: list[Pattern], chunk: Chunk, starts: np.ndarray, ends: np.ndarray
) -> Matches:
    """Try each pattern, most used first, on the lines no earlier pattern matched. A kept
    number's value is only meaningful on the rows its pattern matched."""
    which = np.full(len(starts), -1, np.int32)
    values: dict[str, np.ndarray] = {}
    rows = None  # None: every line
    live = [i for i, p in enumerate(patterns) if p.idle < IDLE_CHUNKS]
    for i in sorted(live, key=lambda i: -patterns[i].hits):
        s, e = (starts, ends) if rows is None else (starts[rows], ends[rows])
        ok, found = patterns[i].match(chunk, s, e)
        hit = np.flatnonzero(ok) if rows is None else rows[ok]
        which[hit] = i
        patterns[i].hits += len(hit)
        patterns[i].idle = 0 if len(hit) else patterns[i].idle + 1
        for name, v in found.items():
            if rows is None and name not in values:
                values[name] = v  # every row: no copy
            else:
                values.setdefault(name, np.zeros(len(starts), v.dtype))[hit] = v[ok]
        rows = np.flatnonzero(~ok) if rows is None else rows[~ok]
        if not len(rows):
            break
    return Matches(which, values)
