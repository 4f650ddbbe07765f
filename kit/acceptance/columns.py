"""The fast path for log lines of a shape already read: whole chunks at once, in numpy.

A line's *pattern* is its text with the number after each `key: ` (and in a `[N]` header) left
open and every other character fixed; the digits of the prefix (`[2026-03-02 10:00:04 TP0] `) are
open too but keep their width. The first line of each shape is read field by field
(`kit.acceptance.lines`) and its pattern learned; every later line is checked against the known
patterns for a whole chunk at once: literal text 16 bytes per gather, numbers of any width parsed
eight digits per 64-bit word (SWAR). A line that matches differs from the learned one only in its
numbers, so the field-by-field reader would find the same fields at the same keys, the same format
signature and the same figures; lines that match no pattern go to that reader.

Two kinds of pattern: a decode pattern (an SGLang `Decode batch` line) yields accept len, accept
rate and throughput for every line; an other pattern (prefill lines, any engine line without an
acceptance figure) only counts lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kit.acceptance.fields import mentions_acceptance
from kit.acceptance.sglang_log import _PREFIX, Layout, Signature, decode_layout

MAX_PATTERNS = 64  # a log has a few shapes (prefixes, graph labels, pool fields); past this, slow
FIELD_KEYS = {", accept len: ": "accept_len", ", accept rate: ": "accept_rate",
              ", gen throughput (token/s): ": "throughput", "#running-req: ": "running"}  # fmt: skip
_NUMBER = re.compile(r"(?<=: )\d+(?:\.\d+)?(?=, |,$|$)|(?<=\[)\d+(?=\])")
_U = np.uint64
_ZEROS, _NINES = _U(0x3030303030303030), _U(0x7676767676767676)
_HIGH = _U(0x8080808080808080)
_PAIRS, _QUADS, _LOW32 = _U(0x00FF00FF00FF00FF), _U(0x0000FFFF0000FFFF), _U(0xFFFFFFFF)
MAX_DIGITS = 7  # an integer part of eight digits or more is left to the field reader
MAX_DECIMALS = 6  # the point, the decimals and the byte after them fit the 16 bytes read
MAX_LINE = 1024  # longer lines are never learned (real decode lines are under 600 characters)
MAX_NUMBERS = 32
PAD = 4096  # zero bytes after a chunk: a pattern checked against a short last line reads past it


def words_of(buf: bytearray | bytes, size: int) -> np.ndarray:
    """The first `size` bytes of `buf` as a 16-byte record at every byte offset (no copy);
    `buf` must hold PAD more bytes."""
    return np.ndarray((size + PAD - 16,), dtype="V16", buffer=buf, strides=(1,))


def _read(words: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 16 bytes at each offset as two little-endian words (first character in the low byte
    of the first): one gather, however many bytes of it are used."""
    pair = words[at].view(np.uint64).reshape(-1, 2)
    return pair[:, 0], pair[:, 1]


def _nondigit(x: np.ndarray) -> np.ndarray:
    """The high bit of each byte lane of `x` that is not an ASCII digit."""
    t = x ^ _ZEROS
    return ((t + _NINES) | t) & _HIGH


def _width(x: np.ndarray) -> np.ndarray:
    """How many ASCII digits each word starts with (0-8), first character in the low byte."""
    m = _nondigit(x)
    low = m & (~m + _U(1))
    return (np.bitwise_count((low >> _U(7)) - _U(1)) >> 3).astype(np.int64)


def _value(x: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The integer the first `width` (1-8) digit bytes of each word spell."""
    y = (x ^ _ZEROS) << ((8 - width) * 8).astype(np.uint64)
    y = (y * _U(10) + (y >> _U(8))) & _PAIRS
    y = (y * _U(100) + (y >> _U(16))) & _QUADS
    return ((y * _U(10000) + (y >> _U(32))) & _LOW32).astype(np.int64)


@dataclass(frozen=True)
class _Text:
    """Fixed text, as 8-byte words and masks; `keep` is zero on the prefix's digits (whatever
    they are, they decide no field the field reader reads, only the timestamp, which it parses
    from the same bytes)."""

    size: int
    pairs: tuple[tuple[int, np.ndarray, np.ndarray], ...]  # (offset, keep[2], want[2])

    @classmethod
    def of(cls, text: bytes, digits: bytes | None = None) -> _Text:
        pairs = []
        for at in range(0, len(text), 16):
            chunk = text[at : at + 16].ljust(16, b"\0")
            open_ = (digits or b"\0" * len(text))[at : at + 16].ljust(16, b"\0")
            keep = bytes(0 if d or at + i >= len(text) else 0xFF for i, d in enumerate(open_))
            want = bytes(c & k for c, k in zip(chunk, keep, strict=True))
            pairs.append((at, *(np.frombuffer(b, np.uint64).copy() for b in (keep, want))))
        return cls(len(text), tuple(pairs))

    def mismatch(self, words: np.ndarray, at: np.ndarray, bad: np.ndarray) -> None:
        """Set bits of `bad` in rows whose text at `at` is not this text."""
        for offset, keep, want in self.pairs:
            lo, hi = _read(words, at + offset)
            bad |= (lo ^ want[0]) & keep[0]
            if keep[1]:
                bad |= (hi ^ want[1]) & keep[1]


@dataclass(frozen=True)
class _Number:
    """A number of any width with `decimals` digits after its point; `name` if it is kept."""

    decimals: int
    name: str | None


@dataclass
class Pattern:
    """One line shape: a prefix of fixed width, then fixed texts and open numbers to the end."""

    prefix: _Text
    steps: list[_Text | _Number]
    layout: Layout | None  # the decode layout (None: a line counted, not read)
    sig: Signature | None
    template: str = ""  # the line with its open numbers and prefix digits blanked: its identity
    hits: int = 0
    scale: dict[str, int] = field(default_factory=dict)  # kept number -> 10**decimals

    def match(
        self, words: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(rows that match, kept numbers as scaled integers) for lines [starts, ends).

        Texts and numbers are walked in order: where each starts depends on the widths of the
        numbers before it. A row that differs anywhere gets a bit in `bad`.
        """
        bad = np.zeros(len(starts), np.uint64)
        self.prefix.mismatch(words, starts, bad)
        at = starts + self.prefix.size
        values: dict[str, np.ndarray] = {}
        for step in self.steps:
            if isinstance(step, _Text):
                step.mismatch(words, at, bad)
                at = at + step.size
                continue
            lo, hi = _read(words, at)
            width = _width(lo)
            bad |= ((width - 1) > (MAX_DIGITS - 1)).view(np.uint8)
            if step.name:
                values[step.name] = _number(step, lo, hi, width, bad)
            at = at + width + (1 + step.decimals if step.decimals else 0)
        ok = bad == 0
        ok &= at == ends
        return ok, values


def _number(step: _Number, lo, hi, width, bad) -> np.ndarray:
    """A kept number as an integer scaled by 10**decimals; rows where the point or the decimals
    are not there get a bit in `bad`."""
    value = _value(lo, np.maximum(width, 1))
    if not step.decimals:
        return value
    shift = (width * 8).astype(np.uint64)  # the point and what follows it
    y = (lo >> shift) | (hi << (_U(64) - shift))
    frac = y >> _U(8)
    bad |= (y & _U(0xFF)) ^ _U(46)
    bad |= (_width(frac) != step.decimals).view(np.uint8)
    return value * 10**step.decimals + _value(frac, np.full(len(frac), step.decimals))


def learn(line: str) -> Pattern | None:
    """The pattern of a line the field reader just read (ASCII, up to 1 kB); None if it has none."""
    if len(line) > MAX_LINE or not line.isascii():
        return None
    m = _PREFIX.match(line)
    head = m.group(0) if m else ""
    digits = bytes(c.isdigit() for c in head)
    body = line[len(head) :]
    layout = decode_layout(line) if "Decode batch" in body else None
    if layout is not None and layout.sig[4] is None:
        return None  # a trimmed line: read field by field
    if layout is None and mentions_acceptance(line):
        return None  # a figure only the field reader reads
    steps: list[_Text | _Number] = []
    scale: dict[str, int] = {}
    template = re.sub(r"\d", "0", head) + _NUMBER.sub(lambda m: "#" * (1 + m[0].count(".")), body)
    at = 0
    for num in _NUMBER.finditer(body):
        text = body[at : num.start()]
        steps.append(_Text.of(text.encode()))
        decimals = len(num.group(0).partition(".")[2])
        if decimals > MAX_DECIMALS:
            return None
        name = next((v for k, v in FIELD_KEYS.items() if text.endswith(k)), None)
        name = name if layout is not None and name not in scale else None  # first one only
        steps.append(_Number(decimals, name))
        if name:
            scale[name] = 10**decimals
        at = num.end()
    if at < len(body):
        steps.append(_Text.of(body[at:].encode()))
    if len(steps) > 2 * MAX_NUMBERS:
        return None
    prefix = _Text.of(head.encode(), digits)
    sig = layout.sig if layout else None
    return Pattern(prefix, steps, layout, sig, template=template, scale=scale)


@dataclass
class Matches:
    """What the known patterns matched in one chunk: per line, the pattern (-1: none) and the
    kept numbers of decode lines."""

    pattern: np.ndarray
    values: dict[str, np.ndarray]


def match_chunk(
    patterns: list[Pattern], words: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> Matches:
    """Try each pattern, most used first, on the lines no earlier pattern matched."""
    n = len(starts)
    which = np.full(n, -1, np.int32)
    values = {name: np.zeros(n, np.int64) for name in FIELD_KEYS.values()}
    rows = None  # None: every line
    for i in sorted(range(len(patterns)), key=lambda i: -patterns[i].hits):
        s, e = (starts, ends) if rows is None else (starts[rows], ends[rows])
        ok, found = patterns[i].match(words, s, e)
        hit = np.flatnonzero(ok) if rows is None else rows[ok]
        which[hit] = i
        patterns[i].hits += len(hit)
        for name, v in found.items():
            values[name][hit] = v[ok]
        rows = np.flatnonzero(~ok) if rows is None else rows[~ok]
        if not len(rows):
            break
    return Matches(which, values)
