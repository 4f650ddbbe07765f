"""What an SGLang release does with a launch line: what each speculative algorithm runs, how it
counts the draft chain, which positions and context the draft sees, and runtime issues reported
upstream for some releases and settings. Every row cites the wheel's `sglang/srt/` file:line (or
the upstream PR) it was read from.
"""

from __future__ import annotations

from dataclasses import dataclass

from kit.engines.base import Row, VersionRange
from kit.engines.serving import DraftDtype, KnownIssue, Method, Positions, SlidingWindow

# `--speculative-algorithm` names. NEXTN runs the EAGLE implementation (0.4.4.post2
# server_args.py:301-302); from 0.5.12 names are read case-insensitively (server_args.py:3562).
ALGORITHMS = {
    "EAGLE3": Method.EAGLE3,
    "EAGLE": Method.EAGLE,
    "NEXTN": Method.EAGLE,
    "STANDALONE": Method.DRAFT_MODEL,
    "NGRAM": Method.NGRAM,
}
ALGORITHM_SOURCE = "0.4.4.post2 srt/server_args.py:301-302; 0.5.12 srt/server_args.py:3562"
CASE_INSENSITIVE_FROM = "0.5.12"

# The target captures the K aux hidden states only under EAGLE3 (`spec_algorithm.is_eagle3()`);
# under EAGLE it hands over its final hidden state (sglang PR #21272).
AUX_CAPTURE: tuple[Row[frozenset[Method]], ...] = (
    Row(
        VersionRange("0.4.4.post2"),
        frozenset({Method.EAGLE3}),
        "0.4.4.post2 model_executor/model_runner.py:212; 0.5.10 model_executor/model_runner.py:356;"
        " 0.5.23 model_executor/model_runner_components/spec_aux_hidden_state.py:185",
    ),
)

# With --speculative-eagle-topk 1, --speculative-num-draft-tokens counts the root: a chain of
# `steps` drafts verifies steps + 1 tokens. From 0.4.6.post1 another value is overwritten with
# steps + 1 (a warning); before, it is used as given.
TOPK1_DRAFT_TOKENS_FORCED: tuple[Row[bool], ...] = (
    Row(VersionRange("0.4.4.post2", "0.4.6.post1"), False, "0.4.5 srt/server_args.py (no check)"),
    Row(
        VersionRange("0.4.6.post1"),
        True,
        "0.4.6.post1 srt/server_args.py:359; 0.5.10 srt/server_args.py:3079; "
        "0.5.23 srt/arg_groups/speculative_hook.py:1260",
    ),
)

# Multimodal targets: the draft reads mrope positions only if its own config's rope_scaling has
# `mrope_section` (sglang PR #8801).
POSITIONS: tuple[Row[Positions], ...] = (
    Row(VersionRange("0.4.4.post2", "0.5.2"), Positions.ONE_D, "0.5.1 models/llama_eagle3.py"),
    Row(
        VersionRange("0.5.2"),
        Positions.IF_DRAFT_MROPE,
        "0.5.2 models/llama_eagle3.py:113-119,157-158; 0.5.23 models/llama_eagle3.py:137-141,234-235",
    ),
)

# The draft's ModelConfig gets the served --context-length; above the draft's own
# max_position_embeddings the server refuses to start unless
# SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, which (from 0.5.3) raises the draft's value.
CONTEXT_REFUSED: tuple[Row[bool | None], ...] = (
    Row(VersionRange("0.4.4.post2", "0.5.1"), None, "not read before 0.5.1"),
    Row(
        VersionRange("0.5.1"),
        True,
        "0.5.1 configs/model_config.py:170-172; 0.5.10 configs/model_config.py:274,383-403",
    ),
)
CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"

# The draft's own `sliding_window` / `layer_types` are never read; from 0.5.12 a launch flag
# (--speculative-draft-window-size) sets a window on every draft layer.
SLIDING: tuple[Row[SlidingWindow], ...] = (
    Row(
        VersionRange("0.4.4.post2", "0.5.12"),
        SlidingWindow.IGNORED,
        "0.5.10 models/llama_eagle3.py",
    ),
    Row(VersionRange("0.5.12"), SlidingWindow.FLAG_ONLY, "0.5.23 models/llama_eagle3.py:287-299"),
)
SLIDING_FLAG = "speculative_draft_window_size"

# The draft's ModelConfig takes the served --dtype; `auto` resolves from each model's own config.
DRAFT_DTYPE: tuple[Row[DraftDtype], ...] = (
    Row(
        VersionRange("0.4.4.post2"),
        DraftDtype.OWN_CONFIG,
        "0.5.10 configs/model_config.py:278; 0.5.20 configs/model_config.py:753",
    ),
)


@dataclass(frozen=True)
class SpecV2:
    """Whether the overlap-scheduled V2 speculative worker runs: an environment switch (None:
    none) and its default."""

    env: str | None
    default: bool


SPEC_V2: tuple[Row[SpecV2], ...] = (
    Row(VersionRange("0.4.4.post2", "0.5.5"), SpecV2(None, False), "0.5.4 srt/environ.py"),
    Row(VersionRange("0.5.5", "0.5.11"), SpecV2("SGLANG_ENABLE_SPEC_V2", False), "0.5.5 srt/environ.py:258"),
    Row(VersionRange("0.5.11", "0.5.14"), SpecV2("SGLANG_ENABLE_SPEC_V2", True), "0.5.11 srt/environ.py:459"),
    Row(VersionRange("0.5.14"), SpecV2(None, True), "0.5.14 srt/arg_groups/speculative_hook.py:69-74"),
)  # fmt: skip

KNOWN_ISSUES: tuple[Row[KnownIssue], ...] = (
    Row(
        VersionRange("0.5.6", "0.5.8"),
        KnownIssue(
            code="KNOWN_ISSUE_DP_ATTENTION_DRAFT_EXTEND",
            title="DP attention with the spec-v2 draft-extend CUDA graph was measured at about 35% "
            "lower accept length in this release",
            fix="upgrade to sglang 0.5.8 or later, or run without --enable-dp-attention",
            when=("speculating", "dp_attention", "spec_v2", "cuda_graph"),
        ),
        "sglang PR #16974; 0.5.6 speculative/eagle_draft_extend_cuda_graph_runner.py:255, "
        "fixed in 0.5.8 speculative/eagle_draft_extend_cuda_graph_runner.py:258-260",
    ),
    Row(
        VersionRange("0.5.5"),
        KnownIssue(
            code="KNOWN_ISSUE_SPEC_V2_MULTIMODAL",
            title="spec-v2 overlap scheduling with a multimodal target was measured at accept "
            "length 2.14 against 3.18 with spec v1 (Qwen2.5-VL, EAGLE3); the PR closed unmerged",
            fix="compare with --disable-overlap-schedule (the synchronous path)",
            when=("eagle3", "spec_v2", "overlap", "multimodal_target"),
        ),
        "sglang PR #14063",
    ),
)

# Pipeline parallelism: does every aux state reach the draft (on the last stage)? The target's
# `set_eagle3_layers_to_capture` returns on every rank but the last, so only the layers the last
# stage holds are captured; the low and middle defaults (2, n//2) sit on earlier stages.
PP_AUX_CAPTURE: tuple[Row[bool | None], ...] = (
    Row(VersionRange("0.4.4.post2", "0.4.7"), None, "no --pp-size before 0.4.7"),
    Row(
        VersionRange("0.4.7"),
        False,
        "0.4.10 models/llama.py:743-745; 0.5.10 models/llama.py:783-785; 0.5.23 "
        "models/llama.py:929-931 (returns unless pp_group.is_last_rank); sglang PR #39644 (open)",
    ),
)

# Gemma 3/4 targets embed with an unsharded nn.Embedding while the EAGLE-3 draft embeds with a
# VocabParallelEmbedding: at TP > 1 the draft needs the rank's shard of the target's table.
GEMMA_EMBED_SHARDED: tuple[Row[bool], ...] = (
    Row(
        VersionRange("0.4.4.post2", "0.5.12"),
        False,
        'sglang PR #23976 ("When TP>1, eagle3 drafter will get full copy of embedding")',
    ),
    Row(
        VersionRange("0.5.12"),
        True,
        "0.5.12 models/gemma3_causal.py:908-928, models/gemma4_causal.py:1105-1125 "
        "(_shard_weight, get_embed_and_head); sglang PR #23976",
    ),
)
GEMMA_TYPES = ("gemma3", "gemma3_text", "gemma4", "gemma4_text")

# Which flag sets the draft's quantization: the target's --quantization up to 0.5.6; from 0.5.7
# --speculative-draft-model-quantization, which defaults to --quantization (`unquant` opts out).
# A draft without its own quantization_config keeps the inherited method.
DRAFT_QUANTIZATION: tuple[Row[str | None], ...] = (
    Row(
        VersionRange("0.4.4.post2", "0.5.7"),
        None,
        "0.4.4.post3 managers/tp_worker.py:60-73; 0.5.6 configs/model_config.py:241 (the "
        "draft's ModelConfig takes server_args.quantization)",
    ),
    Row(
        VersionRange("0.5.7"),
        "speculative_draft_model_quantization",
        "0.5.7 server_args.py:771-777; 0.5.23 arg_groups/serving_hook.py:675-709, "
        "configs/model_config.py:2076-2110; sglang PR #28196, PR #22588, PR #33115",
    ),
)

# The draft's KV cache dtype: the target's --kv-cache-dtype, and from 0.5.18 an override for the
# draft alone (--speculative-draft-kv-cache-dtype, "Default follows --kv-cache-dtype").
DRAFT_KV_DTYPE: tuple[Row[str | None], ...] = (
    Row(
        VersionRange("0.4.4.post2", "0.5.18"),
        None,
        "0.5.10 model_executor/model_runner.py:1903-1925 (every runner, the draft's too, takes "
        "server_args.kv_cache_dtype)",
    ),
    Row(
        VersionRange("0.5.18"),
        "--speculative-draft-kv-cache-dtype",
        "0.5.18 server_args.py:2187-2199, model_executor/model_runner.py:1315-1329",
    ),
)
