"""`parse_files`: read logs, metrics and JSON into `LogRun`s, one per file, in flat memory.

The kind of file is told from its first bytes: JSON (server info, meta_info, per-request metrics,
iteration statistics; one value or JSON lines), Prometheus text, or a log. A log may hold any
engine's lines, pasted fragments and multi-line result blocks (`kit.acceptance.logfile`); lines of
a second engine, garbage, binary and cut-off lines are counted as unparsed, never fatal.

The engine may be named with a release (`sglang==0.5.10`), by name only (`sglang`: the format
tells the era) or not at all.
"""

from __future__ import annotations

import difflib
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from kit.acceptance import fields, filekind, lines, prometheus, release, server_info
from kit.acceptance.logfile import LogReader
from kit.acceptance.model import LogRun
from kit.engines import RELEASES, EngineRelease, did_you_mean, parse_engine
from kit.errors import KitError
from kit.limits import NOT_JSON, try_loads

JSON_WHOLE_LIMIT = 64 << 20
FAMILIES = ("sglang", "vllm", "lmdeploy", "tensorrt_llm", "llama.cpp")  # engines the logs name


def given_engine(text: str | None) -> tuple[str | None, EngineRelease | None]:
    """`sglang==0.5.10` → ("sglang", release); `sglang` → ("sglang", None); None → (None, None)."""
    if not text:
        return None, None
    name = text.strip().partition("==")[0].strip().lower()
    if "==" in text and name in RELEASES:
        return name, parse_engine(text)
    if "==" in text and name in FAMILIES:
        raise KitError(
            f"no {name} releases are modelled yet; give --engine {name} (the name alone)"
        )
    if name not in FAMILIES:
        known = ", ".join(f"{n}==X" for n in RELEASES)
        hint = did_you_mean(text, FAMILIES) or next(
            iter(difflib.get_close_matches(name.replace("-", "_"), FAMILIES, n=1)), None
        )
        raise KitError(
            f"unknown engine {text!r}; "
            + (f"did you mean {hint}? " if hint else "")
            + f"use {known}, or a name alone: {', '.join(FAMILIES)}"
        )
    return name, None


def parse_files(
    paths: Iterable[str | Path],
    engine: str | None = None,
    num_draft_tokens: int | None = None,
    num_steps: int | None = None,
    topk: int | None = None,
) -> list[LogRun]:
    """One `LogRun` per file. `engine` (`sglang==0.5.10`, or `sglang` for the family only) wins
    over what the format implies; a disagreement is recorded as a conflict."""
    name, given = given_engine(engine)
    runs = []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise KitError("no such file" if not p.exists() else "not a file", p)
        run = LogRun(
            source=str(path), num_draft_tokens=num_draft_tokens, num_steps=num_steps, topk=topk
        )
        read_file(p, run)
        release.infer(run, given, name)
        if run.engine_name == "sglang" and topk == 1 and num_draft_tokens and not num_steps:
            run.num_steps = num_draft_tokens - 1  # SGLang forces D = num_steps + 1 at topk 1
        runs.append(run)
    return runs


def refuse_non_logs(paths: Iterable[str | Path | None]) -> None:
    """Refuse, before any longer work, a file given as a log that is none: from its first bytes,
    or, when they look like a document or JSON, from reading it (a real log costs one head)."""
    for given in paths:
        if given is None:
            continue
        path = Path(given)
        if not path.is_file():
            continue  # the caller's "no such file" names it
        with open(path, "rb") as raw:
            head = raw.read(filekind.HEAD)
        filekind.refuse_format(path, head, path.stat().st_size)
        text = head.decode("utf-8", "replace").lstrip()
        if text[:1] in "{[" or filekind.is_binary(head) or filekind.looks_like_document(path, text):
            read_file(path, LogRun(source=str(path)))


def read_file(path: Path, run: LogRun) -> None:
    """The file, opened once: its first 4 kB tell JSON, a metrics scrape or a log apart."""
    try:
        with open(path, "rb") as raw:
            _read_opened(raw, path, run)
    except OSError as e:
        raise KitError(f"cannot read: {e.strerror or e}", path) from None


def _read_opened(raw: BinaryIO, path: Path, run: LogRun) -> None:
    """A file format (a checkpoint, an archive) is refused from its first bytes; binary bytes,
    a document or JSON that is no engine's output, once reading it found no acceptance
    figure."""
    first = raw.read(filekind.HEAD)
    raw.seek(0)
    filekind.refuse_format(path, first, os.fstat(raw.fileno()).st_size)
    head = first.decode("utf-8", "replace")
    stripped = head.lstrip()
    unread_json = None
    if stripped[:1] == "{" or (stripped[:1] == "[" and stripped[1:].lstrip()[:1] in '{]"'):
        unread_json = _read_json(_text(raw), path, run)
    elif prometheus.looks_like(stripped) and "Decode batch" not in head:
        text = _text(raw)
        try:
            prometheus.read(text, run)
            return
        except KitError as e:
            run.notes.append(e.problem)
        text.detach()
        raw.seek(0)
        LogReader(run).read(raw)
    else:
        LogReader(run).read(raw)
    if not run.window_count:
        filekind.refuse_without_figures(path, first, unread_json)


def _text(raw: BinaryIO) -> io.TextIOWrapper:
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


def read_json_value(obj: Any, run: LogRun, line_no: int = 0) -> bool:
    """Fold one decoded JSON value (SGLang server info or meta_info, a vLLM completion with its
    per-request metrics, TensorRT-LLM iteration statistics, or a list of them); False when it
    holds none of them."""
    if isinstance(obj, list):
        return any([read_json_value(o, run, line_no) for o in obj])
    if isinstance(obj, str) and obj.lstrip().startswith("{"):
        return read_json_value(try_loads(obj), run, line_no)
    if not isinstance(obj, dict):
        return False
    if server_info.read(obj, run, line_no):
        return True
    parsed = lines.record(fields.flatten(obj), line_no)
    if parsed is None:
        return False
    w, sig = parsed
    if w is None:
        run.other_lines += 1
    else:
        lines.add(run, w, sig, json.dumps(obj)[:400])
    return True


def _read_json(f: TextIO, path: Path, run: LogRun) -> set[str] | None:
    """Fold the file's JSON into `run`; the top-level keys of JSON that is no engine output
    (None when some value was one, or the text is not JSON at all)."""
    if path.stat().st_size <= JSON_WHOLE_LIMIT:
        obj = try_loads(f.read())
        f.seek(0)
        if obj is not NOT_JSON:
            if read_json_value(obj, run):
                return None
            run.unparsed("json without acceptance fields", json.dumps(obj)[:160], 1)
            return set(obj) if isinstance(obj, dict) else set()
    keys: set[str] | None = set()
    for n, line in enumerate(f, 1):
        if not line.strip():
            continue
        obj = try_loads(line)
        if obj is NOT_JSON:
            run.unparsed("garbled json", line, n)
            keys = None  # text, not JSON: judged as a log would be
            continue
        if read_json_value(obj, run, n):
            keys = None
        else:
            run.unparsed("json without acceptance fields", line, n)
    return keys
