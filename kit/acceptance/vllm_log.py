"""vLLM spec-decode log lines (V0 and the three V1 families) and `vllm bench serve` blocks.

Formats from vllm-eagle3.md §5. Prefix `%(levelname)s %(asctime)s [%(filename)s:%(lineno)d]`
(date `%m-%d %H:%M:%S`), optionally led by `(APIServer pid=N) `; the call line of
`metrics.py` pins the release. vLLM prints no year, so times are placed in 2000 (a leap year).
"""

from __future__ import annotations

import calendar
import re

from kit.acceptance.model import Window

_NUM = r"(?:[0-9.]+|nan)"
_PP = r"(?P<pp>[0-9., na]*?)"
FAMILIES: dict[str, re.Pattern[str]] = {
    "v0": re.compile(
        rf"Speculative metrics: Draft acceptance rate: (?P<rate>{_NUM}), System efficiency: "
        rf"(?P<eff>{_NUM}), Number of speculative tokens: (?P<k>\d+), Number of accepted tokens: "
        r"(?P<acc>\d+), Number of draft tokens: (?P<dr>\d+), Number of emitted tokens: (?P<em>\d+)\."
        r"\s*$"
    ),
    "v1-0.8.3": re.compile(
        rf"SpecDecoding metrics: Draft acceptance rate: (?P<pct>{_NUM})%, Accepted: (?P<acc>\d+) "
        r"tokens, Drafted: (?P<dr>\d+) tokens\s*$"
    ),
    "v1-0.8.5": re.compile(
        rf"SpecDecoding metrics: Draft acceptance rate: (?P<pct>{_NUM})%, Mean acceptance length: "
        rf"(?P<al>{_NUM}), Accepted: (?P<acc>\d+) tokens, Drafted: (?P<dr>\d+) tokens, "
        rf"Per-position acceptance rate: {_PP}\s*$"
    ),
    "v1-0.10.2": re.compile(
        rf"SpecDecoding metrics: Mean acceptance length: (?P<al>{_NUM}), Accepted throughput: "
        rf"(?P<atp>{_NUM}) tokens/s, Drafted throughput: (?P<dtp>{_NUM}) tokens/s, Accepted: "
        r"(?P<acc>\d+) tokens, Drafted: (?P<dr>\d+) tokens, Per-position acceptance rate: "
        rf"{_PP}, Avg Draft acceptance rate: (?P<pct>{_NUM})%\s*$"
    ),
}
_PREFIX = re.compile(
    r"^(?:\((?P<proc>\w+) pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?:\.\d+)? "
    r"\[?(?P<file>[\w.]+):(?P<line>\d+)\]"
)


class Garbled(Exception):
    """A spec-decode line that matches no family (cut off or mangled)."""


def prefix(line: str) -> re.Match[str] | None:
    return _PREFIX.match(line)


def _time(m: re.Match[str] | None) -> float | None:
    if m is None:
        return None
    day = calendar.timegm((2000, int(m["mo"]), int(m["d"]), 0, 0, 0))
    return float(day + int(m["h"]) * 3600 + int(m["m"]) * 60 + int(m["s"]))


def _f(text: str | None) -> float | None:
    return None if text is None or text == "nan" else float(text)


def _match(line: str) -> tuple[str, re.Match[str]]:
    for family, pattern in FAMILIES.items():
        m = pattern.search(line)
        if m:
            return family, m
    raise Garbled("spec-decode line matches no vLLM family")


def parse_line(line: str, line_no: int) -> tuple[Window, tuple[str, str, int | None]] | None:
    """A window for a spec-decode metrics line; None if the line is not one. Raises `Garbled`."""
    if "SpecDecoding metrics:" not in line and "Speculative metrics:" not in line:
        return None
    family, m = _match(line)
    g = m.groupdict()
    accepted, drafted = int(g["acc"]), int(g["dr"])
    per_position = None
    if g.get("pp"):
        try:
            per_position = tuple(float(p) for p in g["pp"].split(", "))
        except ValueError:
            raise Garbled("per-position rates") from None
    rate = _f(g["rate"]) if family == "v0" else _f(g["pct"])
    if rate is not None and family != "v0":
        rate /= 100
    al = _f(g.get("al"))
    if family == "v0" and drafted:
        al = 1 + accepted * int(g["k"]) / drafted  # num_drafts = draft tokens / k
    pm = _PREFIX.match(line)
    w = Window(
        t=_time(pm),
        accept_len=al,
        accept_rate=rate,
        per_position=per_position,
        accepted=accepted,
        drafted=drafted,
        line_no=line_no,
    )
    call_line = int(pm["line"]) if pm and pm["file"] == "metrics.py" else None
    return w, ("vllm", family, call_line)


_BENCH_FIELDS = {
    "Acceptance rate (%):": "pct",
    "Acceptance length:": "al",
    "Drafts:": "drafts",
    "Draft tokens:": "dr",
    "Accepted tokens:": "acc",
    "Output token throughput (tok/s):": "tput",
}


class BenchBlock:
    """Reads a `vllm bench serve` result block, one line at a time (vllm/benchmarks/serve.py)."""

    START = "Serving Benchmark Result"

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no
        self.values: dict[str, float] = {}
        self.positions: list[float] = []

    def feed(self, line: str) -> Window | None:
        """Take one line of the block; returns the window when the closing `=====` line arrives."""
        text = line.strip()
        if text and set(text) == {"="}:
            return self.window()
        if text.startswith("Position "):
            self.positions.append(float(text.split(":", 1)[1]) / 100)
            return None
        for label, key in _BENCH_FIELDS.items():
            if text.startswith(label):
                self.values[key] = float(text[len(label) :])
                break
        return None

    def window(self) -> Window:
        v = self.values
        return Window(
            accept_len=v.get("al"),
            accept_rate=v["pct"] / 100 if "pct" in v else None,
            per_position=tuple(self.positions) or None,
            accepted=int(v["acc"]) if "acc" in v else None,
            drafted=int(v["dr"]) if "dr" in v else None,
            throughput=v.get("tput"),
            line_no=self.line_no,
            kind="bench",
        )
