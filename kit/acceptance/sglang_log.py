"""SGLang log lines: `Decode batch` in every release's shape, and `avg_spec_accept_length=`.

Logger format `[%(asctime)s{.ms}{ DP/PP/TP/EP ranks}] %(message)s` (sglang-eagle3.md §F.1). The
message is split into `key: value` fields, so hybrid-pool, PD-disaggregation, MFU and DSpark
fields are read when present and never break the parse. A decode line without `#queue-req` (every
release prints it) was cut off and counts as unparsed.
"""

from __future__ import annotations

import calendar
import re

from kit.acceptance.model import Window

_PREFIX = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] "
)
_GRAPH_KEYS = ("cuda graph", "cpu graph", "npu graph", "musa graph")
_EXTRA_KEYS = ("cap len", "block accept len")
_AVG = re.compile(r"avg_spec_accept_length=([0-9.]+)\s*$")

# (header, has rate, graph label or None, trailing ", ", extra fields present)
Signature = tuple[str, str, bool | None, str | None, bool, tuple[str, ...]]


class Garbled(Exception):
    """A line that starts like an SGLang decode line but cannot be read (cut off, mangled)."""


_midnight: dict[tuple[str, str, str], int] = {}


def timestamp(line: str) -> float | None:
    """Seconds for the `[YYYY-MM-DD HH:MM:SS(.mmm)…]` prefix, or None without one."""
    m = _PREFIX.match(line)
    if not m:
        return None
    y, mo, d, hh, mm, ss, ms, _ranks = m.groups()
    day = _midnight.get((y, mo, d))
    if day is None:
        day = _midnight[(y, mo, d)] = calendar.timegm((int(y), int(mo), int(d), 0, 0, 0))
    t = day + int(hh) * 3600 + int(mm) * 60 + int(ss)
    return t + int(ms) / 1000 if ms else float(t)


def has_prefix(line: str) -> bool:
    return _PREFIX.match(line) is not None


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
    fields = {}
    for part in rest.split(", "):
        key, sep, value = part.partition(": ")
        if sep:
            fields[key] = value
    queue = fields.get("#queue-req")
    if queue is None or not queue.isdigit():
        raise Garbled("decode line cut off before #queue-req")
    graph = next((k for k in _GRAPH_KEYS if k in fields), None)
    try:
        al = fields.get("accept len")
        ar = fields.get("accept rate")
        tp = fields.get("gen throughput (token/s)")
        w = Window(
            t=timestamp(line),
            accept_len=float(al) if al is not None else None,
            accept_rate=float(ar) if ar is not None else None,
            throughput=float(tp) if tp is not None else None,
            running=int(fields["#running-req"]) if "#running-req" in fields else None,
            line_no=line_no,
        )
    except ValueError as e:
        raise Garbled(f"decode field: {e}") from None
    extras = tuple(k for k in _EXTRA_KEYS if k in fields)
    rate = None if al is None else ar is not None
    return w, ("sglang", header, rate, graph, trailing, extras)
