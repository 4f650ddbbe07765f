"""Reading a log file in chunks: known line shapes in bulk, every other line field by field.

The file is read in binary chunks that end at a line break. In each chunk the lines of a shape
already read take the fast path (`kit.acceptance.columns`): their figures are counted into
histograms in numpy and a `Window` is built only for the windows the thinned series keeps. The
other lines go, in file order, to the field reader (`kit.acceptance.lines`), which learns the
shape of each new SGLang line. Windows, formats, example lines and statistics are those of reading
every line field by field (the mean up to float rounding); memory stays flat (one chunk, a few
histograms, the thinned series).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from kit.acceptance import columns, model, sglang_log
from kit.acceptance.lines import LineReader
from kit.acceptance.model import AT_FLOOR, Kind, Run, Scope, Window

CHUNK = 1 << 20
FIRST_CHUNK = 1 << 16  # small, so the shapes of a log are learned before the large chunks
MAX_LINE = 1 << 16  # longer "lines" (binary data without newlines) are skipped, counted once
HIST = 1 << 16  # scaled figures below this are counted in a histogram (accept len 655.35 at .2f)


class LogReader:
    """One log file into one run."""

    def __init__(self, run: Run, fast: bool = True) -> None:
        self.run = run
        self.patterns: list[columns.Pattern] = []
        self.templates: set[str] = set()
        self.fast = fast and columns.MAX_PATTERNS > 0
        self.lines = LineReader(run, self._learn if self.fast else None)
        self.line_no = 0  # lines before the current chunk
        self.hist: dict[tuple[str, int], np.ndarray] = {}

    def read(self, f: BinaryIO) -> None:
        file_size = os.fstat(f.fileno()).st_size if hasattr(f, "fileno") else 0
        for buf, size in _chunks(f):
            if size < 0:  # a line longer than the buffer: its head is in it
                head = bytes(buf[:160]).decode("utf-8", "replace")
                self.run.unparsed("over-long line", head, self.line_no + 1)
                self.line_no += 1
                continue
            first = self.line_no == 0
            self._chunk(buf, size)
            if first and self.line_no:
                self._stride(file_size * self.line_no / size)
        self.lines.finish()
        self._fold_histograms()

    def _stride(self, lines: float) -> None:
        """Thin the series from the start at the stride the whole file will need (estimated from
        the first chunk), instead of building windows that stride doubling later drops."""
        need = lines / model.MAX_WINDOWS
        if need > 1:
            self.run.stride = max(self.run.stride, 2 ** math.ceil(math.log2(need)))

    def _learn(self, line: str) -> None:
        if len(self.patterns) >= columns.MAX_PATTERNS:
            return
        p = columns.learn(line)
        if p is not None and p.template not in self.templates:
            self.templates.add(p.template)
            self.patterns.append(p)

    def _chunk(self, buf: bytearray, size: int) -> None:
        a = np.frombuffer(buf, np.uint8, count=size)
        ends = np.flatnonzero(a == 10)
        if not len(ends) or ends[-1] != size - 1:  # the file's last line has no line break
            ends = np.append(ends, size)
        starts = np.empty_like(ends)
        starts[0], starts[1:] = 0, ends[:-1] + 1
        if self.patterns:
            m = columns.match_chunk(self.patterns, columns.words_of(buf, size), starts, ends)
            which, values = m.pattern, m.values
        else:
            which, values = np.full(len(starts), -1, np.int32), {}
        decode = self._fold_matches(which, values)
        done = 0  # decode rows already folded into the series
        for row in np.flatnonzero(which < 0).tolist():
            s, e = int(starts[row]), int(ends[row])
            if s == e:
                continue
            done = self._series(decode, done, row, buf, starts, ends)
            self._slow(buf, s, e, self.line_no + row + 1)
        self._series(decode, done, len(starts), buf, starts, ends)
        self.line_no += len(starts)

    def _slow(self, buf: bytearray, s: int, e: int, n: int) -> None:
        raw = bytes(buf[s:e])
        if e - s >= MAX_LINE:
            self.run.unparsed("over-long line", raw[:160].decode("utf-8", "replace"), n)
            return
        self.lines.feed(raw.decode("utf-8", "replace"), n)

    def _fold_matches(self, which: np.ndarray, values: dict[str, np.ndarray]) -> np.ndarray:
        """Fold every matched line's figures into the run; the decode rows, in file order."""
        run = self.run
        used = np.bincount(which + 1, minlength=len(self.patterns) + 1)[1:]
        decode_rows = []
        for i in np.flatnonzero(used).tolist():
            p = self.patterns[i]
            n = int(used[i])
            if p.layout is None:
                run.other_lines += n
                continue
            rows = np.flatnonzero(which == i)
            decode_rows.append(rows)
            run.formats[p.sig] += n
            for name, scale in p.scale.items():
                if name != "running":
                    self._count(name, scale, values[name][rows])
            if "accept_len" in p.scale:
                run.spec_windows += n
                run.floor_windows += int(
                    np.count_nonzero(values["accept_len"][rows] < AT_FLOOR * p.scale["accept_len"])
                )
                run.scopes[Scope.INTERVAL] += n
        self._values = values
        self._decode_patterns = which
        return np.sort(np.concatenate(decode_rows)) if decode_rows else np.empty(0, np.int64)

    def _count(self, name: str, scale: int, v: np.ndarray) -> None:
        if name == "throughput":
            t = v / scale
            self.run.throughput.add_summary(len(t), float(t.sum()), float(t.min()), float(t.max()))
            return
        small = v[v < HIST]
        key = (name, scale)
        if key not in self.hist:
            self.hist[key] = np.zeros(HIST, np.int64)
        self.hist[key] += np.bincount(small, minlength=HIST)
        for big in v[v >= HIST].tolist():
            getattr(self.run, name).add(big / scale)

    def _series(self, decode, done, upto, buf, starts, ends) -> int:
        """Take the decode rows before row `upto` into the thinned series and the floor example,
        in file order; returns how many decode rows are done."""
        stop = int(np.searchsorted(decode, upto))
        if stop <= done:
            return done
        block = decode[done:stop]

        def window(i: int) -> Window:
            row = int(block[i])
            p = self.patterns[self._decode_patterns[row]]
            head = bytes(buf[starts[row] : starts[row] + 24]).decode()
            v = {name: self._values[name][row] / scale for name, scale in p.scale.items()}
            return Window(
                t=sglang_log.timestamp(head),
                accept_len=v.get("accept_len"),
                accept_rate=v.get("accept_rate"),
                throughput=v.get("throughput"),
                running=int(v["running"]) if "running" in v else None,
                line_no=self.line_no + row + 1,
                kind=Kind.DECODE,
            )

        self.run.take_block(len(block), window)
        if "floor" not in self.run.example_lines and self._values:
            self._floor_example(block, buf, starts, ends)
        return stop

    def _floor_example(self, block, buf, starts, ends) -> None:
        scale = np.array([p.scale.get("accept_len", 0) for p in self.patterns])
        rows = block[scale[self._decode_patterns[block]] > 0]
        al = self._values["accept_len"][rows]
        at = np.flatnonzero(al < AT_FLOOR * scale[self._decode_patterns[rows]])
        if len(at):
            row = int(rows[at[0]])
            line = bytes(buf[starts[row] : ends[row]]).decode()
            self.run.example_lines["floor"] = f"line {self.line_no + row + 1}: {line[:400]}"

    def _fold_histograms(self) -> None:
        for (name, scale), counts in self.hist.items():
            stat = getattr(self.run, name)
            for v in np.flatnonzero(counts).tolist():
                stat.add(v / scale, int(counts[v]))


def _chunks(f: BinaryIO) -> Iterator[tuple[bytearray, int]]:
    """(buffer, size) for each run of whole lines; size -1 for a line longer than MAX_LINE with
    no line break in the buffer (its head is in the buffer; the rest is skipped). The buffer holds
    `columns.PAD` zero bytes past `size`."""
    buf = bytearray(CHUNK + MAX_LINE + columns.PAD)
    view = memoryview(buf)[: CHUNK + MAX_LINE]
    carry, want = 0, FIRST_CHUNK
    while True:
        got = f.readinto(view[carry : carry + want])
        size = carry + got
        if got == 0:
            if carry:
                buf[size : size + columns.PAD] = bytes(columns.PAD)
                yield buf, size
            return
        cut = buf.rfind(b"\n", 0, size) + 1
        if cut == 0 and size >= MAX_LINE:
            yield buf, -1
            _skip_line(f)
            carry, want = 0, CHUNK
            continue
        if cut:
            tail = bytes(buf[cut:size])
            buf[cut : cut + columns.PAD] = bytes(columns.PAD)
            yield buf, cut
            buf[: len(tail)] = tail
            carry = len(tail)
        else:
            carry = size
        want = CHUNK + MAX_LINE - carry


def _skip_line(f: BinaryIO) -> None:
    """Read up to and past the next line break."""
    while block := f.read(MAX_LINE):
        i = block.find(b"\n")
        if i >= 0:
            f.seek(i + 1 - len(block), 1)
            return
