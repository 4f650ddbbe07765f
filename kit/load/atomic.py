"""Files replaced so that a crash leaves the old version or the new one, never a mix.

The new content goes to a temporary file in the same folder (so the rename stays on one
filesystem), is fsynced, renamed over the old name, and the folder is fsynced so the rename
itself survives a power loss.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def default_mode(base: int) -> int:
    """`base` (0o666 for files, 0o777 for folders) less the umask, as open()/mkdir() would give."""
    mask = os.umask(0)
    os.umask(mask)
    return base & ~mask


@contextmanager
def temp_beside(folder: Path, name: str, mode: int | None = None) -> Iterator[tuple[int, Path]]:
    """A temporary file next to its final name; removed unless it was renamed into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    path = Path(tmp)
    os.fchmod(fd, default_mode(0o666) if mode is None else mode)
    try:
        yield fd, path
    finally:
        with suppress(OSError):
            os.close(fd)
        with suppress(FileNotFoundError):
            path.unlink()


def write_all(fd: int, data: bytes, at: int | None = None) -> None:
    """Write every byte of `data` (at offset `at`, or at the file position): a single write may
    write fewer bytes than asked."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view) if at is None else os.pwrite(fd, view, at)
        view = view[n:]
        at = None if at is None else at + n


def replace_text(path: Path, text: str, *, sync_folder: bool = True) -> None:
    """Put `text` at `path` atomically; with `sync_folder` the rename is durable on return."""
    with temp_beside(path.parent, path.name) as (fd, tmp):
        write_all(fd, text.encode())
        os.fsync(fd)
        os.replace(tmp, path)
    if sync_folder:
        fsync_dir(path.parent)
