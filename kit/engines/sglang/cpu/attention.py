"""SGLang's torch_native attention made to serve an EAGLE-3 chain: the verify and draft-extend
batches it reads the wrong lengths from, and the multi-step draft backend it lacks.

The arithmetic stays `TorchNativeAttnBackend`'s own (scaled_dot_product_attention over the KV the
request's `req_to_token` row names); only the lengths it is handed change, for the duration of
one call. With topk 1 every tree is a chain, so the verify mask is the causal one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any


@contextmanager
def _lengths(batch: Any, **lengths: Any) -> Iterator[None]:
    """`batch`'s length fields set to `lengths` for one call, restored after."""
    saved = {name: getattr(batch, name) for name in lengths}
    for name, value in lengths.items():
        setattr(batch, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(batch, name, value)


def verify_and_draft_extend(module: ModuleType) -> None:
    """`TorchNativeAttnBackend.forward_extend` reads `extend_prefix_lens` / `extend_seq_lens`.
    A TARGET_VERIFY batch carries neither (sglang 0.5.10 model_executor/forward_batch_info.py:545
    sets them for extend modes only): its query is the D draft tokens after the request's
    `seq_lens`. A DRAFT_EXTEND batch after a verify carries the prefill's stale prefix
    (0.5.10 speculative/eagle_info.py:695-725 updates extend lengths and seq_lens only): its
    query is the accepted tokens ending at the new `seq_lens`."""
    cls = module.TorchNativeAttnBackend
    shipped = cls.forward_extend

    def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):  # type: ignore[no-untyped-def]
        fb, mode = forward_batch, forward_batch.forward_mode
        if mode.is_target_verify():
            n = fb.spec_info.draft_token_num
            if getattr(fb.spec_info, "topk", 1) != 1:
                raise NotImplementedError("the CPU stand-ins verify chains only (topk 1)")
            extend = fb.seq_lens.new_full(fb.seq_lens.shape, n)
            with _lengths(
                fb, extend_prefix_lens=fb.seq_lens, extend_seq_lens=extend, seq_lens=fb.seq_lens + n
            ):
                return shipped(self, q, k, v, layer, fb, save_kv_cache)
        if _draft_extend_v1(mode):
            prefix = (fb.seq_lens - fb.extend_seq_lens).to(fb.extend_seq_lens.dtype)
            with _lengths(fb, extend_prefix_lens=prefix):
                return shipped(self, q, k, v, layer, fb, save_kv_cache)
        return shipped(self, q, k, v, layer, fb, save_kv_cache)

    cls.forward_extend = forward_extend


def _draft_extend_v1(mode: Any) -> bool:
    """The v1 worker's DRAFT_EXTEND (the v2 worker's DRAFT_EXTEND_V2 sets its prefix lengths
    itself, 0.5.11 speculative/eagle_info_v2.py:225; 0.5.23 has no v1 mode left)."""
    is_draft_extend = getattr(mode, "is_draft_extend", None)
    return is_draft_extend is not None and is_draft_extend()


def draft_backends(module: ModuleType) -> None:
    """`DraftBackendFactory` (0.5.10 speculative/draft_utils.py:39-94) has no torch_native
    entry ("EAGLE is not supported in decode attention backend torch_native"). The draft decode
    backend is one `TorchNativeAttnBackend` per step, step i reading the request's `seq_lens`
    plus i + 1 KV entries (the draft tokens written so far, its own included), as the Triton
    backend's per-step KV indices do (0.5.10 layers/attention/triton_backend.py, generate_draft_
    decode_kv_indices); the draft extend backend is a plain `TorchNativeAttnBackend`."""
    factory = module.DraftBackendFactory
    shipped_decode, shipped_extend = (
        factory.create_decode_backend,
        factory.create_draft_extend_backend,
    )

    def create_decode_backend(self):  # type: ignore[no-untyped-def]
        if self.speculative_num_steps > 1 and _backend(self, "decode") == "torch_native":
            backend = MultiStepDraftBackend(
                self.draft_model_runner, self.topk, self.speculative_num_steps
            )
            for step in backend.attn_backends:
                _stamped(step)
            return _stamped(backend)
        return shipped_decode(self)

    def create_draft_extend_backend(self):  # type: ignore[no-untyped-def]
        if _backend(self, "prefill") == "torch_native":
            from sglang.srt.layers.attention.torch_native_backend import TorchNativeAttnBackend

            return _stamped(TorchNativeAttnBackend(self.draft_model_runner))
        return shipped_extend(self)

    factory.create_decode_backend = create_decode_backend
    factory.create_draft_extend_backend = create_draft_extend_backend


def _backend(factory: Any, phase: str) -> str | None:
    """The attention backend the factory picks for `phase`, as its `_create_backend` picks it:
    from the server args (0.5.10 speculative/draft_utils.py:23-37) or, from 0.5.23, from the
    runtime context's (prefill, decode) pair (0.5.23 draft_utils.py:46-61)."""
    if factory.draft_attn_backend:
        return factory.draft_attn_backend
    args = getattr(factory, "server_args", None)
    if args is not None:
        return getattr(args, f"{phase}_attention_backend", None) or args.attention_backend
    from sglang.srt.runtime_context import attention_backends

    prefill, decode = attention_backends()
    return decode if phase == "decode" else prefill


def _stamped(backend: Any) -> Any:
    """The backend name 0.5.23's factory stamps on what it builds (draft_utils.py:71-81)."""
    backend.prefill_attention_backend_str = backend.decode_attention_backend_str = "torch_native"
    return backend


class MultiStepDraftBackend:
    """What the EAGLE worker asks of a multi-step draft backend: `attn_backends[i]` for step i
    and `init_forward_metadata` (torch_native keeps no metadata)."""

    def __init__(self, model_runner: Any, topk: int, speculative_num_steps: int) -> None:
        if topk != 1:
            raise NotImplementedError("the CPU stand-ins draft chains only (topk 1)")
        from sglang.srt.layers.attention.torch_native_backend import TorchNativeAttnBackend

        class DraftStep(TorchNativeAttnBackend):
            def __init__(self, runner: Any, written: int) -> None:
                super().__init__(runner)
                self.written = written

            def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache=True):  # type: ignore[no-untyped-def]
                with _lengths(forward_batch, seq_lens=forward_batch.seq_lens + self.written):
                    return super().forward_decode(q, k, v, layer, forward_batch, save_kv_cache)

        self.topk, self.speculative_num_steps = topk, speculative_num_steps
        self.attn_backends = [DraftStep(model_runner, i + 1) for i in range(speculative_num_steps)]

    def init_forward_metadata(self, forward_batch: Any) -> None:
        pass
