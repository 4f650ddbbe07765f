"""Open a draft (or target) checkpoint the way the engines will, reading headers only.

A checkpoint is one `.safetensors` file, a sharded set behind `model.safetensors.index.json`, a
folder holding either, a `pytorch_model.bin` / `.pt` (opened with `torch.load(weights_only=True,
mmap=True)` only: never a plain unpickle), or a Hugging Face repo id (`kit.checkpoint.hub`: the
local cache, else the Hub's headers by range). For safetensors only the 8-byte length and the
JSON header are read; tensor bytes are read on request: as numpy arrays (`read_array`, the
statistics; no torch needed) or as torch tensors (`Checkpoint.read_tensor`, for building modules).
A pickle always needs torch.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from kit.checkpoint import hub
from kit.checkpoint.decode import DECODABLE, decode
from kit.checkpoint.header import (
    DTYPE_SIZES,
    FLOAT_DTYPES,
    INDEX_NAME,
    PICKLE_NAMES,
    TensorInfo,
    has_checkpoint,
    header_length,
    parse_header,
    read_index_shards,
)
from kit.errors import KitError
from kit.limits import read_json_file
from kit.load.undo import UNDO_SUFFIX, torn_files


@dataclass
class Checkpoint:
    """Every tensor of a checkpoint by name, plus its config.json when one sits beside it."""

    path: Path
    kind: str  # "safetensors" | "sharded" | "pickle"
    files: list[Path]
    tensors: dict[str, TensorInfo]
    config_path: Path | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    # a checkpoint on the Hub (kit.checkpoint.hub.HubSource): tensor bytes are read by range
    source: Any = None

    @property
    def folder(self) -> Path:
        return self.path if self.path.is_dir() or self.source else self.path.parent

    def keys(self) -> list[str]:
        return list(self.tensors)

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def read_tensor(self, name: str):
        """The tensor's values as a torch tensor (bytes are read now, one tensor at a time)."""
        with self.tensor_reader() as read:
            return read(name)

    @contextmanager
    def tensor_reader(self) -> Iterator[Callable[[str], Any]]:
        """`read_tensor` for a block of reads (a module's whole state): each safetensors file
        opened once for all of them, not once per tensor."""
        if self.kind == "pickle" or self.source is not None:
            yield self._read_apart
            return
        from safetensors import safe_open

        with ExitStack() as stack:
            handles: dict[Path, Any] = {}

            def read(name: str):
                file = self.tensors[name].file
                if file not in handles:
                    handles[file] = stack.enter_context(safe_open(str(file), framework="pt"))
                return handles[file].get_tensor(name)

            yield read

    def _read_apart(self, name: str):
        info = self.tensors[name]
        if self.kind == "pickle":
            return _load_pickle(info.file)[name]
        return _remote_tensor(self.source, info)


def _remote_tensor(source: hub.HubSource, info: TensorInfo):
    """One tensor read by range from the Hub, wrapped in a one-tensor safetensors blob so
    safetensors itself builds the torch tensor (every dtype it knows, no table of ours)."""
    from safetensors.torch import load

    raw = source.read(info.file, info.offsets[0], info.nbytes) if info.nbytes else b""
    entry = {"dtype": info.dtype, "shape": list(info.shape), "data_offsets": [0, len(raw)]}
    header = json.dumps({info.name: entry}).encode()
    return load(struct.pack("<Q", len(header)) + header + raw)[info.name]


def open_checkpoint(path: str | Path) -> Checkpoint:
    """Open any supported checkpoint; a `KitError` names the file and the problem otherwise."""
    ck = _open(path)
    if ck.kind != "pickle" and any(ck.folder.glob(f"*{UNDO_SUFFIX}")):
        _refuse_torn(ck)
    return ck


def _refuse_torn(ck: Checkpoint) -> None:
    """A header torn mid-patch may still parse, with key names that are half old, half new:
    an undo record beside the checkpoint tells it apart from either version."""
    torn = torn_files(ck.folder)
    if torn:
        raise KitError(
            f"the header of {', '.join(torn)} is half the original, half the fixed one: an "
            f"interrupted `fix --in-place` or `--undo` left it so; `python -m kit fix "
            f"{ck.folder} --undo` restores the original, re-running the fix completes it",
            ck.folder,
        )


def _open(path: str | Path) -> Checkpoint:
    p = hub.resolve(path)
    if not p.exists():
        raise KitError("no such file or folder (nor a Hugging Face Hub repo id)", p)
    if p.is_dir():
        source = hub.source_of(p)
        return open_remote(source) if source is not None else _open_folder(p)
    if p.name.endswith(".index.json"):
        return _open_index(p)
    if p.suffix == ".safetensors":
        _refuse_lone_shard(p)
        return _open_single(p)
    if p.suffix in (".bin", ".pt", ".pth"):
        return _open_pickle(p)
    if p.name == "config.json":
        if has_checkpoint(p.parent):
            raise KitError(
                f"this is a config file; the checkpoint is its folder: pass {p.parent}", p
            )
        raise KitError(f"this is a config file and no weights sit beside it; {CONFIG_ONLY}", p)
    raise KitError(
        "not a checkpoint (expected .safetensors, an index .json, .bin/.pt or a folder)", p
    )


# Where a config alone leads: the commands that read a draft's config without its weights.
CONFIG_ONLY = (
    "commands that take a config alone: `trace --draft PATH --target-config …`, "
    "`doctor --draft PATH --target-config …`; inspect, simulate and fix need the weights "
    "(.safetensors, an index or pytorch_model.bin)"
)
# `model-00001-of-00002.safetensors`: the name transformers gives shard 1 of 2.
_SHARD_NAME = re.compile(r"-(\d+)-of-(\d+)\.safetensors$")


def _config_beside(folder: Path) -> Path | None:
    c = folder / "config.json"
    return c if c.is_file() else None


def _refuse_lone_shard(file: Path) -> None:
    """One shard is not the draft: the engines load every shard the index lists.

    Opened alone, a shard lacks the other shards' tensors and every later step would report
    them missing (LM_HEAD_MISSING for a head that sits in shard 2), so the error names the
    index or folder that holds the whole checkpoint instead.
    """
    index = file.parent / INDEX_NAME
    listed = _index_lists(index, file.name)
    m = _SHARD_NAME.search(file.name)
    of = int(m.group(2)) if m else 1
    if listed:
        raise KitError(
            f"one of the shards that {index.name} beside it lists; the checkpoint is all of "
            f"them: pass the folder ({file.parent}) or the index",
            file,
        )
    if of > 1:
        raise KitError(
            f"shard {int(m.group(1))} of {of} by its name, and no {INDEX_NAME} beside it says "
            "which tensors the other shards hold: put the index saved with the shards next to "
            "them and pass the folder",
            file,
        )


def _index_lists(index: Path, shard: str) -> bool:
    if not index.is_file():
        return False
    try:
        weight_map = read_json_file(index)["weight_map"]
        return shard in set(weight_map.values())
    except (KitError, KeyError, TypeError, AttributeError):
        return False  # a broken index: the folder's own open names its problem


def _open_folder(folder: Path) -> Checkpoint:
    if (folder / INDEX_NAME).is_file():
        return _open_index(folder / INDEX_NAME)
    singles = sorted(folder.glob("*.safetensors"))
    if len(singles) == 1:
        _refuse_lone_shard(singles[0])
        ck = _open_single(singles[0])
        ck.path = folder
        return ck
    if len(singles) > 1:
        names = ", ".join(s.name for s in singles[:4])
        raise KitError(
            f"{len(singles)} .safetensors files ({names}…) but no {INDEX_NAME} to say how they "
            "fit: put the index saved with them here, or pass the one file that is the draft",
            folder,
        )
    for name in PICKLE_NAMES:
        if (folder / name).is_file():
            ck = _open_pickle(folder / name)
            ck.path = folder
            return ck
    if _config_beside(folder):
        raise KitError(
            f"no weights here, only config.json (no .safetensors, index or pytorch_model.bin); "
            f"{CONFIG_ONLY}",
            folder,
        )
    raise KitError("no checkpoint here (no .safetensors, index or pytorch_model.bin)", folder)


def read_safetensors_header(file: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Parse and validate one safetensors header: every range inside the file, none overlapping.

    A header that does not parse beside a `fix --in-place` undo record may be one that a killed
    run left half-written: the error says how to restore or complete it.
    """
    try:
        return _read_header(file)
    except KitError as e:
        if not any(file.parent.glob(f"*{UNDO_SUFFIX}")):
            raise
        raise KitError(
            f"{e.problem}; an undo record of `fix --in-place` sits beside it, so an interrupted "
            f"fix may have left this header half-written: `python -m kit fix {file.parent} "
            "--undo` restores the original, re-running the fix completes it",
            file,
        ) from None


def _read_header(file: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    try:
        size = file.stat().st_size
        with open(file, "rb") as f:
            head = f.read(8)
            n = header_length(head, size, file)
            raw = f.read(n)
    except OSError as e:
        raise KitError(f"cannot read: {e.strerror}", file) from None
    return parse_header(raw, size, file)


def _open_single(file: Path) -> Checkpoint:
    tensors, meta = read_safetensors_header(file)
    return Checkpoint(file, "safetensors", [file], tensors, _config_beside(file.parent), meta)


def _open_index(index: Path) -> Checkpoint:
    weight_map, shard_names = read_index_shards(index)
    folder = index.parent
    tensors: dict[str, TensorInfo] = {}
    files = []
    for shard in shard_names:
        shard_path = folder / shard
        if not shard_path.is_file():
            raise KitError(f"index names shard {shard!r}, which does not exist", index)
        files.append(shard_path)
        shard_tensors, _ = read_safetensors_header(shard_path)
        tensors.update(shard_tensors)
    _check_index(weight_map, tensors, index)
    return Checkpoint(folder, "sharded", files, tensors, _config_beside(folder))


def open_remote(source: hub.HubSource) -> Checkpoint:
    """The checkpoint the repo's file list names, as `_open_folder` picks it on disk: the index
    and its shards, or the one .safetensors file; tensors keep their Hub byte ranges."""
    singles = sorted(f for f in source.files if f.endswith(".safetensors") and "/" not in f)
    config = source.folder / "config.json"
    config_path = config if config.is_file() else None
    if INDEX_NAME in source.files:
        index = source.folder / INDEX_NAME
        weight_map, shards = read_index_shards(index)
        tensors = {}
        for shard in shards:
            if shard not in source.files:
                raise KitError(
                    f"index names shard {shard!r}, which the repo does not hold",
                    source.where(index),
                )
            tensors.update(_remote_header(source, shard)[0])
        _check_index(weight_map, tensors, source.where(INDEX_NAME))
        files = [source.folder / s for s in shards]
        return Checkpoint(source.folder, "sharded", files, tensors, config_path, source=source)
    if len(singles) == 1:
        tensors, meta = _remote_header(source, singles[0])
        files = [source.folder / singles[0]]
        return Checkpoint(
            source.folder, "safetensors", files, tensors, config_path, meta, source=source
        )
    raise KitError(hub.no_safetensors(source, singles), source.where(""))


def _remote_header(source: hub.HubSource, name: str) -> tuple[dict, dict[str, str]]:
    head, size = source.header(name)
    tensors, meta = parse_header(head[8:], size, source.folder / name)
    return tensors, meta


def _check_index(weight_map: dict[str, str], tensors: dict[str, TensorInfo], where: Path) -> None:
    """Every tensor the index maps sits in the shard it names, and no shard holds one it omits
    (on disk or on the Hub: `where` names the index in the error)."""
    for name, shard in weight_map.items():
        info = tensors.get(name)
        if info is None or info.file.name != Path(shard).name:
            raise KitError(
                f"index maps {name!r} to {shard!r}, but that shard does not hold it", where
            )
    extra = set(tensors) - set(weight_map)
    if extra:
        raise KitError(f"shards hold tensors the index does not list: {sorted(extra)[:3]}", where)


def _load_pickle(file: Path) -> dict:
    """torch.load with weights_only=True: a pickle that tries to run code is refused, not run."""
    import pickle
    import zipfile

    if not zipfile.is_zipfile(file):
        raise KitError(
            "not a torch.save zip archive (a legacy or plain pickle is refused: "
            "only zip archives are read, with weights_only=True)",
            file,
        )
    import torch

    try:
        obj = torch.load(str(file), map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "refused"
        raise KitError(f"refused to unpickle (weights_only): {first}", file) from None
    except Exception as e:  # any failure to parse a zip archive is bad input, not a kit bug
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
    state = _load_pickle(file)
    import torch

    tensors = {}
    for name, t in state.items():
        if not isinstance(t, torch.Tensor):
            continue
        dtype = _TORCH_TO_ST.get(str(t.dtype), str(t.dtype))
        tensors[name] = TensorInfo(name, dtype, tuple(t.shape), t.numel() * t.element_size(), file)
    return Checkpoint(file, "pickle", [file], tensors, _config_beside(file.parent))


def total_bytes(ck: Checkpoint) -> int:
    return sum(t.nbytes for t in ck.tensors.values())


# --- statistics from tensor bytes (only on request) ---------------------------------------------

# Bytes read per step when streaming a tensor: memory stays flat whatever the tensor's size.
STATS_CHUNK_BYTES = 1 << 20
# A sampled read takes this many bytes of each tensor, in SAMPLE_WINDOWS evenly spaced windows
# (smaller tensors are read whole): 16 MiB for a 16-tensor draft whatever its size, enough
# values (512 Ki BF16) that the init tests below see the statistics of the whole tensor.
SAMPLE_BYTES = 1 << 20
SAMPLE_WINDOWS = 16


@dataclass(frozen=True)
class TensorStats:
    """Summary statistics of one tensor's values (over its finite values; NaN/Inf counted).

    `values_read` is how many values the statistics come from: `numel` after a full read, fewer
    after a sampled one (then min, max and the NaN/Inf counts are those of the sample)."""

    name: str
    dtype: str
    numel: int
    min: float
    max: float
    mean: float
    std: float
    excess_kurtosis: float  # 0 for a Gaussian, -1.2 for a uniform distribution
    nan: int
    inf: int
    values_read: int

    @property
    def absmax(self) -> float:
        return max(abs(self.min), abs(self.max))

    @property
    def sampled(self) -> bool:
        return self.values_read < self.numel

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class _Moments:
    """Running power sums in float64, fed chunk by chunk."""

    def __init__(self) -> None:
        self.n = self.nan = self.inf = 0
        self.sums = [0.0, 0.0, 0.0, 0.0]
        self.lo, self.hi = math.inf, -math.inf

    def add(self, chunk: np.ndarray) -> None:
        x = np.asarray(chunk).reshape(-1).astype(np.float64)
        nan = np.isnan(x)
        inf = np.isinf(x)
        self.nan += int(nan.sum())
        self.inf += int(inf.sum())
        x = x[~(nan | inf)]
        if x.size == 0:
            return
        self.n += x.size
        p = x.copy()
        for k in range(4):
            self.sums[k] += float(p.sum())
            if k < 3:
                p *= x
        self.lo = min(self.lo, float(x.min()))
        self.hi = max(self.hi, float(x.max()))

    def result(self, info: TensorInfo) -> TensorStats:
        n = self.n
        if n == 0:
            m1 = std = kurt = lo = hi = math.nan
        else:
            m1, m2, m3, m4 = (s / n for s in self.sums)
            var = max(m2 - m1 * m1, 0.0)
            central4 = m4 - 4 * m1 * m3 + 6 * m1 * m1 * m2 - 3 * m1**4
            kurt = central4 / (var * var) - 3.0 if var > 0 else math.nan
            std = math.sqrt(var * n / (n - 1)) if n > 1 else 0.0
            lo, hi = self.lo, self.hi
        return TensorStats(
            name=info.name,
            dtype=info.dtype,
            numel=info.numel,
            min=lo,
            max=hi,
            mean=m1,
            std=std,
            excess_kurtosis=kurt,
            nan=self.nan,
            inf=self.inf,
            values_read=n + self.nan + self.inf,
        )


def sample_spans(numel: int, sample_values: int | None) -> list[tuple[int, int]]:
    """Element ranges [start, stop) to read: the whole tensor, or SAMPLE_WINDOWS windows spread
    evenly from its first value to its last when it holds more than `sample_values` values."""
    if sample_values is None or numel <= sample_values:
        return [(0, numel)]
    width = max(sample_values // SAMPLE_WINDOWS, 1)
    last = numel - width
    starts = sorted({k * last // (SAMPLE_WINDOWS - 1) for k in range(SAMPLE_WINDOWS)})
    return [(start, start + width) for start in starts]


class TensorValues:
    """Tensor bytes of one checkpoint: each file opened at its first read and kept open until
    `close` (so one command's statistics and vocab-map reads share one handle per file), or
    ranges read from the Hub."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck
        self._open: dict[Path, BinaryIO] = {}

    def read(self, file: Path, pos: int, length: int) -> bytes:
        if self.ck.source is not None:
            return self.ck.source.read(file, pos, length)
        if file not in self._open:
            self._open[file] = open(file, "rb")  # noqa: SIM115 (closed by close())
        f = self._open[file]
        f.seek(pos)
        return f.read(length)

    def close(self) -> None:
        for f in self._open.values():
            f.close()
        self._open.clear()


@contextmanager
def tensor_values(ck: Checkpoint) -> Iterator[TensorValues]:
    """A `TensorValues` for the block: every read inside shares its open files."""
    values = TensorValues(ck)
    try:
        yield values
    finally:
        values.close()


def tensor_stats(
    ck: Checkpoint,
    name: str,
    chunk_bytes: int = STATS_CHUNK_BYTES,
    sample_bytes: int | None = None,
    values: TensorValues | None = None,
) -> TensorStats:
    """Statistics of one tensor, streamed in chunks (safetensors) so memory stays flat; with
    `sample_bytes`, of evenly spaced windows totalling about that many bytes. Values are decoded
    with numpy (bf16 and float8 included): no torch for a safetensors checkpoint. `values`: the
    checkpoint's files already open (`checkpoint_stats` opens each file once, not per tensor)."""
    info = ck.tensors[name]
    if info.dtype not in DECODABLE:
        raise KitError(f"no statistics for dtype {info.dtype} (tensor {name!r})", info.file)
    if info.offsets is None:
        return checkpoint_stats(ck, [name], sample_bytes)[name]
    if values is None:
        with tensor_values(ck) as values:
            return tensor_stats(ck, name, chunk_bytes, sample_bytes, values)
    item = DTYPE_SIZES[info.dtype]
    spans = sample_spans(info.numel, None if sample_bytes is None else sample_bytes // item)
    step = max(chunk_bytes // item, 1)
    moments = _Moments()
    for start, stop in spans:
        pos = info.offsets[0] + start * item
        left = (stop - start) * item
        while left:
            buf = values.read(info.file, pos, min(step * item, left))
            if len(buf) % item or not buf:
                raise KitError(f"file ends inside tensor {name!r}", info.file)
            left -= len(buf)
            pos += len(buf)
            moments.add(decode(buf, info.dtype))
    return moments.result(info)


def checkpoint_stats(
    ck: Checkpoint,
    names: list[str] | None = None,
    sample_bytes: int | None = None,
    values: TensorValues | None = None,
) -> dict[str, TensorStats]:
    """Statistics of every tensor (or `names`) whose dtype can be decoded: from every byte, or
    from about `sample_bytes` of each (`SAMPLE_BYTES`: a bounded read whatever the size)."""
    chosen = names if names is not None else list(ck.tensors)
    if ck.source is not None:
        sample_bytes = _hub_budget(ck, sample_bytes)
    if ck.kind == "pickle":
        return _pickle_stats(ck, chosen, sample_bytes)
    if values is None:
        with tensor_values(ck) as values:
            return checkpoint_stats(ck, chosen, sample_bytes, values)
    return {
        n: tensor_stats(ck, n, sample_bytes=sample_bytes, values=values)
        for n in chosen
        if ck.tensors[n].dtype in DECODABLE
    }


def _pickle_stats(
    ck: Checkpoint, chosen: list[str], sample_bytes: int | None
) -> dict[str, TensorStats]:
    import torch

    state = _load_pickle(ck.files[0])  # one load (mapped), not one per tensor
    out = {}
    for n in chosen:
        flat = state[n].reshape(-1)
        item = flat.element_size()
        moments = _Moments()
        for start, stop in sample_spans(
            flat.numel(), None if sample_bytes is None else sample_bytes // item
        ):
            moments.add(flat[start:stop].to(torch.float64).numpy())
        out[n] = moments.result(ck.tensors[n])
    return out


def _hub_budget(ck: Checkpoint, sample_bytes: int | None) -> int:
    """Statistics of a Hub checkpoint read a bounded sample of each tensor, never every byte."""
    if sample_bytes is None:
        raise KitError(
            "statistics from every byte need the whole checkpoint: pass --download to fetch "
            "it, or read sampled statistics (the default) by range",
            ck.source.where(""),
        )
    return min(sample_bytes, hub.HUB_SAMPLE_BYTES)


def read_array(ck: Checkpoint, name: str, values: TensorValues | None = None) -> np.ndarray:
    """One tensor's values as a flat numpy array, read whole (vocab maps: one value per token).
    safetensors bytes are decoded with numpy (on disk or by range from the Hub); a pickle goes
    through torch (the offline extra)."""
    info = ck.tensors[name]
    if info.offsets is None:
        import torch

        return (
            ck.read_tensor(name)
            .reshape(-1)
            .to(torch.float64 if info.dtype in FLOAT_DTYPES else torch.int64)
            .numpy()
        )
    if info.dtype not in DECODABLE:
        raise KitError(f"cannot read values of dtype {info.dtype} (tensor {name!r})", info.file)
    if values is None:
        with tensor_values(ck) as values:
            return read_array(ck, name, values)
    buf = values.read(info.file, info.offsets[0], info.nbytes) if info.nbytes else b""
    if len(buf) != info.nbytes:
        raise KitError(f"file ends inside tensor {name!r}", info.file)
    return decode(buf, info.dtype)


# A value this large in a weight is not learned: it is leftover memory (torch.empty) or divergence.
HUGE_VALUE = 1e6


def looks_untrained(
    info: TensorInfo, stats: TensorStats, initializer_range: float = 0.02
) -> str | None:
    """Why this tensor looks like it never left its initial value (or was never written), if so.

    Tests, in order: NaN/Inf or huge values (uninitialised memory), an RMSNorm weight of all ones
    (its init), one repeated value, and a linear weight whose statistics match a fresh init: normal
    with std = initializer_range (HF `_init_weights`) or kaiming-uniform (torch `nn.Linear`).
    """
    if info.dtype not in FLOAT_DTYPES:
        return None  # d2t / t2d and other index tensors: constant values can be legitimate
    if stats.nan or stats.inf:
        return f"{stats.nan} NaN and {stats.inf} Inf values: uninitialised memory or a diverged run"
    finite = stats.values_read
    if finite and stats.absmax > HUGE_VALUE:
        return f"values up to {stats.absmax:.3g}: looks like uninitialised memory"
    if finite < 2:
        return None
    if stats.min == stats.max:
        if stats.min == 1.0 and len(info.shape) == 1 and "norm" in info.name:
            return "all ones: an RMSNorm weight at its initial value"
        return f"every value is {stats.min:g}: one repeated value"
    if len(info.shape) == 2 and finite >= 256:
        return _fresh_linear_init(info, stats, initializer_range)
    return None


def _fresh_linear_init(info: TensorInfo, s: TensorStats, initializer_range: float) -> str | None:
    n = s.values_read  # the tolerances are those of the values the statistics come from
    # sampling noise of the std and mean estimates, plus a margin a trained weight leaves behind
    rel = 0.03 + 4 / math.sqrt(2 * n)
    kurt_tol = 0.3 + 4 * math.sqrt(24 / n)
    centred = abs(s.mean) < 4 * s.std / math.sqrt(n) + 1e-3 * s.std
    if not centred:
        return None
    if abs(s.std / initializer_range - 1) < rel and abs(s.excess_kurtosis) < kurt_tol:
        return (
            f"mean {s.mean:.2g}, std {s.std:.4g} ≈ initializer_range {initializer_range}, "
            f"Gaussian (excess kurtosis {s.excess_kurtosis:.2f}): matches a fresh normal init"
        )
    bound = 1 / math.sqrt(info.shape[1])
    if (
        abs(s.std / (bound / math.sqrt(3)) - 1) < rel
        and s.absmax <= bound * 1.01
        and abs(s.excess_kurtosis + 1.2) < kurt_tol
    ):
        return (
            f"uniform within ±{bound:.4g} = 1/sqrt(in_features {info.shape[1]}), std {s.std:.4g}: "
            "matches torch's fresh kaiming-uniform nn.Linear init"
        )
    return None


def folder_state(folder: Path) -> tuple:
    """The folder and each file's name, size and modification time: what a rewrite changes.
    The key of what a process keeps loaded from a folder (the target model, its tokenizer)."""
    root = folder.resolve()
    stats = [(f.name, f.stat()) for f in sorted(root.iterdir()) if f.is_file()]
    return (root, *((name, st.st_size, st.st_mtime_ns) for name, st in stats))
