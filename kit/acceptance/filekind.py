"""Whether a file given as a log is one: a checkpoint, an archive, a binary or a document is
refused in one line, never read as pages of unparsed lines.

The first bytes tell a file format apart at once (safetensors' 8-byte header length and JSON,
pickle's protocol byte, zip, gzip, GGUF, NumPy and ELF magic): no log starts so. Binary bytes
(NULs, text that does not decode) and a document (Markdown, reStructuredText) are refused only
when reading the whole file found no acceptance figure: a log can hold a stretch of garbage
before its lines, and an issue report quotes a real log.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from kit.errors import KitError

HEAD = 4096
_MAGIC = (
    (b"PK\x03\x04", "a zip archive (PyTorch writes .pt and .bin checkpoints so)"),
    (b"\x1f\x8b", "gzip-compressed: decompress it first (gunzip)"),
    (b"GGUF", "a GGUF model file"),
    (b"\x7fELF", "an executable"),
    (b"%PDF", "a PDF document"),
    (b"\x93NUMPY", "a NumPy array file"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\ufffd]")  # not \t \n \f \r ESC
TEXT_SHARE = 0.9  # a log's first 4 kB are text, bar a stray byte or two
_DOC_SUFFIXES = (".md", ".markdown", ".rst", ".adoc")
_DOC_LINE = re.compile(r"^(#{1,6} (?!HELP |TYPE )|```|~~~|\|[-:| ]+\|\s*$|={3,}\s*$)", re.M)
READS = "acceptance reads server logs, Prometheus text and the engines' JSON"


def format_kind(head: bytes, size: int) -> str | None:
    """The file format the first bytes name (None: no format the kit knows)."""
    if len(head) >= 9 and head[8:9] == b"{":
        (n,) = struct.unpack("<Q", head[:8])
        if 8 + n <= size:
            return "a safetensors file (a checkpoint's tensors)"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a pickle (a PyTorch checkpoint)"
    return next((what for magic, what in _MAGIC if head.startswith(magic)), None)


def is_binary(head: bytes) -> bool:
    """Whether the first bytes are mostly not text."""
    text = head.decode("utf-8", "replace")
    return bool(text) and len(_CONTROL.findall(text)) > (1 - TEXT_SHARE) * len(text)


def refuse_format(path: Path, head: bytes, size: int) -> None:
    """A `KitError` naming the file when its first bytes are a file format's, no log's."""
    what = format_kind(head, size)
    if what is not None:
        raise KitError(f"not a log or metrics: {what}; {READS}", path)


def looks_like_document(path: Path, head: str) -> bool:
    """Markdown or reStructuredText by name, or by a heading, fence or table in its first kB."""
    return path.suffix.lower() in _DOC_SUFFIXES or _DOC_LINE.search(head) is not None


def refuse_without_figures(path: Path, head: bytes, json_keys: set[str] | None) -> None:
    """After a read that found no acceptance figure: binary bytes, a document, or JSON that is
    no engine's output (a model config, a tokenizer file) are refused; a text log is not (a
    server log without speculation is a finding, NO_ACCEPTANCE_DATA)."""
    text = head.decode("utf-8", "replace")
    if is_binary(head):
        what = "a binary file"
    elif json_keys is not None:
        config = " (a model config)" if {"architectures", "model_type"} & json_keys else ""
        what = f"JSON with no acceptance figure{config}"
    elif looks_like_document(path, text):
        what = "a document with no acceptance figure in it"
    else:
        return
    raise KitError(f"not a log or metrics: {what}; {READS}", path)
