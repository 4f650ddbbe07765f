"""The field-by-field reader: one log line at a time, every engine's spelling.

Each line is a window (an acceptance figure read), an engine line without a figure, or unparsed
with the reason. The readers are tried in turn (LMDeploy before vLLM: both print `SpecDecoding
metrics:`); multi-line outputs (`vllm bench serve`, vLLM's spec_decode.py example) are read as
blocks. A line that names acceptance with a figure no reader understood is never counted as an
engine line: it is unparsed, with its text among the examples. Every other line (start-up output,
warnings, access-log and request lines, progress bars) holds no figure: it is not an unread line.
"""

from __future__ import annotations

from collections.abc import Callable

from kit.acceptance import (
    fields,
    llamacpp_log,
    lmdeploy_log,
    sglang_log,
    trtllm_stats,
    vllm_log,
    vllm_request,
)
from kit.acceptance.model import LogRun, Window
from kit.limits import try_loads

_GARBLED = (sglang_log.Garbled, vllm_log.Garbled, llamacpp_log.Garbled)
_JSON_MARKS = ("speculative_decoding", "mean_acceptance_length", "specDecodingStats",
               "numDraftTokens", "acceptanceLength")  # fmt: skip
NOT_UNDERSTOOD = "acceptance figure not understood"

Parsed = tuple[Window | None, tuple]


def json_fields(line: str) -> dict[str, fields.Value]:
    """The pairs of a JSON object in the line (or of JSON-like text when it does not decode)."""
    start, end = line.find("{"), line.rfind("}")
    if 0 <= start < end:
        obj = try_loads(line[start : end + 1])
        if isinstance(obj, dict):
            return fields.flatten(obj)
    return fields.pairs(line, lists=("acceptance histogram",))


def record(f: dict[str, fields.Value], line_no: int) -> Parsed | None:
    """A vLLM per-request object or a TensorRT-LLM iteration; (None, sig) for an iteration that
    drafted nothing; None for anything else."""
    w = vllm_request.window(f, line_no)
    if w is not None:
        return w, vllm_request.SIG
    if any(k in f for k in trtllm_stats.KEYS):
        return trtllm_stats.window(f, line_no), trtllm_stats.SIG
    return None


def parse(line: str, line_no: int) -> Parsed | None:
    """The window a line holds and its format signature; None if no reader knows the line.

    Raises one of the readers' `Garbled` for a line of a known kind that cannot be read.
    """
    parsed = (
        lmdeploy_log.parse_line(line, line_no)
        or sglang_log.parse_line(line, line_no)
        or vllm_log.parse_line(line, line_no)
        or llamacpp_log.parse_line(line, line_no)
    )
    if parsed is None and any(mark in line for mark in _JSON_MARKS):
        parsed = record(json_fields(line), line_no)
    return parsed


class LineReader:
    """Reads lines into a run, keeping the state of multi-line blocks between them.

    `learned(line)` is called for every line read with an SGLang prefix (a decode line, or an
    engine line without a figure), so the fast path can take later lines of its shape;
    `before_add()` before a window is folded in, so the fast path can fold the lines it holds
    that come first.
    """

    def __init__(
        self,
        run: LogRun,
        learned: Callable[[str], None] | None = None,
        before_add: Callable[[], None] | None = None,
    ) -> None:
        self.run = run
        self.learned = learned
        self.before_add = before_add or (lambda: None)
        self.block: vllm_log.BenchBlock | vllm_log.ExampleBlock | None = None
        self.last_request: Window | None = None  # llama.cpp: its per-position line comes next

    def feed(self, line: str, n: int) -> None:
        if self.block is not None and self._block(line, n):
            return
        try:
            parsed = parse(line, n)
        except _GARBLED as e:
            self.run.unparsed(str(e), line, n)
            return
        if parsed is not None:
            self._add(parsed, line)
        elif not self._positions(line):
            self._other(line, n)

    def finish(self) -> None:
        """Close a block the file ended in."""
        if isinstance(self.block, vllm_log.ExampleBlock) and (w := self.block.window()):
            self.before_add()
            add(self.run, w, ("vllm", "example", None), f"spec_decode.py output at {w.line_no}")
        self.block = None

    def _block(self, line: str, n: int) -> bool:
        """Feed an open block; False when the line is not part of it (the block closed)."""
        if isinstance(self.block, vllm_log.BenchBlock):
            try:
                w = self.block.feed(line)
            except ValueError:
                self.run.unparsed("garbled bench block", line, n)
                self.block = None
                return True
            if w is not None:
                self.before_add()
                add(self.run, w, ("vllm", "bench"), line)
                self.block = None
            return True
        if self.block.feed(line):
            return True
        self.finish()
        return False

    def _add(self, parsed: Parsed, line: str) -> None:
        w, sig = parsed
        if w is None:
            self.run.other_lines += 1
            return
        self.before_add()
        if add(self.run, w, sig, line) and self.learned and sig[0] == "sglang":
            self.learned(line)
        self.last_request = w if w.kind == "llama_request" else None

    def _positions(self, line: str) -> bool:
        """llama.cpp's `acc per pos = (…)` trace line after a request's acceptance line."""
        m = llamacpp_log.PER_POS_LINE.match(line) if self.last_request else None
        pp = fields.numbers(m[1]) if m else None
        if pp is None:
            return False
        self.run.add_positions(Window(per_position=pp, drafted=self.last_request.drafted))
        self.last_request = None
        return True

    def _other(self, line: str, n: int) -> None:
        run = self.run
        stripped = line.strip()
        if vllm_log.BenchBlock.START in line:
            self.block = vllm_log.BenchBlock(n)
        elif stripped.startswith(vllm_log.ExampleBlock.STARTS):
            self.block = vllm_log.ExampleBlock(n)
            self.block.feed(line)
        elif not stripped or set(stripped) <= {"-", "="}:
            return  # blank, or a separator line around result blocks
        elif "\x00" in line or "\ufffd" in line:
            run.unparsed("binary", line, n)
        elif fields.holds_acceptance_figure(line) and not vllm_log.is_request_line(line):
            run.unparsed(NOT_UNDERSTOOD, line, n)
        elif sglang_log.has_prefix(line):
            run.other_lines += 1
            if self.learned:
                self.learned(line)
        else:  # start-up, warnings, access log, progress bars, tracebacks: no figure to read
            run.other_lines += 1
            if (layers := vllm_log.aux_layers(line)) is not None:
                run.facts["aux_layers"] = layers  # what the engine says it captures
            elif vllm_log.KV_SCALE_DEFAULTED in line:
                run.facts["kv_scale_defaulted"] = f"line {n}: {line.strip()[:300]}"


def add(run: LogRun, w: Window, sig: tuple, line: str) -> bool:
    """Fold a window into the run; False for a line of a second engine (unparsed)."""
    if run.engine_name is None:
        run.engine_name = sig[0]
    elif run.engine_name != sig[0]:
        run.unparsed(f"{sig[0]} line in a {run.engine_name} log", line, w.line_no)
        return False
    run.formats[sig] += 1
    if "first" not in run.example_lines:
        run.example_lines["first"] = f"line {w.line_no}: {line.rstrip()[:400]}"
    if "floor" not in run.example_lines and w.at_floor:
        run.example_lines["floor"] = f"line {w.line_no}: {line.rstrip()[:400]}"
    run.add(w)
    return True
