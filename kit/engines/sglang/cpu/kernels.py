"""A stand-in for `sgl_kernel` where SGLang's kernel package cannot load: on a CPU host.

sglang-kernel's wheels on PyPI are CUDA builds (they load `libcuda.so.1` at import) and SGLang's
own CPU kernel build is not published, yet SGLang imports a few of its names on the CPU path at
module level, for features a chain draft on a CPU never runs. The stand-in holds exactly those
names, each raising if it is ever called, so a kernel the run did need fails loudly instead of
being skipped; any other name is absent, so SGLang's own `try: from sgl_kernel import …` fallbacks
behave as without the package. The tree kernels 0.5.23 wants on a CPU are real (`tree`).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from kit.engines.sglang.cpu import tree

# sglang 0.5.10 mem_cache/memory_pool_host.py:46-62 imports these at module level on every device
# but NPU, XPU and MPS (host-memory KV transfers for the hierarchical cache, never enabled here)
KVCACHEIO = (
    "transfer_kv_all_layer", "transfer_kv_all_layer_direct_lf_pf", "transfer_kv_all_layer_lf_pf",
    "transfer_kv_all_layer_lf_ph", "transfer_kv_all_layer_mla", "transfer_kv_all_layer_mla_lf_pf",
    "transfer_kv_direct", "transfer_kv_per_layer", "transfer_kv_per_layer_direct_pf_lf",
    "transfer_kv_per_layer_mla", "transfer_kv_per_layer_mla_pf_lf", "transfer_kv_per_layer_pf_lf",
    "transfer_kv_per_layer_ph_lf",
)  # fmt: skip


def _not_on_cpu(name: str) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"sgl_kernel.{name} was called: it has no CPU build, and the kit's CPU stand-in only "
            "stands in for what a chain draft on a CPU never runs"
        )

    kernel.__name__ = name
    return kernel


def build_tree_kernel_efficient_cpu(*args: Any) -> None:
    """sglang 0.5.23 kernels/ops/speculative/spec_tree.py:39-42 (positional, as :412 calls it)."""
    tree.build_tree(*args)


def verify_tree_greedy_cpu(
    predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
    retrive_next_sibling, target_predict,
) -> None:  # fmt: skip
    """sglang 0.5.23 spec_tree.py:43, called by keyword with sgl-kernel's `retrive_*` names
    (:510-520)."""
    tree.verify_greedy(
        predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
        retrive_next_sibling, target_predict,
    )  # fmt: skip


# sglang 0.5.23 imports these from sgl_kernel at module level on a CPU (kernels/ops/kvcache/
# cache_move.py:9-10, kernels/ops/speculative/multi_layer_eagle.py:24-25, eagle.py:9-10,
# cache_locs.py:27-31, mem_cache/allocation.py:45-46)
CPU_KERNELS = (
    "copy_all_layer_kv_cache_cpu", "rotate_input_ids_cpu", "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu", "assign_draft_cache_locs_contiguous_cpu",
    "assign_extend_cache_locs_cpu", "assign_req_to_token_pool_cpu",
)  # fmt: skip


def copy_all_layer_kv_cache_cpu(data_ptrs, strides, tgt_loc, src_loc) -> None:  # type: ignore[no-untyped-def]
    """sglang 0.5.23 kernels/ops/kvcache/cache_move.py:190-197: row `src_loc[i]` of every KV
    buffer (its address in `data_ptrs`, its row size in bytes in `strides`) copied onto row
    `tgt_loc[i]`, every source read before any row is written, as the Triton kernel of the
    same file (:146-178) reads a tile's rows before it stores them."""
    import ctypes

    src, tgt = src_loc.tolist(), tgt_loc.tolist()
    for base, stride in zip(data_ptrs.tolist(), strides.tolist(), strict=True):
        rows = [ctypes.string_at(base + s * stride, stride) for s in src]
        for t, row in zip(tgt, rows, strict=True):
            ctypes.memmove(base + t * stride, row, stride)


# sglang 0.5.23's CPU branches call these sgl_kernel CPU ops; each has a Triton twin beside it in
# the same module, launched by the branch for the other devices. The stand-ins launch that
# kernel exactly as that branch does, on CPU tensors, under Triton's interpreter.
ALLOCATION = "sglang.srt.mem_cache.allocation"
CACHE_LOCS = "sglang.kernels.ops.speculative.cache_locs"
EAGLE = "sglang.kernels.ops.speculative.eagle"


def _kernel(module: str, name: str) -> Any:
    import importlib

    return getattr(importlib.import_module(module), name)


def _pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def assign_req_to_token_pool_cpu(
    req_pool_indices, req_to_token, start, end, out_cache_loc, pool_len
):  # type: ignore[no-untyped-def]
    """0.5.23 mem_cache/allocation.py:745-754; the Triton launch of :755-763."""
    bs = req_pool_indices.shape[0]
    _kernel(ALLOCATION, "assign_req_to_token_pool")[(bs,)](
        req_pool_indices, req_to_token, start, end, out_cache_loc, pool_len, _pow2(bs)
    )


def assign_extend_cache_locs_cpu(
    req_pool_indices, req_to_token, start, end, out_cache_loc, pool_len
):  # type: ignore[no-untyped-def]
    """0.5.23 kernels/ops/speculative/cache_locs.py:734-749 and :762-771; the Triton launch
    of :700-716."""
    bs = req_pool_indices.shape[0]
    _kernel(CACHE_LOCS, "assign_extend_cache_locs")[(bs,)](
        req_pool_indices, req_to_token, start, end, out_cache_loc, pool_len, _pow2(bs)
    )


def assign_draft_cache_locs_contiguous_cpu(  # type: ignore[no-untyped-def]
    req_pool_indices, req_to_token, seq_lens, out_cache_loc, pool_len, topk, num_cols
):
    """0.5.23 kernels/ops/speculative/cache_locs.py:97-108 (no positions on a CPU); the
    Triton launch of :109-123."""
    bs = seq_lens.shape[0]
    _kernel(CACHE_LOCS, "assign_draft_cache_locs_contiguous")[(bs,)](
        req_pool_indices, req_to_token, seq_lens, out_cache_loc, pool_len, topk, num_cols,
        positions=None, mrope=None, BS=bs, WRITE_POSITIONS=False, WRITE_MROPE=False,
    )  # fmt: skip


def fill_bonus_tokens_cpu(accept_tokens, accept_lens, bonus_tokens, accept_stride):  # type: ignore[no-untyped-def]
    """0.5.23 kernels/ops/speculative/eagle.py:39-46; the Triton launch of :47-52."""
    bs = accept_lens.shape[0]
    _kernel(EAGLE, "fill_bonus_tokens")[(bs,)](
        accept_tokens, accept_lens, bonus_tokens, accept_stride
    )


def fill_accept_out_cache_loc_cpu(accept_index, out_cache_loc, accept_out_cache_loc):  # type: ignore[no-untyped-def]
    """0.5.23 kernels/ops/speculative/eagle.py:79-85; the Triton launch of :86-91."""
    size = accept_index.numel()
    _kernel(EAGLE, "fill_accept_out_cache_loc")[(size,)](
        accept_index, out_cache_loc, accept_out_cache_loc, _pow2(size)
    )


def modules() -> dict[str, dict[str, Any]]:
    """Each stand-in module's names."""
    return {
        "sgl_kernel": {
            **{n: _not_on_cpu(n) for n in CPU_KERNELS},
            "copy_all_layer_kv_cache_cpu": copy_all_layer_kv_cache_cpu,
            "assign_req_to_token_pool_cpu": assign_req_to_token_pool_cpu,
            "assign_extend_cache_locs_cpu": assign_extend_cache_locs_cpu,
            "assign_draft_cache_locs_contiguous_cpu": assign_draft_cache_locs_contiguous_cpu,
            "fill_bonus_tokens_cpu": fill_bonus_tokens_cpu,
            "fill_accept_out_cache_loc_cpu": fill_accept_out_cache_loc_cpu,
            "build_tree_kernel_efficient_cpu": build_tree_kernel_efficient_cpu,
            "verify_tree_greedy_cpu": verify_tree_greedy_cpu,
        },
        "sgl_kernel.kvcacheio": {n: _not_on_cpu(f"kvcacheio.{n}") for n in KVCACHEIO},
    }


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the stand-in modules in place of sgl_kernel's."""

    def __init__(self) -> None:
        self.names = modules()

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name not in self.names:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=name == "sgl_kernel")

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__.update(self.names[module.__name__])
        module.__doc__ = f"{__name__}: the kit's CPU stand-in for {module.__name__}"


def install() -> bool:
    """Put the stand-in first for `sgl_kernel`, unless a usable one is installed (a CUDA device
    for the CUDA build). False when the real one stays."""
    if "sgl_kernel" in sys.modules or any(isinstance(f, Finder) for f in sys.meta_path):
        return False
    if _real_kernels_usable():
        return False
    sys.meta_path.insert(0, Finder())
    return True


def _real_kernels_usable() -> bool:
    import importlib.util

    if importlib.util.find_spec("sgl_kernel") is None:
        return False
    import torch

    return torch.cuda.is_available()
