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

import io
import math
import os
from collections import Counter
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from kit.acceptance import columns, model, sglang_log
from kit.acceptance.lines import LineReader
from kit.acceptance.model import AT_FLOOR, Kind, LogRun, Scope, Window

CHUNK = 1 << 21
FIRST_CHUNK = 1 << 16  # small, so the shapes of a log are learned before the large chunks
BEGIN = 8  # where a chunk's lines start in its buffer
MAX_LINE = 1 << 16  # longer "lines" (binary data without newlines) are skipped, counted once
HIST = 1 << 16  # scaled figures below this are counted in a histogram (accept len 655.35 at .2f)
FIGURES = ("accept_len", "accept_rate", "throughput", "running")  # what a decode window holds
_ONE = np.uint64(1)
MAX_SEEN = 4096  # templates of lines without a figure remembered until one comes back


class LogReader:
    """One log file into one run."""

    def __init__(self, run: LogRun, fast: bool = True) -> None:
        self.run = run
        self.patterns: list[columns.Pattern] = []
        self.templates: dict[str, columns.Pattern | None] = {}  # learned, or refused (None)
        self.others: Counter[str] = Counter()  # templates of lines without a figure, seen
        self.fast = fast and columns.MAX_PATTERNS > 0
        self.lines = LineReader(run, self._learn if self.fast else None, self._fold_before)
        self._held: tuple | None = None  # (decode rows, how many folded, buf, starts, ends)
        self._row = 0  # the row the field reader is reading
        self.line_no = 0  # lines before the current chunk
        self.hist: dict[tuple[str, int], np.ndarray] = {}
        self._breaks: np.ndarray | None = None  # scratch: which bytes are line breaks

    def read(self, f: BinaryIO) -> None:
        try:
            file_size = os.fstat(f.fileno()).st_size
        except (OSError, io.UnsupportedOperation):  # a stream: no stride estimate
            file_size = 0
        for buf, size in _chunks(f):
            if size < 0:  # a line longer than the buffer: its head is in it
                head = bytes(buf[BEGIN : BEGIN + 160]).decode("utf-8", "replace")
                self.run.unparsed("over-long line", head, self.line_no + 1)
                self.line_no += 1
                continue
            first = self.line_no == 0
            self._chunk(buf, size)
            if first and self.line_no:
                self._stride(file_size * self.line_no / (size - BEGIN))
        self.lines.finish()
        self._fold_histograms()

    def _stride(self, lines: float) -> None:
        """Thin the series from the start at the stride the whole file will need (estimated from
        the first chunk), instead of building windows that stride doubling later drops."""
        need = lines / (model.MAX_WINDOWS / 2)  # between half and all of MAX_WINDOWS at the end
        if need > 1:
            self.run.stride = max(self.run.stride, 2 ** math.ceil(math.log2(need)))

    def _learn(self, line: str) -> None:
        """Learn the pattern of a line the field reader read: a decode line at once, a line
        without a figure once it comes back (a server's start-up lines are each printed once).
        A known pattern that had gone idle is tried again."""
        key = columns.template(line)
        if key in self.templates:
            if (known := self.templates[key]) is not None:
                known.idle = 0
            return
        decode = "Decode batch" in line
        if not decode:
            if len(self.others) >= MAX_SEEN:
                self.others.clear()  # bounded memory, whatever a log prints once
            self.others[key] += 1
            if self.others[key] < 2:
                return
        if sum((p.layout is not None) == decode for p in self.patterns) >= columns.MAX_PATTERNS:
            return
        self.templates[key] = p = columns.learn(line)
        if p is not None:
            self.patterns.append(p)

    def _chunk(self, buf: bytearray, size: int) -> None:
        ends = self._line_breaks(buf, size)
        if not len(ends) or ends[-1] != size - 1:  # the file's last line has no line break
            ends = np.append(ends, size)
        starts = np.empty_like(ends)
        starts[0], starts[1:] = BEGIN, ends[:-1] + 1
        if self.patterns:
            m = columns.match_chunk(self.patterns, columns.Chunk(buf, size), starts, ends)
            which, values = m.pattern, m.values
        else:
            which, values = np.full(len(starts), -1, np.int32), {}
        self._held = (self._fold_matches(which, values), 0, buf, starts, ends)
        for row in np.flatnonzero(which < 0).tolist():
            s, e = int(starts[row]), int(ends[row])
            if s < e:
                self._row = row
                self._slow(buf, s, e, self.line_no + row + 1)
        self._row = len(starts)
        self._fold_before()
        self.line_no += len(starts)

    def _line_breaks(self, buf: bytearray, size: int) -> np.ndarray:
        """Offsets of the line breaks in `buf[BEGIN:size]`. Found a word at a time: the bytes that are
        line breaks, seen as 64-bit words, are few and nonzero, and numpy finds nonzero words
        (a few per chunk) faster than nonzero bytes; the rare word with two breaks (a line
        under 8 bytes) is taken again until none is left."""
        words = -(-size // 8)
        if self._breaks is None or len(self._breaks) < words * 8:
            self._breaks = np.empty(words * 8, bool)
        hits = self._breaks[: words * 8]
        np.equal(np.frombuffer(buf, np.uint8, count=words * 8), 10, out=hits)  # (zeros past size)
        w = hits.view(np.uint64)
        at = np.flatnonzero(w != 0)
        found, rest, base = [], w[at], at << 3
        while len(rest):
            low = rest & -rest  # the lowest break of each word
            found.append(base + (np.bitwise_count(low - _ONE) >> 3))
            rest ^= low
            more = np.flatnonzero(rest != 0)
            rest, base = rest[more], base[more]
        return found[0] if len(found) == 1 else np.sort(np.concatenate([at[:0], *found]))

    def _fold_before(self) -> None:
        """Fold the fast path's decode rows before the row being read into the series, so
        windows stay in file order."""
        decode, done, buf, starts, ends = self._held or (None, 0, None, None, None)
        if decode is not None:
            done = self._series(decode, done, self._row, buf, starts, ends)
            self._held = (decode, done, buf, starts, ends)

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
        decode = [i for i in np.flatnonzero(used).tolist() if self.patterns[i].layout is not None]
        run.other_lines += int(used.sum()) - sum(int(used[i]) for i in decode)
        self._values, self._which = values, which
        if not decode:
            return np.empty(0, np.int64)
        mask = which == decode[0] if len(decode) == 1 else np.isin(which, decode)
        for i in decode:
            run.formats[self.patterns[i].sig] += int(used[i])
        for group in _same_scales([self.patterns[i] for i in decode], decode):
            rows = mask if len(group[1]) == len(decode) else np.isin(which, group[1])
            self._count(group[0], values, rows)
        return np.flatnonzero(mask)

    def _count(self, scale: dict[str, int], values: dict[str, np.ndarray], rows) -> None:
        """Fold the figures of `rows` (patterns with these scales) into the run's statistics:
        printed values counted as scaled integers, so each distinct one is folded once."""
        run = self.run
        for name, s in scale.items():
            if name == "running":
                continue  # read for the windows kept only
            v = values[name][rows]
            if not len(v):
                continue
            if name == "throughput":
                lo, hi = int(v.min()), int(v.max())
                run.throughput.add_summary(len(v), int(v.sum(dtype=np.int64)) / s, lo / s, hi / s)
                continue
            counts = np.bincount(v)
            if name == "accept_len":
                run.spec_windows += len(v)
                run.floor_windows += int(counts[: math.ceil(AT_FLOOR * s)].sum())
                run.scopes[Scope.INTERVAL] += len(v)
            hist = self.hist.setdefault((name, s), np.zeros(HIST, np.int64))
            if len(counts) <= HIST:
                hist[: len(counts)] += counts
            else:  # a figure too large for the histogram (never a real accept len or rate)
                for value in np.flatnonzero(counts).tolist():
                    getattr(run, name).add(value / s, int(counts[value]))

    def _series(self, decode, done, upto, buf, starts, ends) -> int:
        """Take the decode rows before row `upto` into the thinned series and the floor example,
        in file order; returns how many decode rows are done."""
        stop = int(np.searchsorted(decode, upto))
        if stop <= done:
            return done
        block = decode[done:stop]
        self.run.take_block(len(block), lambda idx: self._windows(block[idx], buf, starts))
        if "floor" not in self.run.example_lines and "accept_len" in self._values:
            self._floor_example(block, buf, starts, ends)
        return stop

    def _windows(self, rows: np.ndarray, buf, starts) -> list[Window]:
        """The windows of decode rows (those the thinned series keeps), built from the figures
        already parsed; the timestamp from the line's own prefix, as the field reader does."""
        which = self._which[rows]
        scale = {n: np.array([p.scale.get(n, 0) for p in self.patterns])[which] for n in FIGURES}
        nothing = np.full(len(rows), np.nan)
        figures = {
            n: np.where(scale[n] > 0, self._values[n][rows] / np.maximum(scale[n], 1), np.nan)
            if n in self._values
            else nothing
            for n in FIGURES
        }
        al, ar, tput, running = (figures[n].tolist() for n in FIGURES)
        out = []
        for k, (row, s) in enumerate(zip(rows.tolist(), starts[rows].tolist(), strict=True)):
            head = buf[s : s + 24].decode("utf-8", "replace")  # the prefix's digits are unchecked
            out.append(Window(
                t=sglang_log.timestamp(head),
                accept_len=None if al[k] != al[k] else al[k],  # nan: the pattern has no such field
                accept_rate=None if ar[k] != ar[k] else ar[k],
                throughput=None if tput[k] != tput[k] else tput[k],
                running=None if running[k] != running[k] else int(running[k]),
                line_no=self.line_no + row + 1,
                kind=Kind.DECODE,
            ))  # fmt: skip
        return out

    def _floor_example(self, block, buf, starts, ends) -> None:
        scale = np.array([p.scale.get("accept_len", 0) for p in self.patterns])
        rows = block[scale[self._which[block]] > 0]
        al = self._values["accept_len"][rows]
        at = np.flatnonzero(al < AT_FLOOR * scale[self._which[rows]])
        if len(at):
            row = int(rows[at[0]])
            line = bytes(buf[starts[row] : ends[row]]).decode("utf-8", "replace")
            self.run.example_lines["floor"] = f"line {self.line_no + row + 1}: {line[:400]}"

    def _fold_histograms(self) -> None:
        for (name, scale), counts in self.hist.items():
            stat = getattr(self.run, name)
            for v in np.flatnonzero(counts).tolist():
                stat.add(v / scale, int(counts[v]))


def _same_scales(patterns: list[columns.Pattern], ids: list[int]):
    """(scales, pattern ids) for each set of decode patterns whose figures share scales."""
    groups: dict[tuple, list[int]] = {}
    for p, i in zip(patterns, ids, strict=True):
        groups.setdefault(tuple(sorted(p.scale.items())), []).append(i)
    return [(dict(k), v) for k, v in groups.items()]


def _chunks(f: BinaryIO) -> Iterator[tuple[bytearray, int]]:
    """(buffer, end) for each run of whole lines, which fill `buffer[BEGIN:end]`; end -1 for a
    line longer than MAX_LINE with no line break in the buffer (its head is at BEGIN; the rest
    is skipped). The buffer holds zeros before BEGIN (a pattern's read of the first line starts
    up to 7 bytes early) and `columns.PAD` zero bytes past `end`."""
    buf = bytearray(BEGIN + CHUNK + MAX_LINE + columns.PAD)
    view = memoryview(buf)[: BEGIN + CHUNK + MAX_LINE]
    carry, want = BEGIN, FIRST_CHUNK
    while True:
        got = f.readinto(view[carry : carry + want])
        size = carry + got
        if got == 0:
            if carry > BEGIN:
                buf[size : size + columns.PAD] = bytes(columns.PAD)
                yield buf, size
            return
        cut = buf.rfind(b"\n", BEGIN, size) + 1
        if cut == 0 and size - BEGIN >= MAX_LINE:
            yield buf, -1
            _skip_line(f)
            carry, want = BEGIN, CHUNK
            continue
        if cut:
            tail = bytes(buf[cut:size])
            buf[cut : cut + columns.PAD] = bytes(columns.PAD)
            yield buf, cut
            buf[BEGIN : BEGIN + len(tail)] = tail
            carry = BEGIN + len(tail)
        else:
            carry = size
        want = BEGIN + CHUNK + MAX_LINE - carry


def _skip_line(f: BinaryIO) -> None:
    """Read up to and past the next line break."""
    while block := f.read(MAX_LINE):
        i = block.find(b"\n")
        if i >= 0:
            f.seek(i + 1 - len(block), 1)
            return
