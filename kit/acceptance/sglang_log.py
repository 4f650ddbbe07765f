"""SGLang log lines: `Decode batch` in every release's shape, and `avg_spec_accept_length=`.

Logger format `[%(asctime)s{.ms}{ DP/PP/TP/EP ranks}] %(message)s` (sglang-eagle3.md §F.1). The
message is read by field name (`key: value` joined by `, `), so hybrid-pool, PD-disaggregation,
MFU and DSpark fields are read when present and never break the parse. A decode line without
`#queue-req` (every release prints it) was cut off and counts as unparsed.
"""

from __future__ import annotations

import calendar
import re

from kit.acceptance.model import Window

_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?(?: [A-Z_]+\d+)*\] ")
_EXTRA_KEYS = ("cap len", "block accept len")
_AVG = re.compile(r"avg_spec_accept_length=([0-9.]+)\s*$")

# (header, has rate, graph label or None, trailing ", ", extra fields present)
Signature = tuple[str, str, bool | None, str | None, bool, tuple[str, ...]]


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


def _field(text: str, key: str) -> str | None:
    """The value after `key` up to the next comma (fields are `key: value` joined by ", ")."""
    i = text.find(key)
    if i < 0:
        return None
    i += len(key)
    j = text.find(",", i)
    return text[i:j] if j >= 0 else text[i:]


def parse_line(line: str, line_no: int) -> tuple[Window, Signature] | None:
    """A window for a decode line; None if the line is not an SGLang acceptance line.

    Raises `Garbled` for a decode line that cannot be read.
    """
    i = line.find("Decode batch")
    if i < 0:
        m = _AVG.search(line) if "avg_spec_accept_length=" in line else None
        if m is None:
            return None
        w = Window(
            t=timestamp(line), accept_len=float(m.group(1)), line_no=line_no, kind="avg_spec"
        )
        return w, ("sglang", "avg_spec", False, None, False, ())
    body = line[i + 12 :].rstrip("\r\n")
    if body.startswith(". "):
        header, rest = "dot", body[2:]
    elif body.startswith(", "):
        header, rest = "comma", body[2:]
    elif body.startswith(" ["):
        end = body.find("], ")
        if end < 0 or not body[2:end].isdigit():
            raise Garbled("decode header")
        header, rest = "iter", body[end + 3 :]
    else:
        raise Garbled("decode header")
    trailing = rest.endswith(", ")
    queue = _field(rest, ", #queue-req: ")
    if queue is None or not queue.isdigit():
        raise Garbled("decode line cut off before #queue-req")
    g = rest.find(" graph: ")
    graph = rest[rest.rfind(", ", 0, g) + 2 : g] + " graph" if g >= 0 else None
    al = _field(rest, ", accept len: ")
    ar = _field(rest, ", accept rate: ")
    tp = _field(rest, ", gen throughput (token/s): ")
    running = _field(", " + rest, ", #running-req: ")
    try:
        w = Window(
            t=timestamp(line),
            accept_len=float(al) if al is not None else None,
            accept_rate=float(ar) if ar is not None else None,
            throughput=float(tp) if tp is not None else None,
            running=int(running) if running is not None else None,
            line_no=line_no,
        )
    except ValueError as e:
        raise Garbled(f"decode field: {e}") from None
    extras = (
        tuple(k for k in _EXTRA_KEYS if f", {k}: " in rest)
        if "cap len" in rest or "block" in rest
        else ()
    )
    rate = None if al is None else ar is not None
    return w, ("sglang", header, rate, graph, trailing, extras)
