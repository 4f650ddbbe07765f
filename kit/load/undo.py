"""The undo record of a header-only fix, and which header a file holds now.

Apart from `kit.load.header_fix` (which writes and replays records) because opening a checkpoint must
recognise a header an interrupted fix tore (`torn_files`), and the checkpoint reader cannot
depend on the fixer that depends on it.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from kit.errors import KitError
from kit.load.atomic import replace_text

UNDO_SUFFIX = ".fix-undo.json"
RECORD_FORMAT = "eagle3-kit fix --in-place undo record, version 1"


@dataclass(frozen=True)
class HeaderEdit:
    """One file's header before and after the fix (the N bytes after the length prefix)."""

    name: str
    size: int
    original: bytes
    fixed: bytes


class HeaderState(Enum):
    ORIGINAL = "original"
    FIXED = "fixed"
    TORN = "torn"  # every byte the original's or the fixed one's, neither whole
    CHANGED = "changed since the fix"


@dataclass(frozen=True)
class UndoRecord:
    """What `--undo` restores: headers, and the index and config.json texts (None: untouched)."""

    path: Path
    edits: tuple[HeaderEdit, ...]
    index: str | None
    config: str | None

    @property
    def folder(self) -> Path:
        return self.path.parent

    def write(self) -> None:
        """Durably, before any header changes: temporary file, fsync, rename, folder fsync."""
        files = [
            {
                "name": e.name,
                "size": e.size,
                "original": e.original.decode(),
                "fixed": e.fixed.decode(),
            }
            for e in self.edits
        ]
        body = {"format": RECORD_FORMAT, "files": files, "index": self.index, "config": self.config}
        replace_text(self.path, json.dumps(body, indent=1) + "\n")

    @classmethod
    def read(cls, path: Path) -> UndoRecord:
        """The record at `path`; a `KitError` unless it is one this module wrote, naming only
        files in its own folder (a record is bytes to write: it must not aim them elsewhere)."""
        try:
            body = json.loads(path.read_text())
            if body.get("format") != RECORD_FORMAT:
                raise ValueError
            edits = tuple(
                HeaderEdit(f["name"], f["size"], f["original"].encode(), f["fixed"].encode())
                for f in body["files"]
            )
            index, config = body["index"], body["config"]
            if not all(_well_formed(e) for e in edits) or not all(
                t is None or isinstance(t, str) for t in (index, config)
            ):
                raise ValueError
            return cls(path, edits, index, config)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise KitError("not a readable undo record of `fix --in-place`", path) from None


def _well_formed(edit: HeaderEdit) -> bool:
    return (
        isinstance(edit.name, str)
        and Path(edit.name).name == edit.name
        and edit.name not in ("", ".", "..")
        and isinstance(edit.size, int)
        and len(edit.original) == len(edit.fixed) > 0
    )


def state_of(folder: Path, edit: HeaderEdit) -> HeaderState:
    """Which of its known headers the file holds now."""
    import numpy as np

    path = folder / edit.name
    n = len(edit.original)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8 + n)
    except FileNotFoundError:
        return HeaderState.CHANGED
    if size != edit.size or head[:8] != struct.pack("<Q", n):
        return HeaderState.CHANGED
    body = head[8:]
    if body == edit.original:
        return HeaderState.ORIGINAL
    if body == edit.fixed:
        return HeaderState.FIXED
    now, before, after = (np.frombuffer(b, np.uint8) for b in (body, edit.original, edit.fixed))
    return (
        HeaderState.TORN if bool(((now == before) | (now == after)).all()) else HeaderState.CHANGED
    )


def torn_files(folder: Path) -> list[str]:
    """Files in `folder` whose header an interrupted fix or undo left torn (by the records)."""
    torn = []
    for found in sorted(folder.glob(f"*{UNDO_SUFFIX}")):
        record = UndoRecord.read(found)
        torn += [e.name for e in record.edits if state_of(folder, e) is HeaderState.TORN]
    return torn
