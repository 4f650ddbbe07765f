"""Open a draft (or target) checkpoint the way the engines will, reading headers only.

A checkpoint is one `.safetensors` file, a sharded set behind `model.safetensors.index.json`, a
folder holding either, a `pytorch_model.bin` / `.pt` (opened with `torch.load(weights_only=True,
mmap=True)` only: never a plain unpickle), or a local Hugging Face cache entry named by repo id.
For safetensors only the 8-byte length and the JSON header are read; tensor bytes are read on
request (`read_tensor`, `stats`).
"""

from __future__ import annotations

import itertools
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import KitError

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


@dataclass
class Checkpoint:
    """Every tensor of a checkpoint by name, plus its config.json when one sits beside it."""

    path: Path
    kind: str  # "safetensors" | "sharded" | "pickle"
    files: list[Path]
    tensors: dict[str, TensorInfo]
    config_path: Path | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path if self.path.is_dir() else self.path.parent

    def keys(self) -> list[str]:
        return list(self.tensors)

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def read_tensor(self, name: str):
        """The tensor's values as a torch tensor (bytes are read now, one tensor at a time)."""
        info = self.tensors[name]
        if self.kind == "pickle":
            return _load_pickle(info.file)[name]
        from safetensors import safe_open

        with safe_open(str(info.file), framework="pt") as f:
            return f.get_tensor(name)

    def iter_tensors(self) -> Iterator[tuple[str, object]]:
        for name in self.tensors:
            yield name, self.read_tensor(name)


def open_checkpoint(path: str | Path) -> Checkpoint:
    """Open any supported checkpoint; a `KitError` names the file and the problem otherwise."""
    p = Path(path)
    if not p.exists():
        resolved = _resolve_hf_cache(str(path))
        if resolved is None:
            raise KitError(
                "no such file or folder (nor a Hugging Face repo id in the local cache)", p
            )
        p = resolved
    if p.is_dir():
        return _open_folder(p)
    if p.name.endswith(".index.json"):
        return _open_index(p)
    if p.suffix == ".safetensors":
        return _open_single(p)
    if p.suffix in (".bin", ".pt", ".pth"):
        return _open_pickle(p)
    if p.name == "config.json":
        raise KitError("this is a config file, not a checkpoint; pass its folder", p)
    raise KitError(
        "not a checkpoint (expected .safetensors, an index .json, .bin/.pt or a folder)", p
    )


def _config_beside(folder: Path) -> Path | None:
    c = folder / "config.json"
    return c if c.is_file() else None


def _open_folder(folder: Path) -> Checkpoint:
    if (folder / INDEX_NAME).is_file():
        return _open_index(folder / INDEX_NAME)
    singles = sorted(folder.glob("*.safetensors"))
    if len(singles) == 1:
        ck = _open_single(singles[0])
        ck.path = folder
        return ck
    if len(singles) > 1:
        names = ", ".join(s.name for s in singles[:4])
        raise KitError(
            f"{len(singles)} .safetensors files ({names}…) but no {INDEX_NAME} to say how they fit",
            folder,
        )
    for name in PICKLE_NAMES:
        if (folder / name).is_file():
            ck = _open_pickle(folder / name)
            ck.path = folder
            return ck
    raise KitError("no checkpoint here (no .safetensors, index or pytorch_model.bin)", folder)


def read_safetensors_header(file: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Parse and validate one safetensors header: every range inside the file, none overlapping."""
    try:
        size = file.stat().st_size
        with open(file, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise KitError(
                    f"truncated: {size} bytes, shorter than the 8-byte header length", file
                )
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES:
                raise KitError(
                    f"header length {n} is implausible (limit {MAX_HEADER_BYTES}); not a safetensors file",
                    file,
                )
            if 8 + n > size:
                raise KitError(
                    f"header length {n} runs past the end of the file ({size} bytes); truncated?",
                    file,
                )
            raw = f.read(n)
    except OSError as e:
        raise KitError(f"cannot read: {e.strerror}", file) from None
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KitError(f"header is not valid JSON ({e})", file) from None
    if not isinstance(header, dict):
        raise KitError("header is not a JSON object", file)
    metadata = header.pop("__metadata__", None) or {}
    data_start = 8 + n
    data_len = size - data_start
    tensors: dict[str, TensorInfo] = {}
    spans: list[tuple[int, int, str]] = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
            raise KitError(f"header entry {name!r} lacks dtype/shape/data_offsets", file)
        dtype = entry["dtype"]
        if dtype not in DTYPE_SIZES:
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
                f"tensor {name!r} spans {end - begin} bytes but {dtype}{shape} needs {expected}",
                file,
            )
        spans.append((begin, end, name))
        tensors[name] = TensorInfo(
            name, dtype, tuple(shape), end - begin, file, (data_start + begin, data_start + end)
        )
    spans.sort()
    for (_b0, e0, n0), (b1, _e1, n1) in itertools.pairwise(spans):
        if b1 < e0:
            raise KitError(f"tensors {n0!r} and {n1!r} overlap in the data section", file)
    return tensors, {str(k): str(v) for k, v in metadata.items()}


def _open_single(file: Path) -> Checkpoint:
    tensors, meta = read_safetensors_header(file)
    return Checkpoint(file, "safetensors", [file], tensors, _config_beside(file.parent), meta)


def _open_index(index: Path) -> Checkpoint:
    try:
        data = json.loads(index.read_text())
        weight_map = data["weight_map"]
        if not isinstance(weight_map, dict):
            raise TypeError
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        raise KitError(
            "not a valid safetensors index (needs a JSON object with 'weight_map')", index
        ) from None
    folder = index.parent
    shard_names = sorted(set(weight_map.values()))
    tensors: dict[str, TensorInfo] = {}
    files = []
    for shard in shard_names:
        shard_path = folder / shard
        if not shard_path.is_file():
            raise KitError(f"index names shard {shard!r}, which does not exist", index)
        files.append(shard_path)
        shard_tensors, _ = read_safetensors_header(shard_path)
        tensors.update(shard_tensors)
    for name, shard in weight_map.items():
        info = tensors.get(name)
        if info is None or info.file.name != Path(shard).name:
            raise KitError(
                f"index maps {name!r} to {shard!r}, but that shard does not hold it", index
            )
    extra = set(tensors) - set(weight_map)
    if extra:
        raise KitError(f"shards hold tensors the index does not list: {sorted(extra)[:3]}", index)
    return Checkpoint(folder, "sharded", files, tensors, _config_beside(folder))


def _load_pickle(file: Path) -> dict:
    """torch.load with weights_only=True: a pickle that tries to run code is refused, not run."""
    import pickle

    import torch

    try:
        obj = torch.load(str(file), map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "refused"
        raise KitError(f"refused to unpickle (weights_only): {first}", file) from None
    except (RuntimeError, EOFError, OSError, ValueError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise KitError(f"not a readable torch checkpoint: {msg}", file) from None
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        raise KitError("torch file does not hold a state dict (name -> tensor)", file)
    return obj


_TORCH_TO_ST = {
    "torch.bfloat16": "BF16",
    "torch.float16": "F16",
    "torch.float32": "F32",
    "torch.float64": "F64",
    "torch.int64": "I64",
    "torch.int32": "I32",
    "torch.int16": "I16",
    "torch.int8": "I8",
    "torch.uint8": "U8",
    "torch.bool": "BOOL",
}


def _open_pickle(file: Path) -> Checkpoint:
    import torch

    state = _load_pickle(file)
    tensors = {}
    for name, t in state.items():
        if not isinstance(t, torch.Tensor):
            continue
        dtype = _TORCH_TO_ST.get(str(t.dtype), str(t.dtype))
        tensors[name] = TensorInfo(name, dtype, tuple(t.shape), t.numel() * t.element_size(), file)
    return Checkpoint(file, "pickle", [file], tensors, _config_beside(file.parent))


def _resolve_hf_cache(repo_id: str) -> Path | None:
    """A repo id such as `org/name` found in the local Hugging Face cache (never downloads)."""
    if repo_id.count("/") != 1 or repo_id.startswith(("/", ".")):
        return None
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:  # pragma: no cover - huggingface_hub is in requirements
        return None
    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except (LocalEntryNotFoundError, ValueError, OSError):
        return None


def dtype_summary(ck: Checkpoint) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in ck.tensors.values():
        counts[t.dtype] = counts.get(t.dtype, 0) + 1
    return counts


def total_bytes(ck: Checkpoint) -> int:
    return sum(t.nbytes for t in ck.tensors.values())


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
