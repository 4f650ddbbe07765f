"""The deployment rules a target's architecture decides on a given release: a rotary layout the
draft's attention does not follow, and targets an engine's EAGLE-3 path cannot size a cache for.

They run from the configs and a release alone (TensorRT-LLM has no launch line the kit reads);
rows: `kit/engines/<engine>/serving.py`.
"""

from __future__ import annotations

from typing import Any

from kit.findings import Finding, Severity


def target_findings(p: Any) -> list[Finding]:  # p: kit.deployment.configs.Pair
    return [*rope_layout(p), *hybrid_one_model(p), *kv_pages(p)]


def _types(p: Any) -> set[str]:
    return {str(p.target.raw.get("model_type", "")), str(p.target_text.get("model_type", ""))}


def rope_layout(p: Any) -> list[Finding]:
    """A target that rotates interleaved pairs (Llama 4) on a release whose EAGLE-3 attention
    always rotates NeoX halves: the draft's q and k turn other coordinates than it trained on."""
    row, types = p.row("EAGLE3_ROPE"), p.fact("INTERLEAVED_ROPE_TYPES") or ()
    interleaved = sorted(_types(p) & set(types))
    if row is None or not interleaved or row.value != "neox":
        return []
    return [
        Finding(
            code="DRAFT_ROPE_LAYOUT_MISMATCH",
            severity=Severity.CRITICAL,
            title=f"a {interleaved[0]} target rotates interleaved (GPT-J) pairs; {p.release}'s "
            "EAGLE-3 attention rotates NeoX halves: the draft attends with positions scrambled",
            evidence=(
                f"target model_type {interleaved[0]}: interleaved rotary layout, which its draft "
                "was trained with",
                f"{p.release}: the draft's attention is built with PositionEmbeddingType."
                "rope_gpt_neox for every target",
                "measured: accept length 1.012 (0.3 % of drafts accepted) on a Llama 4 pair",
            ),
            fix="serve a Llama 4 draft on an engine that rotates it interleaved (SGLang, vLLM), "
            "or on a TensorRT-LLM build with PR #19036",
            engine=str(p.release),
            source=row.source,
            root_cause=True,
        )
    ]


def hybrid_one_model(p: Any) -> list[Finding]:
    """One-model EAGLE-3 on a hybrid Mamba / linear-attention target: start-up fails sizing the
    KV cache."""
    row, types = p.row("HYBRID_ONE_MODEL"), p.fact("HYBRID_TYPES") or ()
    why = _hybrid(p, types)
    if row is None or row.value or why is None:
        return []
    return [
        Finding(
            code="HYBRID_TARGET_ONE_MODEL",
            severity=Severity.ERROR,
            title="one-model EAGLE-3 on a hybrid Mamba / linear-attention target: KV cache sizing "
            "fails at start-up",
            evidence=(
                why,
                "the one-model draft (eagle3_one_model, the default) shares the target's cache "
                "manager, which reads the draft's LlamaConfig as a hybrid config",
                "reported upstream ('LlamaConfig is not a supported hybrid Mamba config'), open",
            ),
            fix="serve with eagle3_one_model: false (two-model), or with attention DP, until "
            "NVIDIA/TensorRT-LLM issue #18449 is fixed",
            engine=str(p.release),
            source=row.source,
        )
    ]


def _hybrid(p: Any, types: tuple[str, ...]) -> str | None:
    """What makes the target hybrid: its layer types, its pattern, or its model type."""
    text = p.target_text
    layer_types = [str(t) for t in text.get("layer_types") or []]
    odd = sorted({t for t in layer_types if t not in ("full_attention", "sliding_attention")})
    if odd:
        return f"target layer_types include {', '.join(odd)}"
    if "M" in str(text.get("hybrid_override_pattern", "")):
        return "target hybrid_override_pattern has Mamba layers (M)"
    hybrid = sorted(_types(p) & set(types))
    return f"target model_type {hybrid[0]} (a hybrid linear-attention model)" if hybrid else None


def kv_pages(p: Any) -> list[Finding]:
    """A target of sliding and full attention layers with a draft whose KV per token differs:
    vLLM's KV cache manager needs one page size for them all, and refuses what it cannot make
    one (vllm-project/vllm-ascend PR #2215 met it serving an EAGLE-3 draft)."""
    row = p.row("KV_PAGE_UNIFY")
    kinds = set(p.target_text.get("layer_types") or [])
    if row is None or row.value in (None, "padded") or len(kinds) < 2:
        return []
    text = p.target_text
    t_heads = int(text.get("num_key_value_heads") or text.get("num_attention_heads") or 0)
    t_dim = int(
        text.get("head_dim")
        or (text.get("hidden_size", 0) // max(1, text.get("num_attention_heads") or 1))
    )
    target, draft = t_heads * t_dim, p.draft.num_key_value_heads * p.draft.head_dim
    if not target or target == draft:
        return []
    big, small = max(target, draft), min(target, draft)
    if row.value == "divisible" and big % small == 0:
        return []
    return [
        Finding(
            code="DRAFT_KV_PAGES_NOT_UNIFIED",
            severity=Severity.ERROR,
            title=f"the draft's KV per token ({draft}) is not the target's ({target}) and the "
            f"target mixes attention types: {p.release} cannot give them one page size",
            evidence=(
                f"target layer_types: {', '.join(sorted(kinds))}; {t_heads} KV heads × head_dim "
                f"{t_dim} = {target}",
                f"draft {p.draft.num_key_value_heads} KV heads × head_dim {p.draft.head_dim} = "
                f"{draft}",
                "no common page size: the engine raises NotImplementedError while sizing the KV "
                "cache"
                if row.value == "never"
                else f"{big} is not a multiple of {small}: the page size cannot be unified",
            ),
            fix="serve with vllm 0.25.0 or later (pages that do not divide are padded), or a "
            "draft with the target's KV heads and head_dim",
            engine=str(p.release),
            source=f"{row.source}; vllm-project/vllm-ascend PR #2215",
        )
    ]
