"""vLLM spec-decode log lines (V0 and the three V1 families), `vllm bench serve` blocks and the
output of `examples/offline_inference/spec_decode.py`.

Prefix `%(levelname)s %(asctime)s [%(filename)s:%(lineno)d]` (date `%m-%d %H:%M:%S`), optionally
led by `(APIServer pid=N) ` (any process name: `EngineCore_DP0`, `VllmWorker-0`; 0.32.0
logger.py:28-33). A line in a released family's exact shape takes that family's
pattern; any other order of the same fields is read field by field (`kit.acceptance.fields`) and
the family is told by which fields it has. vLLM prints no year, so times are placed in 2000 (a leap
year).

V0 (`Speculative metrics:`) counts a draft token accepted even after an earlier rejection, while
only the accepted prefix plus one token is emitted: its accept length is emitted tokens per verify
step, `emitted · k / draft tokens` (`kit.engines.vllm.acceptance.V0_ACCEPT_LEN`).
"""

from __future__ import annotations

import calendar
import re

from kit.acceptance import fields
from kit.acceptance.model import Kind, Window

_NUM = r"(?:[0-9.]+|nan)"
_PP = r"(?P<pp>[0-9., na]*?)"
FAMILIES: dict[str, re.Pattern[str]] = {
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
PER_POSITION = ("per position acceptance rate",)
_PREFIX = re.compile(
    r"^(?:\((?P<proc>[\w.-]+) pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?:\.\d+)? "
    r"\[?(?P<file>[\w.]+):(?P<line>\d+)\]"
)
V1_MARK, V0_MARK = "SpecDecoding metrics:", "Speculative metrics:"
# LMDeploy prints the V1 fields with a two-decimal rate on its `Avg thr` line.
_LMDEPLOY_RATE = re.compile(r"Draft acceptance rate: \d+\.\d\d%")

Signature = tuple[str, str, int | None]

# vLLM's warning (once) when an FP8 KV cache layer has no k/v scales in its checkpoint (0.11.0
# model_executor/layers/quantization/kv_cache.py:98-103; 0.33.0 :164-169)
KV_SCALE_DEFAULTED = "Using KV cache scaling factor 1.0 for fp8_e4m3"


# The layers the target captures for an EAGLE-3 draft, when the draft config names them: vLLM's
# own start-up line (0.32.0 v1/worker/gpu_model_runner.py:5241-5245; none for the default ids).
_AUX_LAYERS = re.compile(r"Using auxiliary layers from speculative config: \(([\d,\s]*)\)")


def aux_layers(line: str) -> list[int] | None:
    """The aux layer ids vLLM says it captures, from its start-up line; None for another line."""
    m = _AUX_LAYERS.search(line)
    if m is None:
        return None
    return [int(i) for i in m.group(1).replace(",", " ").split()]


class Garbled(Exception):
    """A spec-decode line whose figures cannot be read (cut off or mangled)."""


def prefix(line: str) -> re.Match[str] | None:
    return _PREFIX.match(line)


# The request logger (`--enable-log-requests`) quotes prompts and outputs, whatever words they use
# (0.32.0 entrypoints/serve/utils/request_logger.py:55-114).
_REQUEST_LOG = ("Received request ", "Generated response ", "Request ")


def is_request_line(line: str) -> bool:
    """A vLLM request-logger line: user text, never an acceptance figure."""
    m = _PREFIX.match(line)
    return m is not None and line[m.end() :].lstrip().startswith(_REQUEST_LOG)


def _time(m: re.Match[str] | None) -> float | None:
    if m is None:
        return None
    day = calendar.timegm((2000, int(m["mo"]), int(m["d"]), 0, 0, 0))
    return float(day + int(m["h"]) * 3600 + int(m["m"]) * 60 + int(m["s"]))


def is_lmdeploy(line: str) -> bool:
    return "Avg thr (in/out)" in line or _LMDEPLOY_RATE.search(line) is not None


def _v1_family(f: dict[str, str]) -> str:
    if "avg draft acceptance rate" in f:
        return "v1-0.10.2"
    return "v1-0.8.5" if "mean acceptance length" in f else "v1-0.8.3"


def v1_fields(text: str) -> tuple[Window, str]:
    """A V1-style window (vLLM, LMDeploy) read by field name, and its family."""
    f = fields.pairs(text, lists=PER_POSITION)
    accepted, drafted = fields.count(f.get("accepted")), fields.count(f.get("drafted"))
    rate = f.get("avg draft acceptance rate", f.get("draft acceptance rate"))
    pp = f.get("per position acceptance rate")
    per_position = fields.numbers(pp) if pp else None
    if accepted is None or drafted is None or rate is None or (pp and per_position is None):
        raise Garbled("spec-decode line without whole Accepted / Drafted / rate figures")
    w = Window(
        accept_len=fields.number(f.get("mean acceptance length")),
        accept_rate=fields.number(rate),
        per_position=per_position,
        accepted=accepted,
        drafted=drafted,
        kind=Kind.SPEC_LOG,
    )
    return w, _v1_family(f)


def _v1_known(line: str) -> tuple[Window, str] | None:
    for family, pattern in FAMILIES.items():
        m = pattern.search(line)
        if m:
            g = m.groupdict()
            pp = fields.numbers(g["pp"]) if g.get("pp") else None
            if g.get("pp") and pp is None:
                raise Garbled("per-position rates")
            w = Window(
                accept_len=fields.number(g.get("al")),
                accept_rate=fields.number(g["pct"] + "%"),
                per_position=pp,
                accepted=int(g["acc"]),
                drafted=int(g["dr"]),
                kind=Kind.SPEC_LOG,
            )
            return w, family
    return None


def v0_fields(text: str) -> Window:
    """V0 `Speculative metrics:`: accept len from emitted tokens per verify step."""
    f = fields.pairs(text)
    k = fields.count(f.get("number of speculative tokens"))
    drafted = fields.count(f.get("number of draft tokens"))
    emitted = fields.count(f.get("number of emitted tokens"))
    if k is None or drafted is None or emitted is None:
        raise Garbled("Speculative metrics line without whole token counts")
    steps = drafted // k if k and drafted % k == 0 else None
    return Window(
        accept_len=emitted / steps if steps else None,
        accept_rate=fields.number(f.get("draft acceptance rate")),
        accepted=emitted - steps if steps else None,
        drafted=drafted if steps else None,
        kind=Kind.V0_LOG,
    )


def parse_line(line: str, line_no: int) -> tuple[Window, Signature] | None:
    """A window for a vLLM spec-decode metrics line; None if the line is not one.

    Raises `Garbled` when its figures cannot be read.
    """
    if V1_MARK in line:
        known = _v1_known(line)
        w, family = known or v1_fields(line[line.index(V1_MARK) :])
    elif V0_MARK in line or "System efficiency" in line:
        w, family = v0_fields(line), "v0"
    else:
        return None
    pm = _PREFIX.match(line)
    w.t, w.line_no = _time(pm), line_no
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
            kind=Kind.BENCH,
        )


_EXAMPLE_KEYS = (
    "total num output tokens",
    "num drafts",
    "num draft tokens",
    "num accepted tokens",
    "mean acceptance length",
)
_AT_TOKEN = re.compile(r"^acceptance at token (\d+): ([0-9.]+)\s*$")


class ExampleBlock:
    """Reads what `examples/offline_inference/spec_decode.py` prints after its run: one figure a
    line (`num_drafts: …` … `mean acceptance length: …`, then `acceptance at token i: …`)."""

    STARTS = ("num_drafts: ", "total_num_output_tokens: ")

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no
        self.values: dict[str, float] = {}
        self.positions: list[float] = []

    def feed(self, line: str) -> bool:
        """Take a line of the block; False when the line is not part of it (the block is over)."""
        text = line.strip()
        if not text or set(text) == {"-"}:
            return True
        m = _AT_TOKEN.match(text)
        if m and int(m[1]) == len(self.positions):
            self.positions.append(float(m[2]))
            return True
        name, sep, raw = text.partition(": ")
        k = fields.key(name)
        if sep and k in _EXAMPLE_KEYS and fields.number(raw) is not None:
            self.values[k] = fields.number(raw)  # type: ignore[assignment]
            return True
        return False

    def window(self) -> Window | None:
        v = self.values
        drafts, accepted = v.get("num drafts"), v.get("num accepted tokens")
        al = v.get("mean acceptance length")
        if al is None and drafts:
            al = 1 + (accepted or 0) / drafts
        if al is None:
            return None
        return Window(
            accept_len=al,
            accept_rate=accepted / v["num draft tokens"] if v.get("num draft tokens") else None,
            per_position=tuple(self.positions) or None,
            accepted=int(accepted) if accepted is not None else None,
            drafted=int(v["num draft tokens"]) if "num draft tokens" in v else None,
            line_no=self.line_no,
            kind=Kind.EXAMPLE,
        )
