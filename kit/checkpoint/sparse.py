"""Write a full-size safetensors checkpoint without writing its bytes: header first, values sparse.

A Kimi-K2.5 EAGLE-3 draft is 4.3 GB; what the kit reads of it is the header (every key, dtype and
shape), the small tensors whole (norms, `d2t`, `t2d`) and, for statistics, `SAMPLE_BYTES` of each
large tensor in `SAMPLE_WINDOWS` evenly spaced windows (`kit.checkpoint.files.sample_spans`). This
module writes exactly that: the header, the arrays given whole, and seeded values in the windows a
sampled read looks at; the rest of the file is a hole the file system stores as nothing (a few MB
on disk, written in well under a second). `inspect --stats`, which reads every byte, sees the
zeros in the holes, and says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kit.checkpoint.files import SAMPLE_BYTES, sample_spans
from kit.checkpoint.header import DTYPE_SIZES

NUMPY_DTYPES = {"I64": np.int64, "I32": np.int32, "BOOL": np.bool_, "F32": np.float32}


@dataclass(frozen=True)
class Sparse:
    """A tensor declared at full size; values appear only in the windows a sampled read takes."""

    dtype: str  # safetensors dtype, e.g. "BF16"
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


Tensor = Sparse | np.ndarray
# values for `count` elements of a sparse tensor, as float32 (encoded to the tensor's dtype)
Fill = Callable[[str, int], np.ndarray]


def to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, rounded to nearest even (as torch rounds)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def _encode(values: np.ndarray, dtype: str) -> bytes:
    if dtype == "BF16":
        return to_bf16(values).tobytes()
    if dtype == "F16":
        return values.astype(np.float16).tobytes()
    return values.astype(NUMPY_DTYPES[dtype]).tobytes()


def _dtype_of(array: np.ndarray) -> str:
    for name, np_type in NUMPY_DTYPES.items():
        if array.dtype == np_type:
            return name
    raise ValueError(f"no safetensors dtype for numpy {array.dtype}")


def write_sparse(
    path: Path, tensors: Mapping[str, Tensor], fill: Fill, metadata: Mapping[str, str] = ()
) -> Path:
    """Write `tensors` (arrays whole, `Sparse` ones as holes with `fill`'s values in the sampled
    windows) as one safetensors file, atomically: a temporary file renamed into place."""
    entries, offset = {}, 0
    for name, t in tensors.items():
        dtype = t.dtype if isinstance(t, Sparse) else _dtype_of(t)
        shape = list(t.shape)
        size = int(np.prod(shape, dtype=np.int64)) * DTYPE_SIZES[dtype]
        entries[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header = json.dumps({"__metadata__": dict(metadata), **entries}, separators=(",", ":"))
    header_bytes = header.encode() + b" " * (-len(header) % 8)
    start = 8 + len(header_bytes)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # writers racing never share one
    with open(tmp, "wb") as f:
        f.write(len(header_bytes).to_bytes(8, "little") + header_bytes)
        f.truncate(start + offset)  # the holes: nothing is written there
        for name, t in tensors.items():
            base = start + entries[name]["data_offsets"][0]
            if isinstance(t, np.ndarray):
                f.seek(base)
                f.write(t.tobytes())
                continue
            item = DTYPE_SIZES[t.dtype]
            for lo, hi in sample_spans(t.numel, SAMPLE_BYTES // item):
                f.seek(base + lo * item)
                f.write(_encode(fill(name, hi - lo), t.dtype))
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    return path
