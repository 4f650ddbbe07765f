"""The safetensors header format, checked as safetensors checks it on load, wherever the bytes
come from (a file on disk, or ranges read from the Hub): the names and checks both readers share.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from pathlib import Path

from kit.errors import KitError
from kit.limits import loads, read_json_file

# safetensors dtype name -> bytes per element (the format spec's list).
DTYPE_SIZES: dict[str, int] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E5M2": 1,
    "F8_E4M3": 1,
    "F8_E8M0": 1,
    "F4": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
    "C64": 8,
}
FLOAT_DTYPES = {"F16", "BF16", "F32", "F64", "F8_E5M2", "F8_E4M3"}
# safetensors refuses headers above 100 MB; so do we (a corrupt length must not allocate GBs).
MAX_HEADER_BYTES = 100_000_000
INDEX_NAME = "model.safetensors.index.json"
# `fix --in-place` of a header-only rename leaves `<entry>.fix-undo.json` beside the checkpoint.
PICKLE_NAMES = ("pytorch_model.bin", "model.pt", "model.bin")


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives and what it is, without its bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    file: Path
    # absolute byte range of the data in `file` (safetensors only)
    offsets: tuple[int, int] | None = None

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "nbytes": self.nbytes,
            "file": self.file.name,
        }


def has_checkpoint(folder: Path) -> bool:
    """Whether `folder` holds weights `open_checkpoint` can read (not only a config)."""
    return any(folder.glob("*.safetensors")) or any(
        (folder / name).is_file() for name in (INDEX_NAME, *PICKLE_NAMES)
    )


def header_length(head: bytes, size: int, file: Path) -> int:
    """The JSON header's length from a file's first 8 bytes, checked against the file's size."""
    if len(head) < 8:
        raise KitError(f"truncated: {size} bytes, shorter than the 8-byte header length", file)
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER_BYTES:
        raise KitError(
            f"header length {n} is implausible (limit {MAX_HEADER_BYTES}); not a safetensors file",
            file,
        )
    if 8 + n > size:
        raise KitError(
            f"header length {n} runs past the end of the file ({size} bytes); truncated?", file
        )
    return n


def parse_header(raw: bytes, size: int, file: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Validate the JSON header `raw` of a `size`-byte safetensors file, wherever its bytes came
    from (a local file, or ranges read from the Hub): the same checks give the same verdict."""
    header = loads(raw, file, "header", unique_keys=True)
    if not isinstance(header, dict):
        raise KitError("header is not a JSON object", file)
    metadata = header.pop("__metadata__", None)
    metadata = {} if metadata is None else metadata  # safetensors reads null as no metadata
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise KitError("header __metadata__ is not a JSON object of strings", file)
    data_start = 8 + len(raw)
    data_len = size - data_start
    tensors: dict[str, TensorInfo] = {}
    spans: list[tuple[int, int, str]] = []
    for name, entry in header.items():
        tensors[name] = _tensor_entry(name, entry, data_start, data_len, file)
        begin, end = entry["data_offsets"]
        spans.append((begin, end, name))
    _check_coverage(spans, data_len, file)
    return tensors, {str(k): str(v) for k, v in metadata.items()}


def _tensor_entry(
    name: str, entry: object, data_start: int, data_len: int, file: Path
) -> TensorInfo:
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise KitError(f"header entry {name!r} lacks dtype/shape/data_offsets", file)
    dtype = entry["dtype"]
    if not isinstance(dtype, str) or dtype not in DTYPE_SIZES:
        raise KitError(f"tensor {name!r} has unknown dtype {dtype!r}", file)
    shape = entry["shape"]
    offs = entry["data_offsets"]
    if (
        not isinstance(shape, list)
        or not all(isinstance(d, int) and d >= 0 for d in shape)
        or not isinstance(offs, list)
        or len(offs) != 2
        or not all(isinstance(o, int) for o in offs)
    ):
        raise KitError(f"tensor {name!r} has a malformed shape or data_offsets", file)
    begin, end = offs
    numel = 1
    for d in shape:
        numel *= d
    expected = numel * DTYPE_SIZES[dtype]
    if not 0 <= begin <= end:
        raise KitError(f"tensor {name!r} has data_offsets {offs} out of order", file)
    if end > data_len:
        raise KitError(
            f"tensor {name!r} data [{begin}, {end}) runs outside the {data_len}-byte data section; truncated?",
            file,
        )
    if end - begin != expected and dtype != "F4":
        raise KitError(
            f"tensor {name!r} spans {end - begin} bytes but {dtype}{shape} needs {expected}", file
        )
    return TensorInfo(
        name, dtype, tuple(shape), end - begin, file, (data_start + begin, data_start + end)
    )


def _check_coverage(spans: list[tuple[int, int, str]], data_len: int, file: Path) -> None:
    """Tensors must tile the data section exactly, as safetensors itself demands on load.

    Sorted by start, any overlap shows up between neighbours (a span that starts inside an
    earlier one starts inside its successor too), so one pass finds overlaps and gaps.
    """
    spans.sort()
    for (_b0, e0, n0), (b1, _e1, n1) in itertools.pairwise(spans):
        if b1 < e0:
            raise KitError(f"tensors {n0!r} and {n1!r} overlap in the data section", file)
        if b1 > e0:
            raise KitError(
                f"gap of {b1 - e0} bytes before tensor {n1!r} in the data section "
                "(safetensors refuses such a file)",
                file,
            )
    covered = spans[-1][1] if spans else 0
    first = spans[0][0] if spans else 0
    if first != 0 or covered != data_len:
        raise KitError(
            f"tensors cover bytes [{first}, {covered}) of a {data_len}-byte data section "
            "(safetensors refuses a file it does not fully cover)",
            file,
        )


def read_index_shards(index: Path) -> tuple[dict[str, str], list[str]]:
    """An index's weight map and the shards it names, each inside the index's folder."""
    data = read_json_file(index, "index")
    try:
        weight_map = data["weight_map"]
        if not isinstance(weight_map, dict) or not all(
            isinstance(v, str) for v in weight_map.values()
        ):
            raise TypeError
    except (KeyError, TypeError):
        raise KitError(
            "not a valid safetensors index (needs a JSON object with 'weight_map')", index
        ) from None
    shard_names = sorted(set(weight_map.values()))
    for shard in shard_names:
        if Path(shard).is_absolute() or ".." in Path(shard).parts:
            raise KitError(f"index names shard {shard!r} outside its folder", index)
    return weight_map, shard_names


def has_complete_weights(folder: Path) -> bool:
    """Whether `folder` holds a whole checkpoint: every shard its index names, or weights."""
    index = folder / INDEX_NAME
    if index.is_file():
        try:
            return all((folder / s).is_file() for s in read_index_shards(index)[1])
        except KitError:
            return True  # a broken index: opening the folder names its problem
    return has_checkpoint(folder)
