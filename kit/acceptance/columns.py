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

Most numbers of a log keep one width (`token usage: 0.41`, `accept len: 2.83`, `#queue-req: 0`):
once a pattern has matched a chunk, a copy of it with those numbers at that width is tried first.
Its fixed-width numbers are checked digit by digit with the text around them, in the same gather,
and read at known offsets; the lines where one has another width are left to the pattern itself.

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
FEW_ROWS = 512  # on fewer rows, a pattern stops reading once every row differs
SETTLE_ROWS = 64  # rows a pattern matches in one chunk before its numbers' widths are looked at
FIXED_SHARE = 0.97  # a number is given a fixed width when this share of the rows has it
FIXED_COVER = 0.9  # and the copy with fixed widths still matches this share of the rows
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


def _digits(y: np.ndarray) -> np.ndarray:
    """The integer the digit values (0-9) of each word spell, the last one in its top byte."""
    y = (y * _U(10) + (y >> _U(8))) & _PAIRS
    y = (y * _U(100) + (y >> _U(16))) & _QUADS
    return (y * _U(10000) + (y >> _U(32))).astype(np.uint32)  # the low 32 bits hold the value


def _value(x: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The integer the first `width` (1-8) digit bytes of each word spell."""
    return _digits((x ^ _ZEROS) << ((8 - width) << 3))  # width: uint8; a bad row's is never read


@dataclass(frozen=True)
class _Number:
    """A number with `decimals` digits after its point; `name` if it is kept; `width` digits
    before the point where the pattern fixes them (None: any width)."""

    decimals: int
    name: str | None
    width: int | None = None


@dataclass(frozen=True)
class _Unit:
    """Fixed text, then a number (None: the text ends the line)."""

    text: bytes
    number: _Number | None


_FIXED, _ANY, _DIGIT = 0, 1, 2  # what a byte of a read must be: itself, anything, a digit


@dataclass(frozen=True)
class _Read:
    """One gather: from the line start or an open number to the next open number (or the line
    end), through numbers of fixed width, in whole 8-byte words started `lead` bytes early so
    that the open number at its end starts a word."""

    lead: int
    size: int
    checks: list[tuple[int, np.uint64, np.uint64]]  # (word, keep mask, wanted bits)
    digits: list[tuple[int, np.uint64]]  # (word, high bit of each byte that must be a digit)
    fixed: list[tuple[int, _Number]]  # kept numbers of fixed width: (first digit's offset, number)
    length: int  # bytes from where it starts in the line to the open number (or the line end)
    number: _Number | None  # the open number it ends on


def _read(head: bytes, units: list[_Unit]) -> _Read:
    """The read of `head` (the line's prefix, whose digits are open: the timestamp decides no
    field the field reader reads, and is parsed from the same bytes) and `units`, where every
    number but the last has a fixed width."""
    spec = [(c, _ANY if 48 <= c <= 57 else _FIXED) for c in head]
    fixed = []
    for unit in units:
        spec += [(c, _FIXED) for c in unit.text]
        n = unit.number
        if n is not None and n.width is not None:
            if n.name is not None:
                fixed.append((len(spec), n))
            spec += [(48, _DIGIT)] * n.width
            spec += [(46, _FIXED)] + [(48, _DIGIT)] * n.decimals if n.decimals else []
    last = units[-1].number
    lead = -len(spec) % 8
    spec = [(0, _ANY)] * lead + spec + [(0, _ANY)] * 8
    checks, digits = [], []
    for w in range(len(spec) // 8):
        keep = want = high = 0
        for i, (c, kind) in enumerate(spec[8 * w : 8 * w + 8]):
            if kind == _FIXED:
                keep, want = keep | 0xFF << 8 * i, want | c << 8 * i
            elif kind == _DIGIT:
                high |= 0x80 << 8 * i
        if keep:
            checks.append((w, _U(keep), _U(want)))
        if high:
            digits.append((w, _U(high)))
    fixed = [(lead + at, n) for at, n in fixed]
    number = last if last is not None and last.width is None else None
    return _Read(lead, len(spec), checks, digits, fixed, len(spec) - lead - 8, number)


@dataclass
class Pattern:
    """One line shape: a prefix of fixed width, then fixed texts and numbers to the end."""

    prefix: bytes
    units: list[_Unit]
    layout: Layout | None  # the decode layout (None: a line counted, not read)
    sig: Signature | None
    template: str = ""  # the line with its open numbers and prefix digits blanked: its identity
    hits: int = 0
    idle: int = 0  # chunks in a row it was tried on and matched nothing
    scale: dict[str, int] = field(default_factory=dict)  # kept number -> 10**decimals
    settled: bool = False  # its widths were looked at (a copy with fixed widths made, or not)

    def __post_init__(self) -> None:
        """A read per open number: a number of fixed width is read with the text around it."""
        self._reads: list[_Read] = []
        self.widths: list[np.ndarray] = []  # of each open number, on the rows last matched
        units = self.units or [_Unit(b"", None)]
        run: list[_Unit] = []
        for unit in units:
            run.append(unit)
            if unit.number is None or unit.number.width is None:
                self._reads.append(_read(b"" if self._reads else self.prefix, run))
                run = []
        if run:  # the line ends on a number of fixed width
            self._reads.append(_read(b"" if self._reads else self.prefix, run))

    def match(
        self, chunk: Chunk, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(rows that match, kept numbers as scaled integers) for lines [starts, ends).

        Reads are made in order, one gather each (where each starts depends on the widths of
        the open numbers before it); a row that differs anywhere is not ok.
        """
        ok = np.ones(len(starts), bool)
        at = starts
        values: dict[str, np.ndarray] = {}
        self.widths = []
        for r in self._reads:
            words = chunk.read(at - r.lead, r.size).view(np.uint64).reshape(len(at), -1)
            for w, keep, want in r.checks:
                ok &= (words[:, w] & keep) == want if keep != _ALL else words[:, w] == want
            for w, high in r.digits:
                t = words[:, w] ^ _ZEROS
                ok &= (((t + _NINES) | t) & high) == 0
            for offset, number in r.fixed:
                values[number.name] = _fixed_value(words, offset, number)  # type: ignore[index]
            at = at + r.length
            if r.number is not None:
                width = _number(r.number, words[:, -1], ok, values)
                self.widths.append(width)
                at = at + width + (1 + r.number.decimals if r.number.decimals else 0)
            if len(at) < FEW_ROWS and not ok.any():  # the few lines a pattern before left
                return ok, {}
        ok &= at == ends
        return ok, values

    def fixing(self, ok: np.ndarray) -> Pattern | None:
        """A copy with the numbers whose width hardly varies over the rows just matched (`ok`)
        fixed at that width, or None. It matches a subset of this pattern's lines with the same
        figures, in fewer gathers and fewer steps (no width to find, no point to take out); the
        lines of another width are left to this pattern."""
        seen = int(ok.sum())
        if seen < SETTLE_ROWS:
            return None  # too few to tell: looked at again after the next chunk
        self.settled = True
        numbers = [u.number for u in self.units if u.number is not None]  # all open: learned
        shares = []  # (share of the rows, which number, its most common width)
        for i, width in enumerate(self.widths):
            counts = np.bincount(width[ok])
            top = int(counts.argmax())
            if 1 <= top <= MAX_DIGITS - numbers[i].decimals:  # readable in one word
                shares.append((counts[top] / seen, i, top))
        fix, covered = {}, 1.0
        for share, i, top in sorted(shares, reverse=True):
            if share < FIXED_SHARE or covered * share < FIXED_COVER:
                break
            fix[i], covered = top, covered * share
        if not fix:
            return None
        units, i = [], 0
        for unit in self.units:
            if unit.number is not None:
                if i in fix:
                    unit = _Unit(unit.text, _Number(unit.number.decimals, unit.number.name, fix[i]))
                i += 1
            units.append(unit)
        return Pattern(self.prefix, units, self.layout, self.sig, self.template, self.hits + 1,
                       scale=self.scale, settled=True)  # fmt: skip


def _fixed_value(words: np.ndarray, offset: int, number: _Number) -> np.ndarray:
    """The value, scaled by 10**decimals, of a number of fixed width whose first digit is
    `offset` bytes into each record (its digits and point are checked with the text)."""
    q, r = divmod(offset, 8)
    x = words[:, q] if not r else (words[:, q] >> _U(8 * r)) | (words[:, q + 1] << _U(64 - 8 * r))
    t = x ^ _ZEROS
    width, dec = number.width or 0, number.decimals
    if dec:
        low = _U((1 << 8 * width) - 1)
        t = (t & low) | ((t >> _U(8)) & ~low)  # the point taken out: the digits in a row
    return _digits(t << _U(8 * (8 - width - dec)))


def _number(number: _Number, x: np.ndarray, ok: np.ndarray, values: dict) -> np.ndarray:
    """The width of the number at the start of each word `x` (its digits before any point); a kept
    number's value, scaled by 10**decimals, goes into `values`; rows it cannot be are not `ok`.

    An unkept number's point and decimals are skipped unchecked: no field the field reader reads
    can hide in them, and the text after them is checked. A number of no digit is never one: the
    text after it would catch that, but not where the line ends there (a line cut off after its
    last label, which the field reader calls cut off).
    """
    t = x ^ _ZEROS
    nondigit = ((t + _NINES) | t) & _HIGH
    width = np.bitwise_count((nondigit & -nondigit) - _U(1)) >> 3  # uint8, 0-8
    ok &= width != 0
    dec = number.decimals
    if number.name is not None:  # (an unkept number of too many digits fails the text after)
        ok &= (width - 1) <= (6 - dec if dec else MAX_DIGITS - 1)  # none wraps to 255
        shift = width << 3
        if dec:
            ok &= ((x >> shift) & _U(0xFF)) == _U(46)  # the point
            ok &= (nondigit >> (shift + 8)) & _U((1 << (8 * dec)) - 1) == 0  # the decimals
            low = (_U(1) << shift) - _U(1)
            x = (x & low) | ((x >> _U(8)) & ~low)  # the point taken out: the digits in a row
        values[number.name] = _value(x, width + dec)
    return width


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
        if not patterns[i].settled and (fixed := patterns[i].fixing(ok)) is not None:
            patterns.append(fixed)  # tried first from the next chunk on (one hit more)
        for name, v in found.items():
            if rows is None and name not in values:
                values[name] = v  # every row: no copy
            else:
                values.setdefault(name, np.zeros(len(starts), v.dtype))[hit] = v[ok]
        rows = np.flatnonzero(~ok) if rows is None else rows[~ok]
        if not len(rows):
            break
    return Matches(which, values)
