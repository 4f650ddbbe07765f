"""Stand-ins for two process-wide things SGLang's CPU path touches but cannot have on a CPU
host: `torch.cuda.synchronize` and a torchvision that loads beside torch's CPU build."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any


def no_cuda_synchronize(module: ModuleType) -> None:
    """`LlamaForCausalLM.set_embed` / `set_embed_and_head` end with `torch.cuda.synchronize()`
    unconditionally (sglang 0.5.10 models/llama.py:763,778; 0.5.11 :772,791; 0.5.12 :774,793):
    the EAGLE-3 draft takes the target's embedding through them, and without a CUDA device the
    call raises. CPU work is synchronous: there is nothing to wait for."""
    import torch

    if not torch.cuda.is_available():
        torch.cuda.synchronize = _nothing_to_wait_for


def _nothing_to_wait_for(device: Any = None) -> None:
    """torch.cuda.synchronize on a host without CUDA: CPU work is already done."""


def decode_jpeg(*args: Any, **kwargs: Any) -> Any:
    """torchvision.io.decode_jpeg, imported when an image request needs it (as sglang 0.5.23
    utils/common.py:2114 does)."""
    from torchvision.io import decode_jpeg as shipped

    return shipped(*args, **kwargs)


@contextmanager
def lazy_torchvision() -> Iterator[None]:
    """While `sglang.srt.utils.common` executes: its module-level `from torchvision.io import
    decode_jpeg` (0.5.10, 0.5.11 and 0.5.12 utils/common.py:90; image requests only) gets
    `decode_jpeg` above when torchvision is not installed. torchvision's PyPI builds link
    torch's CUDA libraries and do not load beside its CPU build. The two modules are gone again
    afterwards, so nothing else (transformers' image processors) takes torchvision for present."""
    if importlib.util.find_spec("torchvision") is not None:
        yield
        return
    package = _module("torchvision", package=True)
    io = _module("torchvision.io", decode_jpeg=decode_jpeg)
    package.io = io
    sys.modules.update({"torchvision": package, "torchvision.io": io})
    try:
        yield
    finally:
        for name, module in (("torchvision", package), ("torchvision.io", io)):
            if sys.modules.get(name) is module:
                del sys.modules[name]


def _module(name: str, package: bool = False, **names: Any) -> ModuleType:
    module = ModuleType(name, f"the kit's CPU stand-in for {name} (sglang.srt.utils.common only)")
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    if package:
        module.__path__ = []
    module.__dict__.update(names)
    return module


def no_cpu_record_stream(module: ModuleType) -> None:
    """The overlap scheduler and the spec v2 worker mark tensors used on another stream with
    `Tensor.record_stream(torch.get_device_module(device).current_stream())` (sglang 0.5.11
    managers/overlap_utils.py:146, speculative/eagle_worker_v2.py:763), which torch refuses
    for a CPU tensor ("unknown parameter type"). It only keeps a CUDA caching allocator from
    reusing memory another stream still reads; CPU tensors have no such allocator."""
    import torch

    shipped = torch.Tensor.record_stream
    if getattr(shipped, "_kit_cpu", False):
        return

    def record_stream(self: torch.Tensor, stream: Any) -> None:
        if self.device.type != "cpu":
            shipped(self, stream)

    record_stream._kit_cpu = True  # type: ignore[attr-defined]
    torch.Tensor.record_stream = record_stream  # type: ignore[method-assign]
