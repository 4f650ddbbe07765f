"""What a vLLM release does with a launch line: which method it runs when none is given, which
positions and context the draft sees, and runtime issues reported upstream for some releases and
settings. Every row cites the wheel's `vllm/` file:line (or the upstream issue / PR) it was read
from.
"""

from __future__ import annotations

from kit.engines.base import Row, VersionRange
from kit.engines.serving import DraftDtype, KnownIssue, Method, Positions, SlidingWindow

METHODS = {
    "eagle3": Method.EAGLE3,
    "eagle": Method.EAGLE,
    "draft_model": Method.DRAFT_MODEL,
    "mtp": Method.MTP,
    "deepseek_mtp": Method.MTP,
    "ngram": Method.NGRAM,
}

# No "method" in the speculative config: the draft's path decides, substring tests in order, and
# anything else runs as an independent draft model.
AUTO_METHOD: tuple[Row[tuple[tuple[str, Method], ...]], ...] = (
    Row(
        VersionRange("0.8.2", "0.10.2"),
        (("eagle-", Method.EAGLE), ("eagle3-", Method.EAGLE)),
        "0.9.2 config.py:2687-2689,2705",
    ),
    Row(
        VersionRange("0.10.2"),
        (("eagle-", Method.EAGLE), ("eagle3", Method.EAGLE3)),
        "0.10.2 config/__init__.py:2143-2145; 0.24.0 config/speculative.py:587,742-745",
    ),
)

# A speculators checkpoint served as the model: vLLM serves its verifier and speculates with it.
SERVES_SPECULATORS: tuple[Row[bool], ...] = (
    Row(VersionRange("0.8.2", "0.11.0"), False, "0.10.2 engine/arg_utils.py"),
    Row(VersionRange("0.11.0"), True, "0.11.0 engine/arg_utils.py:1135"),
)

# The draft's RoPE cache is sized by its own max_position_embeddings until 0.28.0 raises it to the
# target's max_model_len: past it, a device assert under compile, garbage reads in eager mode.
DRAFT_ROPE_RAISED: tuple[Row[bool], ...] = (
    Row(VersionRange("0.8.2", "0.28.0"), False, "vllm issue #48894 (0.24.0 models/llama_eagle3.py:142)"),
    Row(VersionRange("0.28.0"), True, "vllm PR #49343; 0.28.0 config/speculative.py:985-987,1228-1253"),
)  # fmt: skip

POSITIONS: tuple[Row[Positions], ...] = (
    Row(VersionRange("0.8.2", "0.11.1"), Positions.ONE_D, "0.11.0 v1/spec_decode/eagle.py"),
    Row(VersionRange("0.11.1", "0.24.0"), Positions.IF_TARGET_MROPE, "0.11.1 v1/spec_decode/eagle.py:117"),
    Row(VersionRange("0.24.0"), Positions.IF_DRAFT_MROPE, "0.24.0 v1/spec_decode/llm_base_proposer.py:159"),
)  # fmt: skip

# The draft's ModelConfig is built with the target's dtype.
DRAFT_DTYPE: tuple[Row[DraftDtype], ...] = (
    Row(
        VersionRange("0.8.2"),
        DraftDtype.TARGET,
        "0.9.2 config.py:2668; 0.24.0 config/speculative.py:721",
    ),
)

# Llama drafts read `layer_types` through LlamaAttention; Qwen3 drafts only from 0.28.0
# (speculators PR #684 measured the Qwen3 draft's window ignored).
SLIDING_LLAMA: tuple[Row[SlidingWindow], ...] = (
    Row(VersionRange("0.8.2", "0.10.1.1"), SlidingWindow.IGNORED, "0.9.2 models/llama.py:170-173"),
    Row(VersionRange("0.10.1.1", "0.10.2"), SlidingWindow.MISINDEXED, "0.10.1.1 models/llama.py:171-172"),
    Row(VersionRange("0.10.2"), SlidingWindow.HONOURED, "0.10.2 models/llama.py:173-180; 0.33.0 models/llama.py:186-199"),
)  # fmt: skip
SLIDING_QWEN3: tuple[Row[SlidingWindow], ...] = (
    Row(VersionRange("0.8.2", "0.28.0"), SlidingWindow.IGNORED, "speculators PR #684"),
    Row(VersionRange("0.28.0"), SlidingWindow.HONOURED, "0.28.0 models/qwen3_eagle3.py:46-53"),
)

# Prefix caching is on unless switched off (0.9.2 engine/arg_utils.py:1580-1581; 0.33.0
# engine/arg_utils.py:3075-3076).
PREFIX_CACHING_DEFAULT = "0.9.2 engine/arg_utils.py:1580-1581; 0.33.0 engine/arg_utils.py:3075-3076"

KNOWN_ISSUES: tuple[Row[KnownIssue], ...] = (
    Row(
        VersionRange("0.11.0", "0.11.1"),
        KnownIssue(
            code="KNOWN_ISSUE_GREEDY_SENTINEL",
            title="greedy requests (temperature 0) divide by zero in this release's rejection "
            "sampler: NaN logits and negative acceptance counts",
            fix="upgrade to vllm 0.11.1 or later",
            when=("speculating",),
        ),
        "vllm PR #27077; 0.11.0 v1/sample/rejection_sampler.py:17 (greedy = -1) against "
        "v1/worker/gpu_input_batch.py:358 (greedy temperature 0.0)",
    ),
    Row(
        VersionRange("0.17.1"),
        KnownIssue(
            code="KNOWN_ISSUE_PREFIX_CACHE_DECAY",
            title="with prefix caching on, EAGLE accept length was reported to decay over hours "
            "until a restart (reported on 0.17.1, open)",
            fix="compare the accept length just after a restart with hours later; if it decays, "
            "try --no-enable-prefix-caching",
            when=("eagle_family", "prefix_caching"),
        ),
        "vllm issue #41838",
    ),
    Row(
        VersionRange("0.12.0"),
        KnownIssue(
            code="KNOWN_ISSUE_MODEL_RUNNER_V2",
            title="model runner V2 (VLLM_USE_V2_MODEL_RUNNER=1, and from 0.25.0 the default for "
            "dense targets) was reported to accept fewer drafts than V1",
            fix="compare with VLLM_USE_V2_MODEL_RUNNER=0",
            when=("speculating", "model_runner_v2"),
        ),
        "vllm issue #40551; 0.12.0 envs.py:1550; vllm PR #44443 (V2 by default)",
    ),
)

# Pipeline parallelism: does every aux state reach the draft on the last stage? Before the V2
# runner relays them, a non-last stage returns IntermediateTensors without the aux states it
# captured, and combine_hidden_states gets fewer than it was built for.
PP_AUX_CAPTURE: tuple[Row[bool], ...] = (
    Row(
        VersionRange("0.8.2", "0.30.0"),
        False,
        "vllm PR #45985 (open); 0.28.0 model_executor/models/llama.py:431-432 (a non-last stage "
        "returns hidden_states and residual only); 0.28.0 config/vllm.py:2418-2422 (EAGLE3 with "
        "pipeline parallelism keeps the V1 runner)",
    ),
    Row(
        VersionRange("0.30.0"),
        True,
        "vllm PR #50514; 0.30.0 v1/worker/gpu/pp_utils.py:93-113 and model_executor/models/"
        "llama.py:358,425-448 (the V2 runner relays the aux states to the last stage)",
    ),
)
V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"

# The draft's KV cache dtype: the target's --kv-cache-dtype (one cache config) until 0.28.0 adds
# the speculative config's own "kv_cache_dtype" (None: inherit the target's).
DRAFT_KV_DTYPE: tuple[Row[str | None], ...] = (
    Row(
        VersionRange("0.8.2", "0.28.0"),
        None,
        "vllm PR #24505; 0.24.0 config/speculative.py (no kv_cache_dtype of the draft's own)",
    ),
    Row(
        VersionRange("0.28.0"),
        '"kv_cache_dtype" in --speculative-config',
        "0.28.0 config/speculative.py:126; 0.33.0 config/speculative.py:399-403,448-451",
    ),
)

# Which targets run on model runner V2 when VLLM_USE_V2_MODEL_RUNNER is not set (the variable
# always wins): none before 0.22.0; Qwen3ForCausalLM targets in 0.22.0 - 0.24.x; from 0.25.0
# every target that is neither MoE nor hybrid (vllm PR #44443). A feature V2 lacks sends the run
# back to V1 with a warning.
V2_RUNNER_DEFAULT: tuple[Row[str | None], ...] = (
    Row(VersionRange("0.8.2", "0.22.0"), None, "0.19.0 (V2 only with VLLM_USE_V2_MODEL_RUNNER=1)"),
    Row(VersionRange("0.22.0", "0.25.0"), "Qwen3ForCausalLM",
        "0.22.0 config/vllm.py:69,493-532"),
    Row(VersionRange("0.25.0"), "dense", "vllm PR #44443; 0.25.0 config/vllm.py:519-574"),
)  # fmt: skip

# The V2 runner's EAGLE speculator has no parallel drafting (P-EAGLE): a run that asks for it
# falls back to V1 unless V2 is forced, and forced it drafts sequentially.
PARALLEL_DRAFTING_ON_V2: tuple[Row[bool | None], ...] = (
    Row(VersionRange("0.8.2", "0.18.0"), None, "no parallel_drafting in the releases read"),
    Row(
        VersionRange("0.18.0"),
        False,
        "vllm PR #43010; 0.22.0 config/vllm.py:2005-2007; 0.33.0 config/vllm.py:3070-3077 ('V2 "
        "EagleSpeculator does not support parallel_drafting')",
    ),
)

# A target with more than one attention type (sliding ++ full) and a draft whose per-token KV
# size differs: the KV cache manager needs one page size for all of them. 0.11.0 raises at once;
# from 0.18.0 a page that divides the largest is scaled up; from 0.25.0 one that does not is
# padded (attention backends that index pages by stride; any non-MLA attention by 0.33.0).
KV_PAGE_UNIFY: tuple[Row[str | None], ...] = (
    Row(VersionRange("0.8.2", "0.11.0"), None, "not read"),
    Row(VersionRange("0.11.0", "0.18.0"), "never", "0.11.0 v1/core/kv_cache_utils.py:1163-1187"),
    Row(VersionRange("0.18.0", "0.25.0"), "divisible",
        "0.18.0 v1/core/kv_cache_utils.py:911-948,1240-1259"),
    Row(VersionRange("0.25.0"), "padded", "0.25.0 v1/core/kv_cache_utils.py:1060-1100; 0.33.0 "
        "v1/core/kv_cache_planning.py:370-408"),
)  # fmt: skip
