"""`parse_files`: read logs, metrics and JSON into `Run`s, one per file, streaming line by line.

The kind of file is told from its first bytes: JSON (server info, meta_info, JSON lines),
Prometheus text, or a log. A log may hold SGLang lines, vLLM lines and `vllm bench serve` blocks;
lines of a second engine, garbage, binary and cut-off lines are counted as unparsed, never fatal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from kit.acceptance import prometheus, release, server_info, sglang_log, vllm_log
from kit.acceptance.model import Run, Window
from kit.acceptance.shapes import Shapes
from kit.engines import parse_engine
from kit.errors import KitError

MAX_LINE = 1 << 16  # longer "lines" (binary data without newlines) are skipped in chunks
JSON_WHOLE_LIMIT = 64 << 20
_ACCESS_LOG = ("INFO:  ", "WARNING:  ", "ERROR:  ")  # uvicorn lines in both engines' server logs


def parse_files(
    paths: Iterable[str | Path],
    engine: str | None = None,
    num_draft_tokens: int | None = None,
    num_steps: int | None = None,
    topk: int | None = None,
) -> list[Run]:
    """One `Run` per file. `engine` (e.g. "sglang==0.5.10") wins over what the format implies."""
    given = parse_engine(engine) if engine else None
    runs = []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise KitError("no such file" if not p.exists() else "not a file", p)
        run = Run(
            source=str(path), num_draft_tokens=num_draft_tokens, num_steps=num_steps, topk=topk
        )
        read_file(p, run)
        release.infer(run, given)
        if run.engine_name == "sglang" and topk == 1 and num_draft_tokens and not num_steps:
            run.num_steps = num_draft_tokens - 1  # SGLang forces D = num_steps + 1 at topk 1
        runs.append(run)
    return runs


def read_file(path: Path, run: Run) -> None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
            f.seek(0)
            stripped = head.lstrip()
            if stripped[:1] == "{" or (stripped[:1] == "[" and stripped[1:].lstrip()[:1] in "{]"):
                _read_json(f, path, run)
            elif prometheus.looks_like(stripped) and "Decode batch" not in head:
                try:
                    prometheus.read(f, run)
                except KitError as e:
                    run.notes.append(e.problem)
                    f.seek(0)
                    read_lines(f, run)
            else:
                read_lines(f, run)
    except OSError as e:
        raise KitError(f"cannot read: {e.strerror or e}", path) from None


def _read_json(f: TextIO, path: Path, run: Run) -> None:
    if path.stat().st_size <= JSON_WHOLE_LIMIT:
        try:
            obj = json.load(f)
        except json.JSONDecodeError:
            f.seek(0)
        else:
            if not server_info.read(obj, run):
                run.unparsed("json without acceptance fields", json.dumps(obj)[:160], 1)
            return
    for n, line in enumerate(_lines(f, run), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            run.unparsed("garbled json", line, n)
            continue
        if not server_info.read(obj, run, n):
            run.unparsed("json without acceptance fields", line, n)


def _lines(f: TextIO, run: Run) -> Iterable[str]:
    """Lines of at most MAX_LINE characters; an over-long one is skipped and counted once."""
    n = 0
    while line := f.readline(MAX_LINE):
        n += 1
        if len(line) == MAX_LINE and not line.endswith("\n"):
            while (rest := f.readline(MAX_LINE)) and not rest.endswith("\n"):
                pass
            run.unparsed("over-long line", line, n)
            yield ""
            continue
        yield line


def read_lines(f: TextIO, run: Run) -> None:
    """The log loop: every line is a window, an engine line without figures, or unparsed.

    SGLang decode lines of a shape already read take the fast path (`kit.acceptance.shapes`).
    """
    bench: vllm_log.BenchBlock | None = None
    shapes = Shapes()
    for n, line in enumerate(_lines(f, run), 1):
        if shapes.fold(line, n, run):
            continue
        try:
            parsed = sglang_log.parse_line(line, n) or vllm_log.parse_line(line, n)
        except (sglang_log.Garbled, vllm_log.Garbled) as e:
            run.unparsed(str(e), line, n)
            continue
        if parsed is not None:
            if _add(run, *parsed, line=line):
                shapes.learn(line)
        elif bench is not None:
            try:
                w = bench.feed(line)
            except ValueError:
                run.unparsed("garbled bench block", line, n)
                bench = None
                continue
            if w is not None:
                _add(run, w, ("vllm", "bench"), line=line)
                bench = None
        elif vllm_log.BenchBlock.START in line:
            bench = vllm_log.BenchBlock(n)
        elif not line.strip():
            continue
        elif "\x00" in line or "\ufffd" in line:
            run.unparsed("binary", line, n)
        elif line.startswith(_ACCESS_LOG) or sglang_log.has_prefix(line) or vllm_log.prefix(line):
            run.other_lines += 1
        else:
            run.unparsed("unknown line", line, n)
    shapes.finish(run)


def _add(run: Run, w: Window, sig: tuple, line: str) -> bool:
    """Fold a parsed window into the run; False for a line of a second engine (unparsed)."""
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
