"""Large safetensors files for the benches, written in chunks so the bench itself stays small."""

from __future__ import annotations

import json
import struct
from pathlib import Path


def write_streamed(path: Path, header: dict, data_bytes: int, fill: bytes) -> int:
    """Write `header` and `data_bytes` of data cycling through `fill` (non-zero, so the pages
    are real, not a sparse file); returns where the data section starts."""
    body = json.dumps(header).encode()
    body += b" " * (-len(body) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(body)) + body)
        left = data_bytes
        while left:
            n = min(left, len(fill))
            f.write(fill[:n])
            left -= n
    return 8 + len(body)
