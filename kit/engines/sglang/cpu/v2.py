"""The spec v2 EAGLE worker's (and the overlap scheduler's) CPU gaps, in the releases that have
no CPU branch for them: SGLang's own Triton kernel of the CUDA branch, launched as that branch
launches it, run on CPU tensors by Triton's interpreter."""

from __future__ import annotations

from types import ModuleType


def extend_cache_locs(module: ModuleType) -> None:
    """`assign_extend_cache_locs_func` has CUDA/HIP/MUSA and NPU branches only and returns None
    on a CPU (sglang 0.5.11 speculative/eagle_info_v2.py:534-575; 0.5.12 the same function), so
    the verify batch writes its KV nowhere. The CUDA branch (:543-559) on CPU tensors."""
    if any(getattr(module, f"_is_{d}", False) for d in ("cuda", "hip", "musa", "npu")):
        return
    import torch
    from sglang.srt.utils import next_power_of_2

    kernel = module.assign_extend_cache_locs

    def assign_extend_cache_locs_func(
        req_pool_indices, req_to_token, start_offset, end_offset, batch_size, draft_token_num,
        device,
    ):  # type: ignore[no-untyped-def]  # fmt: skip
        out = torch.empty((batch_size * draft_token_num,), dtype=torch.int64, device=device)
        kernel[(batch_size,)](
            req_pool_indices, req_to_token, start_offset, end_offset, out,
            req_to_token.shape[1], next_power_of_2(batch_size),
        )  # fmt: skip
        return out

    module.assign_extend_cache_locs_func = assign_extend_cache_locs_func
