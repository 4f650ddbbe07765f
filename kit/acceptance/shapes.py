"""The fast path for SGLang decode lines: a line's shape is its text with every digit made 0.

Lines of one shape differ only in their digits, so the full parse (`sglang_log.decode_layout`)
finds the same fields at the same offsets, the same format signature, and the same verdict on
whether the figures are numbers. The first line of each shape is parsed in full; later ones are
looked up by shape (one C-level `bytes.translate`) and held in batches whose figures are counted
as text in C (`Counter.update`), so each distinct printed value is parsed once per file. A
`Window` is built only for the windows the thinned series keeps.
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter

from kit.acceptance.model import Run
from kit.acceptance.sglang_log import Layout, decode_layout

MAX_SHAPES = 4096  # a log has a few hundred (digit counts per field vary); past this, parse in full
BATCH = 8192  # lines held before their figures are counted: bounds memory
MAX_SHAPE_CHARS = 1024  # longer decode lines (real ones are under 600) always take the full parse
FIELDS = ("accept_len", "accept_rate", "throughput")  # `Layout` slices and `Run` statistics
_ZEROS = bytes.maketrans(b"123456789", b"000000000")


def shape(line: str) -> bytes:
    """The line's UTF-8 bytes with digits 1-9 made 0 (digits are single bytes in UTF-8)."""
    return line.encode().translate(_ZEROS)


class Shapes:
    """Decode-line layouts by shape, the lines of each shape waiting to be counted, and the
    counts of each printed figure."""

    def __init__(self) -> None:
        self.known: dict[bytes, tuple[Layout, list[str]]] = {}
        self.waiting = 0
        self.counts: dict[str, Counter[str]] = {name: Counter() for name in FIELDS}

    def learn(self, line: str) -> None:
        """Remember the layout of a decode line the full parse just read into the run."""
        if (
            len(self.known) >= MAX_SHAPES
            or len(line) > MAX_SHAPE_CHARS
            or "Decode batch" not in line
        ):
            return
        key = shape(line)
        if key in self.known:
            return
        layout = decode_layout(line)
        graph = layout.sig[3] if layout else None
        if layout is not None and not (graph and any(c.isdigit() for c in graph)):
            self.known[key] = (layout, [])  # a digit in the graph label varies within a shape

    def fold(self, line: str, line_no: int, run: Run) -> bool:
        """Fold a decode line of a known shape into `run`; False leaves it to the full parse.

        Until the run has its first zero-acceptance example line, such lines take the full
        parse too, so the example is the first one in the file.
        """
        if "Decode batch" not in line:
            return False
        entry = self.known.get(line.encode().translate(_ZEROS))  # shape(line), inlined: hot
        if entry is None:
            return False
        layout, lines = entry
        if "floor" not in run.example_lines and layout.at_floor(line):
            return False
        if run.take():
            run.keep(layout.window(line, line_no))
        lines.append(line)
        self.waiting += 1
        if self.waiting >= BATCH:
            self.count(run)
        return True

    def count(self, run: Run) -> None:
        """Count the waiting lines' formats into `run` and their figures' texts."""
        for layout, lines in self.known.values():
            if not lines:
                continue
            run.formats[layout.sig] += len(lines)
            for name, counts in self.counts.items():
                where = getattr(layout, name)
                if where is not None:
                    counts.update(map(itemgetter(where), lines))
            lines.clear()
        self.waiting = 0

    def finish(self, run: Run) -> None:
        """Fold everything held into the run's statistics; call once, at the end of the file."""
        self.count(run)
        for name, counts in self.counts.items():
            getattr(run, name).add_counts(counts)
            counts.clear()
