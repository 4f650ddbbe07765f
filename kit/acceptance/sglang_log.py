"""SGLang log lines: `Decode batch` in every release's shape, the same fields pasted without their
line, and `avg_spec_accept_length=`.

Logger format `[%(asctime)s{.ms}{ DP/PP/TP/EP ranks}] %(message)s` (0.5.10
`utils/common.py:1136-1142`). The message is read by field name (`key: value` joined by `, `), so
hybrid-pool, PD-disaggregation, MFU and DSpark fields are read when present and never break the
parse. Every release ends a decode line with `#queue-req`; a line without it is one a user trimmed
(`[DP0 TP0] Decode batch, accept len: …, accept rate: …, cuda graph: …`) when its last field is
whole, and one cut off mid-field (unparsed) otherwise. A bare `accept len: …, accept rate: …` is
read the same way; its release is then told by the figures alone.
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass

from kit.acceptance.model import AT_FLOOR, Kind, Window

_PREFIX = re.compile(r"\[(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?)?(?: ?[A-Z_]+\d+)*\] ")
_EXTRA_KEYS = ("cap len", "block accept len")
_AVG = re.compile(r"avg_spec_accept_length=([0-9.]+)\s*$")
# The last field of a trimmed line: SGLang prints figures with `:.2f`, counts as integers.
_WHOLE_FIELD = re.compile(r"[^:,]+: (?:\d+\.\d\d|\d+|True|False)")
FRAGMENT_KEY = "accept len: "
_FRAGMENT = re.compile(r"(?<![\w-])(?<!block )accept len: ")

# (engine, header, has rate, graph label or None, trailing ", " (None: trimmed), extra fields)
Signature = tuple[str, str, bool | None, str | None, bool | None, tuple[str, ...]]


class Garbled(Exception):
    """A line that starts like an SGLang decode line but cannot be read (cut off, mangled)."""


_last_minute: list = [None, 0]  # (the "YYYY-MM-DD HH:MM" text, its epoch): logs are in order


def timestamp(line: str) -> float | None:
    """Seconds for the `[YYYY-MM-DD HH:MM:SS(.mmm)…]` prefix, or None without one."""
    if line[:1] != "[" or line[5:6] != "-" or line[11:12] != " ":
        return None
    minute = line[1:17]
    try:
        if minute != _last_minute[0]:
            y, mo, d, h, mi = (
                int(minute[:4]),
                int(minute[5:7]),
                int(minute[8:10]),
                int(minute[11:13]),
                int(minute[14:16]),
            )
            _last_minute[:] = [minute, calendar.timegm((y, mo, d, h, mi, 0))]
        t = _last_minute[1] + int(line[18:20])
        return t + int(line[21:24]) / 1000 if line[20:21] == "." else float(t)
    except ValueError:
        return None


def has_prefix(line: str) -> bool:
    return _PREFIX.match(line) is not None


def _value(text: str, key: str) -> tuple[int, int] | None:
    """Where the value after `key` sits: up to the next comma (fields are `key: value, ...`)."""
    i = text.find(key)
    if i < 0:
        return None
    i += len(key)
    j = text.find(",", i)
    return i, (j if j >= 0 else len(text))


def _slice(span: tuple[int, int] | None, offset: int) -> slice | None:
    return None if span is None else slice(span[0] + offset, span[1] + offset)


def _num(line: str, where: slice | None, kind: type[float] | type[int]) -> float | int | None:
    """The figure at `where`; a ValueError (a garbled line) for one too large to be a figure
    (`accept len: 999…9` reads as infinity, and later sums and int() would carry it)."""
    if where is None:
        return None
    value = kind(line[where])
    if not abs(value) <= MAX_FIGURE:  # NaN too; an int never becomes a float here (10**400)
        raise ValueError(f"{line[where][:24]!r} is not a finite figure")
    return value


MAX_FIGURE = 1e15  # no accept len, rate, throughput or request count comes near


@dataclass(slots=True)
class Layout:
    """Where a decode line's figures sit (slices of the line) and its format signature.

    Lines that differ only in their digits share a layout, so a layout read once serves every
    later line of that shape (`kit.acceptance.columns`).
    """

    sig: Signature
    accept_len: slice | None
    accept_rate: slice | None
    throughput: slice | None
    running: slice | None

    def window(self, line: str, line_no: int) -> Window:
        """The line's window; raises `Garbled` when a figure is not a number."""
        try:
            return Window(
                t=timestamp(line),
                accept_len=_num(line, self.accept_len, float),
                accept_rate=_num(line, self.accept_rate, float),
                throughput=_num(line, self.throughput, float),
                running=_num(line, self.running, int),
                line_no=line_no,
                kind=Kind.DECODE,
            )
        except ValueError as e:
            raise Garbled(f"decode field: {e}") from None

    def at_floor(self, line: str) -> bool:
        """Accept len 1.00 as printed (`Window.at_floor` for a line with no token counts)."""
        return self.accept_len is not None and float(line[self.accept_len]) < AT_FLOOR


def _header(body: str) -> tuple[str, int]:
    """The decode header after `Decode batch` and how many characters it takes."""
    if body.startswith(". "):
        return "dot", 2
    if body.startswith(", "):
        return "comma", 2
    if body.startswith(" ["):
        end = body.find("], ")
        if end > 2 and body[2:end].isdigit():
            return "iter", end + 3
    raise Garbled("decode header")


def _trimmed(rest: str) -> bool:
    """A line without `#queue-req` is one a user trimmed when it still holds accept len and its
    last field is whole; otherwise it was cut off."""
    if ", accept len: " not in ", " + rest:
        return False
    last = rest.rstrip(", ").rsplit(", ", 1)[-1]
    return rest.endswith(", ") or _WHOLE_FIELD.fullmatch(last) is not None


def _fields(rest: str, at: int, header: str, trailing: bool | None) -> Layout:
    """The layout of the fields in `rest` (which starts `at` characters into the line)."""
    g = rest.find(" graph: ")
    graph = rest[rest.rfind(", ", 0, g) + 2 : g] + " graph" if g >= 0 else None
    al = _slice(_value(", " + rest, ", accept len: "), at - 2)
    ar = _slice(_value(rest, ", accept rate: "), at)
    extras = (
        tuple(k for k in _EXTRA_KEYS if f", {k}: " in rest)
        if "cap len" in rest or "block" in rest
        else ()
    )
    rate = None if al is None else ar is not None
    return Layout(
        sig=("sglang", header, rate, graph, trailing, extras),
        accept_len=al,
        accept_rate=ar,
        throughput=_slice(_value(rest, ", gen throughput (token/s): "), at),
        running=_slice(_value(", " + rest, ", #running-req: "), at - 2),
    )


def decode_layout(line: str) -> Layout | None:
    """The layout of a `Decode batch` line; None for any other line.

    Raises `Garbled` for a decode line whose header cannot be read or that was cut off.
    """
    i = line.find("Decode batch")
    if i < 0:
        return None
    start = i + 12
    body = line[start:].rstrip("\r\n")
    header, skip = _header(body)
    rest, at = body[skip:], start + skip
    queue = _value(rest, ", #queue-req: ")
    if queue is not None and rest[queue[0] : queue[1]].isdigit():
        return _fields(rest, at, header, rest.endswith(", "))
    if _trimmed(rest):
        return _fields(rest, at, header, None)
    raise Garbled("decode line cut off before #queue-req")


def fragment_layout(line: str) -> Layout | None:
    """The layout of decode fields pasted without their `Decode batch` line
    (`accept len: 1.00, accept rate: 0.20`); None when the line holds no accept len."""
    m = _FRAGMENT.search(line)
    if m is None or "Decode batch" in line:
        return None
    rest = line[m.start() :].rstrip("\r\n")
    if not _trimmed(rest):
        raise Garbled("accept len fields cut off")
    return _fields(rest, m.start(), "fields", None)


def parse_line(line: str, line_no: int) -> tuple[Window, Signature] | None:
    """A window for an acceptance line; None if the line is not an SGLang acceptance line.

    Raises `Garbled` for a decode line that cannot be read.
    """
    layout = decode_layout(line)
    if layout is None and FRAGMENT_KEY in line:
        layout = fragment_layout(line)
    if layout is not None:
        return layout.window(line, line_no), layout.sig
    m = _AVG.search(line) if "avg_spec_accept_length=" in line else None
    if m is None:
        return None
    al = float(m.group(1))
    if not math.isfinite(al) or al > MAX_FIGURE:
        return None
    w = Window(t=timestamp(line), accept_len=al, line_no=line_no, kind=Kind.AVG_SPEC)
    return w, ("sglang", "avg_spec", False, None, False, ())
