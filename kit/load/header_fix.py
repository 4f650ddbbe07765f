"""Same-length key renames written into the safetensors header where it is, and undone.

A safetensors file is an 8-byte little-endian length N, N bytes of JSON header, then the tensor
bytes at offsets counted from the end of the header. Renaming `layers.0.` to `midlayer.` (9 bytes
each) moves no offset, so the fixed header is the same JSON with the new names, at most N bytes
long, padded with spaces to exactly N (the format allows trailing spaces in the header): an
in-place fix then writes N bytes, whatever the checkpoint's size, and no tensor byte. A file
that other names share (a symlink into a Hugging Face cache, a hard link) is streamed instead:
a patch in place would change those too.

The undo record `<entry>.fix-undo.json` (entry: the .safetensors file, or the index of a sharded
checkpoint) sits beside the checkpoint. It holds each file's size and its header before and after
the fix, and the index and config.json as they were; it is written to a temporary file, fsynced
and renamed into place before any header is touched. `fix PATH --undo` puts all of it back byte
for byte and removes the record.

What a crash leaves (SIGKILL or power loss, at any point): every tensor byte as it was, and each
header the original, the fixed one, or a mix of the two byte by byte where the write tore. A
header within one page (a draft's is 2-3 KB) is copied into the page cache in one step, so a
killed process leaves it whole and the file loads as before or as after; a longer header, or a
power loss before the fsync returned, can tear. Each byte of a torn header is the original's or
the fixed one's at its place, which is how it is told apart from a file changed since: running
the fix again completes it (`complete`), `--undo` restores the original. The index and
config.json are replaced atomically after the headers and restored before them, so a record
whose headers are all original belongs to a run that had changed nothing yet, or to an undo that
finished all but removing the record; either way it is dropped. A temporary file a kill left
while one of those was being replaced is removed by the next run or undo.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from kit.checkpoint.files import Checkpoint, read_safetensors_header
from kit.checkpoint.header import INDEX_NAME
from kit.errors import KitError
from kit.load.atomic import fsync_dir, replace_text, write_all
from kit.load.undo import (
    UNDO_SUFFIX,
    HeaderEdit,
    HeaderState,
    UndoRecord,
    state_of,
)


def record_path(ck: Checkpoint) -> Path:
    entry = ck.folder / INDEX_NAME if ck.kind == "sharded" else ck.files[0]
    return entry.with_name(entry.name + UNDO_SUFFIX)


def find_record(path: Path) -> Path | None:
    """The undo record of the checkpoint at `path` (a file or its folder), if there is one."""
    if not path.exists():
        return None
    folder = _folder(path)
    named = folder / (path.name + UNDO_SUFFIX)
    if path.is_file() and named.is_file():
        return named
    found = sorted(folder.glob(f"*{UNDO_SUFFIX}"))
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise KitError(f"several undo records ({names}): pass the file one is named after", folder)
    return found[0] if found else None


def same_length(renames: dict[str, str]) -> bool:
    return all(len(old.encode()) == len(new.encode()) for old, new in renames.items())


def header_edit(file: Path, renames: dict[str, str]) -> HeaderEdit | None:
    """`file`'s header with keys renamed, exactly as long as before; None (then stream) when a
    rename changes a key's length, the header cannot be kept byte for byte in a record, or the
    bytes are shared: a symlink (a Hugging Face cache blob) or a hard link would carry the patch
    to every other name of the file, where a streamed rewrite replaces this name only."""
    if not same_length(renames) or file.is_symlink() or file.stat().st_nlink > 1:
        return None
    read_safetensors_header(file)  # the whole header is valid before anything is planned on it
    with open(file, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        original = f.read(n)
    try:
        header = json.loads(original.decode())
    except UnicodeDecodeError:
        return None
    renamed = {renames.get(k, k): v for k, v in header.items()}
    fixed = json.dumps(renamed, separators=(",", ":"), ensure_ascii=False).encode()
    if len(renamed) != len(header) or len(fixed) > n:
        return None
    fixed += b" " * (n - len(fixed))
    return HeaderEdit(file.name, file.stat().st_size, original, fixed)


def _states(record: UndoRecord) -> list[HeaderState]:
    states = [state_of(record.folder, e) for e in record.edits]
    changed = [
        e.name for e, s in zip(record.edits, states, strict=True) if s is HeaderState.CHANGED
    ]
    if changed:
        raise KitError(
            f"{', '.join(changed)} changed since the in-place fix (its header is neither the "
            f"original nor the fixed one, nor a mix of the two): the undo record {record.path.name} "
            "no longer applies; remove it if the checkpoint was saved again on purpose",
            record.folder / changed[0],
        )
    return states


def _write_headers(folder: Path, edits: list[HeaderEdit], fixed: bool) -> None:
    for e in edits:
        fd = os.open(folder / e.name, os.O_RDWR)
        try:
            write_all(fd, e.fixed if fixed else e.original, at=8)
            os.fsync(fd)
        finally:
            os.close(fd)


def fix_in_place(
    ck: Checkpoint, renames: dict[str, str], index: str | None, config: str | None
) -> bool:
    """Write renames, index and config.json text header-only, the record first. False when the
    renames cannot be written so (nothing was written: stream the files instead)."""
    record = record_path(ck)
    if record.exists():
        _add_to_recorded(UndoRecord.read(record), renames, index, config)
        return True
    if not renames or ck.kind == "pickle":
        return False
    edits = [header_edit(f, renames) for f in ck.files]
    if any(e is None for e in edits):
        return False
    recorded = UndoRecord(
        record,
        tuple(e for e in edits if e is not None),
        (ck.folder / INDEX_NAME).read_text() if index is not None else None,
        ck.config_path.read_text() if config is not None and ck.config_path else None,
    )
    recorded.write()
    _write_headers(ck.folder, list(recorded.edits), fixed=True)
    try:
        _verify(ck, renames, recorded)
    except KitError:
        _write_headers(ck.folder, list(recorded.edits), fixed=False)
        record.unlink()
        fsync_dir(ck.folder)
        raise
    _replace_texts(ck.folder, index, config)
    return True


def _add_to_recorded(
    record: UndoRecord, renames: dict[str, str], index: str | None, config: str | None
) -> None:
    """A checkpoint already fixed header-only: only the index / config.json step may be left
    (a run killed after the headers); anything the record cannot undo is refused."""
    if (
        renames
        or (index is not None and record.index is None)
        or (config is not None and record.config is None)
    ):
        raise KitError(
            f"already fixed in place for another release (undo record {record.path.name}): "
            f"run `python -m kit fix {record.folder} --undo` first, then fix it for this one",
            record.folder,
        )
    _replace_texts(record.folder, index, config)


def _replace_texts(folder: Path, index: str | None, config: str | None) -> None:
    if index is not None:
        replace_text(folder / INDEX_NAME, index, sync_folder=False)
    if config is not None:
        replace_text(folder / "config.json", config, sync_folder=False)
    fsync_dir(folder)


def _verify(ck: Checkpoint, renames: dict[str, str], record: UndoRecord) -> None:
    """Every header is the fixed one and parses to the same tensors under their new names."""
    for edit, state in zip(record.edits, _states(record), strict=True):
        if state is not HeaderState.FIXED:
            raise KitError("verification failed: the header reads back differently", edit.name)
    for file in ck.files:
        written, _ = read_safetensors_header(file)
        for name, t in ck.tensors.items():
            if t.file != file:
                continue
            w = written.get(renames.get(name, name))
            if w is None or (w.dtype, w.shape, w.offsets) != (t.dtype, t.shape, t.offsets):
                raise KitError(f"verification failed: {name} reads back differently", file)


def _remove_stale_temporaries(folder: Path) -> None:
    """The temporary files a killed fix or undo left while replacing its record, the index or
    config.json (`kit.load.atomic` names them `.NAME.*.tmp`); nothing else is ever removed."""
    for name in (f"*{UNDO_SUFFIX}", "config.json", INDEX_NAME):
        for stale in folder.glob(f".{name}.*.tmp"):
            stale.unlink(missing_ok=True)


def complete(path: Path) -> str | None:
    """Finish a header fix a killed run left part-way (before `fix --in-place` runs again);
    what was done, or None when there was nothing to finish."""
    if path.exists():
        _remove_stale_temporaries(_folder(path))
    found = find_record(path)
    if found is None:
        return None
    record = UndoRecord.read(found)
    states = _states(record)
    if all(s is HeaderState.ORIGINAL for s in states):
        found.unlink()  # no header was written: the index and config.json are untouched too
        fsync_dir(record.folder)
        return f"removed {found.name}: the run that wrote it had not changed any header yet"
    left = [e for e, s in zip(record.edits, states, strict=True) if s is not HeaderState.FIXED]
    if not left:
        return None
    _write_headers(record.folder, left, fixed=True)
    return f"completed the header fix an interrupted run left in {', '.join(e.name for e in left)}"


def undo(path: Path) -> list[str]:
    """Restore what the record holds, byte for byte, then remove it; the files restored."""
    found = find_record(path)
    if found is None:
        kept = sorted(p.name for p in _folder(path).glob("*.orig"))
        hint = (
            f"; a streamed in-place fix kept the originals as {', '.join(kept)}: move them back"
            if kept
            else ""
        )
        raise KitError(f"no undo record (*{UNDO_SUFFIX}) beside it: nothing to undo{hint}", path)
    record = UndoRecord.read(found)
    states = _states(record)
    _remove_stale_temporaries(record.folder)
    if record.config is not None:
        replace_text(record.folder / "config.json", record.config, sync_folder=False)
    if record.index is not None:
        replace_text(record.folder / INDEX_NAME, record.index, sync_folder=False)
    fsync_dir(record.folder)
    edits = [e for e, s in zip(record.edits, states, strict=True) if s is not HeaderState.ORIGINAL]
    _write_headers(record.folder, edits, fixed=False)
    if any(state_of(record.folder, e) is not HeaderState.ORIGINAL for e in record.edits):
        raise KitError("the restored header reads back differently; the record is kept", found)
    found.unlink()
    fsync_dir(record.folder)
    restored = [e.name for e in record.edits]
    return restored + [
        n for n, t in ((INDEX_NAME, record.index), ("config.json", record.config)) if t
    ]


def _folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent
