"""Which checkpoint key each draft parameter was written from, seen from inside the loader.

Engines load through per-parameter `weight_loader`s that end in an in-place write (`copy_`,
`fill_`, `__setitem__`) into the parameter's storage. A `TorchFunctionMode` active only while the
draft's `load_weights` runs sees every such call: the destination's storage names the parameter,
the source's address names the key it came from (an address range of each tensor the loader was
handed). No tensor is modified or copied; only addresses and element counts are kept, and the
parameters are dropped when the load ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_WRITES = {"copy_", "fill_", "zero_", "__setitem__", "index_copy_", "masked_fill_", "normal_"}


@dataclass
class KeySeen:
    key: str
    shape: list[int]
    dtype: str
    written: dict[str, int] = field(default_factory=dict)  # parameter -> elements written
    regions: list[list] = field(default_factory=list)  # [parameter, first element, count]


@dataclass
class ParamSeen:
    name: str
    shape: list[int]
    numel: int
    storage: int
    offset: int
    written: int = 0
    writes: int = 0


class LoadRecorder(TorchFunctionMode):
    """Active around one `load_weights` call; `keys` and `params` are the evidence."""

    def __init__(self, params: Iterable[tuple[str, torch.Tensor]]) -> None:
        super().__init__()
        self.params: dict[str, ParamSeen] = {}
        self._by_storage: dict[int, str] = {}
        for name, p in params:
            ptr = p.untyped_storage().data_ptr()
            self.params[name] = ParamSeen(name, list(p.shape), p.numel(), ptr, p.storage_offset())
            self._by_storage.setdefault(ptr, name)
        self.keys: list[KeySeen] = []
        self._ranges: list[tuple[int, int, int]] = []  # (start, end, index into keys)

    def watch(self, weights: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
        """The loader's input, unchanged, with each key and its address range noted."""
        for name, tensor in weights:
            if isinstance(tensor, torch.Tensor):
                self.keys.append(KeySeen(name, list(tensor.shape), str(tensor.dtype)))
                start = tensor.data_ptr()
                nbytes = tensor.numel() * tensor.element_size()
                if nbytes:
                    self._ranges.append((start, start + nbytes, len(self.keys) - 1))
            yield name, tensor

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in _WRITES and args and isinstance(args[0], torch.Tensor):
            self._note(name, args)
        return out

    def _note(self, name: str, args: tuple[Any, ...]) -> None:
        dst = args[0]
        param = self._by_storage.get(dst.untyped_storage().data_ptr())
        if param is None:
            return
        region = dst[args[1]] if name == "__setitem__" else dst
        numel = region.numel()
        seen = self.params[param]
        seen.written += numel
        seen.writes += 1
        src = (
            args[2]
            if name == "__setitem__" and len(args) > 2
            else args[1]
            if len(args) > 1
            else None
        )
        key = self._key_of(src)
        if key is not None:
            key.written[param] = key.written.get(param, 0) + numel
            key.regions.append([param, region.storage_offset() - seen.offset, numel])

    def _key_of(self, src: Any) -> KeySeen | None:
        if not isinstance(src, torch.Tensor) or src.numel() == 0:
            return None
        ptr = src.data_ptr()
        for start, end, index in reversed(self._ranges):
            if start <= ptr < end:
                return self.keys[index]
        return None

    def evidence(self) -> dict[str, Any]:
        """The JSON the report keeps: every key and where it went, every parameter's coverage."""
        keys = [
            {
                "key": k.key,
                "shape": k.shape,
                "dtype": k.dtype,
                "written_to": sorted(k.written),
                "regions": k.regions,  # the shard: where in the parameter it went
            }
            for k in self.keys
        ]
        params = [
            {
                "name": p.name,
                "shape": p.shape,
                "numel": p.numel,
                "written": min(p.written, p.numel),
                "state": _state(p),
            }
            for p in self.params.values()
        ]
        return {"keys": keys, "params": params}


def _state(p: ParamSeen) -> str:
    if p.written == 0:
        return "never_written"
    return "written" if p.written >= p.numel else "partly_written"
