"""The EAGLE tree kernels where sglang's `speculative/eagle_utils.py` has none for a CPU."""

from __future__ import annotations

import inspect
from types import ModuleType

from kit.engines.sglang.cpu import tree


def tree_kernels(module: ModuleType) -> None:
    """`build_tree_kernel_efficient` calls `sgl_build_tree_kernel_efficient`, imported only under
    CUDA/HIP (sglang 0.5.10 speculative/eagle_utils.py:13-16, called at :137: a NameError on a
    CPU; 0.5.11 and 0.5.12 :14-17, :138), and `verify_tree_greedy_func` has no CPU branch: it
    returns its `torch.empty` buffers unwritten (0.5.10 :161-199, 0.5.11 and 0.5.12 :162-202).
    Left alone where the module has a device of its own."""
    if any(getattr(module, f"_is_{d}", False) for d in ("cuda", "hip", "npu", "musa")):
        return
    module.sgl_build_tree_kernel_efficient = tree.build_tree
    shipped = inspect.signature(module.verify_tree_greedy_func)

    def verify_tree_greedy_func(*args, **kwargs):  # type: ignore[no-untyped-def]
        bound = shipped.bind(*args, **kwargs)
        given = list(bound.arguments.values())[:8]  # the release's names for the same eight
        tree.verify_greedy(*given)
        return given[0], given[1], given[2]

    module.verify_tree_greedy_func = verify_tree_greedy_func
