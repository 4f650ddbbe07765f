"""Stand-ins for process-wide things SGLang's CPU path touches but cannot have on a CPU host:
`torch.cuda.synchronize`, CUDA streams, and torchvision, whose PyPI builds do not load beside
torch's CPU build."""

from __future__ import annotations

import importlib.abc
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


@contextmanager
def absent_torchvision() -> Iterator[None]:
    """While an SGLang module that imports torchvision at module level executes (its rows in
    `STANDINS`), and only when torchvision is not installed: `torchvision` and its submodules
    are placeholders whose names exist and raise when called. Those modules use torchvision
    only to preprocess images, which a text request never reaches; torchvision's PyPI builds
    link torch's CUDA libraries and do not load beside its CPU build. The placeholders are gone
    from `sys.modules` afterwards, so nothing else (transformers' image processors) takes
    torchvision for present."""
    if importlib.util.find_spec("torchvision") is not None:
        yield
        return
    finder = _Placeholders()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name, module in list(sys.modules.items()):
            if isinstance(module, _AbsentModule):
                del sys.modules[name]


class _Absent:
    """A torchvision name on a host without torchvision: it exists, and using it raises."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> _Absent:
        return _Absent(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ModuleNotFoundError(
            f"{self._name}: torchvision is not installed here (image requests need it)",
            name="torchvision",
        )


class _AbsentModule(ModuleType):
    """A torchvision module on a host without torchvision: every name is an `_Absent`."""

    def __getattr__(self, attr: str) -> _Absent:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self.__name__}.{attr}")


class _Placeholders(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torchvision` and its submodules as `_AbsentModule`s."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.partition(".")[0] != "torchvision":
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return _AbsentModule(spec.name, "the kit's CPU stand-in: torchvision is not installed")

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: every name is made on access."""


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
