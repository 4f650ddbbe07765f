"""What a TensorRT-LLM release does with a target it serves an EAGLE-3 draft for: the rotary
layout the draft's attention uses, and targets its one-model mode cannot size a KV cache for.
Read in the public NVIDIA/TensorRT-LLM repository at commit b35ac1b6 (1.2.0rc2) or named
upstream threads.
"""

from __future__ import annotations

from kit.engines.base import Row, VersionRange

# The draft's attention rotates q and k in the NeoX (half-split) layout whatever the target
# uses; a target that rotates interleaved (GPT-J) pairs, Llama 4, trained its draft that way.
EAGLE3_ROPE: tuple[Row[str], ...] = (
    Row(
        VersionRange("1.2.0rc2"),
        "neox",
        "1.2.0rc2 (commit b35ac1b6) _torch/models/modeling_speculative.py:41-44 "
        "(PositionEmbeddingType.rope_gpt_neox); NVIDIA/TensorRT-LLM PR #19036 (open: rope_gptj "
        "for llama4 targets)",
    ),
)
INTERLEAVED_ROPE_TYPES = ("llama4", "llama4_text")

# One-model EAGLE-3 (the default) on a hybrid Mamba / linear-attention target: KV cache sizing
# reads the draft's LlamaConfig as the target's hybrid config and fails at start-up.
HYBRID_ONE_MODEL: tuple[Row[bool], ...] = (
    Row(
        VersionRange("1.2.0rc2"),
        False,
        "NVIDIA/TensorRT-LLM issue #18449 (open; 1.3.0rc24 and main c7b8ec26fa: 'LlamaConfig is "
        "not a supported hybrid Mamba config')",
    ),
)
HYBRID_TYPES = ("qwen3_next", "qwen3_5", "qwen3_5_moe", "nemotron_h")
