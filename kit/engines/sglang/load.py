"""What SGLang's draft loader does with each checkpoint key, 0.4.4.post2 … 0.5.23.

Three loader eras: until 0.4.8 `LlamaForCausalLMEagle3` delegates to `LlamaForCausalLM.load_weights`
with a `model.` prefix (unknown stacked names raise `KeyError`, others log a warning); 0.4.9 …
0.5.11 has its own loader that tries the key as is, then with `model.`, and otherwise drops it
without a word; from 0.5.12 the decoder is a `layers` ModuleList and a legacy map turns
`midlayer` into `layers.0` first. The MLA draft `Eagle3DeepseekV2ForCausalLM` (≥0.5.12) has its
own loader, which logs what it skips. After load the EAGLE worker replaces the draft's embedding
(and with `draft_vocab_size: null` its head) by the target's.
"""

from __future__ import annotations

import re

from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.sglang.config import MLA, NULL_VOCAB_HEAD_FROM_TARGET, is_mla
from kit.engines.vocab import KeyOutcome, LoadContext, Outcome, Refusal, stacked

W = "sglang/srt/"  # every source path below is inside the wheel's sglang/srt/

DELEGATING, OWN, LEGACY_MAP = "delegating", "own", "legacy_map"

# Which loader reads the checkpoint, and the lines that hold it.
LOADER: list[Row[str]] = [
    Row(VersionRange("0.4.4.post2", "0.4.8"), DELEGATING,
        W + "models/llama_eagle3.py:180-190 → models/llama.py:481-535 (0.4.6.post1)"),
    Row(VersionRange("0.4.8", "0.4.9"), DELEGATING,
        W + "models/llama_eagle3.py:183-193 → models/llama.py:532-596 (0.4.8)"),
    Row(VersionRange("0.4.9", "0.5.3"), OWN, W + "models/llama_eagle3.py:202-243 (0.4.10)"),
    Row(VersionRange("0.5.3", "0.5.6"), OWN, W + "models/llama_eagle3.py:219 (0.5.3)"),
    Row(VersionRange("0.5.6", "0.5.10"), OWN, W + "models/llama_eagle3.py:229 (0.5.6)"),
    Row(VersionRange("0.5.10", "0.5.12"), OWN, W + "models/llama_eagle3.py:243 (0.5.10)"),
    Row(VersionRange("0.5.12", "0.5.15"), LEGACY_MAP, W + "models/llama_eagle3.py:293-346 (0.5.12)"),
    Row(VersionRange("0.5.15", "0.5.20"), LEGACY_MAP, W + "models/llama_eagle3.py:297 (0.5.15)"),
    Row(VersionRange("0.5.20", "0.5.23"), LEGACY_MAP, W + "models/llama_eagle3.py:314 (0.5.20)"),
    Row(VersionRange("0.5.23"), LEGACY_MAP, W + "models/llama_eagle3.py:325-378 (0.5.23)"),
]  # fmt: skip

# The worker always replaces the draft embedding by the target's (unless widths differ).
EMBED_FROM_TARGET = W + "models/llama.py:624-634 set_embed (0.4.6.post1); :910-924 (0.5.23)"

# No d2t key: AttributeError (hot_token_id never assigned) until 0.4.8; None afterwards.
D2T_MISSING_CRASH: list[Row[bool]] = [
    Row(VersionRange("0.4.4.post2", "0.4.9"), True,
        W + "speculative/eagle_worker.py:121-127 (0.4.6.post1)"),
    Row(VersionRange("0.4.9"), False, W + "models/llama_eagle3.py:215 d2t branch, else hot_token_id None (0.4.10)"),
]  # fmt: skip

# Shapes are checked by the weight loaders, never silently.
SHAPE_CHECK = (
    W + "model_loader/weight_utils.py:535 default_weight_loader (0.4.6.post1); "
    "layers/vocab_parallel_embedding.py:457-460"
)

LEGACY = {"midlayer": "layers.0", "aux_norm_low": "fc_norm.0", "aux_norm_mid": "fc_norm.1",
          "aux_norm_high": "fc_norm.2"}  # fmt: skip
LLAMA_SKIPS = ("rotary_emb.inv_freq", "projector", "rotary_emb.cos_cached", "rotary_emb.sin_cached")


def resolve_key(key: str, ctx: LoadContext) -> KeyOutcome:
    """What this release's loader does with one checkpoint key."""
    if is_mla(ctx.cfg):
        return _resolve_mla(key, ctx)
    loader = pick(LOADER, ctx.release)
    if loader.value == DELEGATING:
        return _resolve_delegating(key, ctx, loader.source)
    return _resolve_own(key, ctx, loader.source, legacy=loader.value == LEGACY_MAP)


def _resolve_delegating(key: str, ctx: LoadContext, src: str) -> KeyOutcome:
    if "d2t" in key:
        return KeyOutcome(
            key, Outcome.CONSUMED, message="hot_token_id = d2t + arange(len(d2t))", source=src
        )
    if "t2d" in key:
        return KeyOutcome(key, Outcome.IGNORED, message="t2d is not used by SGLang", source=src)
    name = key if "lm_head" in key else "model." + key
    if any(s in name for s in LLAMA_SKIPS):
        return KeyOutcome(
            key, Outcome.IGNORED, message=f"{name} skipped by LlamaForCausalLM", source=src
        )
    if ctx.cfg.tie_word_embeddings and "lm_head.weight" in name:
        return KeyOutcome(
            key, Outcome.IGNORED, message="tie_word_embeddings: lm_head skipped", source=src
        )
    params = ctx.params
    target, sid = stacked(name)
    if sid is not None:
        if target.endswith(".bias") and target not in params:
            return KeyOutcome(
                key, Outcome.DROPPED, message=f"{target} absent, bias skipped", source=src
            )
        if target not in params:
            return KeyOutcome(key, Outcome.ERROR, target, sid, f"KeyError: '{target}'", src)
        return KeyOutcome(key, Outcome.LOADED, target, sid, source=src)
    if name in params:
        return KeyOutcome(key, Outcome.LOADED, name, source=src)
    if name.endswith((".bias", ".kv_scale")):
        return KeyOutcome(key, Outcome.DROPPED, message=f"{name} absent, skipped", source=src)
    return KeyOutcome(
        key, Outcome.WARNED, message=f"Parameter {name} not found in params_dict", source=src
    )


def _resolve_own(key: str, ctx: LoadContext, src: str, legacy: bool) -> KeyOutcome:
    name = key
    if legacy:
        for old, new in LEGACY.items():
            if old in name:
                name = name.replace(old, new)
    if "d2t" in name:
        return KeyOutcome(
            key, Outcome.CONSUMED, message="hot_token_id = d2t + arange(len(d2t))", source=src
        )
    if "t2d" in name:
        return KeyOutcome(key, Outcome.IGNORED, message="t2d is skipped by the loader", source=src)
    name, sid = stacked(name)
    target = name if name in ctx.params else "model." + name
    if target in ctx.params:
        return KeyOutcome(key, Outcome.LOADED, target, sid, source=src)
    return KeyOutcome(
        key, Outcome.DROPPED, message=f"no parameter {name} (nor model.{name})", source=src
    )


def _resolve_mla(key: str, ctx: LoadContext) -> KeyOutcome:
    src = pick(MLA, ctx.release).source
    if key == "d2t" or key.endswith(".d2t"):
        return KeyOutcome(
            key, Outcome.CONSUMED, message="hot_token_id = d2t + arange(len(d2t))", source=src
        )
    if key == "t2d" or key.endswith(".t2d"):
        return KeyOutcome(key, Outcome.IGNORED, message="t2d is skipped by the loader", source=src)
    name = re.sub(r"^layers\.0\.", "midlayer.", key)
    if not name.startswith("lm_head."):
        name = "model." + name
    sid = None
    for fused, shard, s in (
        (".gate_up_proj", ".gate_proj", 0),
        (".gate_up_proj", ".up_proj", 1),
        (".fused_qkv_a_proj_with_mqa", ".q_a_proj", "q_a"),
        (".fused_qkv_a_proj_with_mqa", ".kv_a_proj_with_mqa", "kv_a"),
    ):
        if shard in name:
            name, sid = name.replace(shard, fused), s
            break
    if name in ctx.params:
        return KeyOutcome(key, Outcome.LOADED, name, sid, source=src)
    return KeyOutcome(
        key, Outcome.WARNED, message=f"Eagle3 MLA: skipping unexpected weight {name}", source=src
    )


def from_target(ctx: LoadContext) -> dict[str, tuple[str, str]]:
    """Parameters the EAGLE worker overwrites after load: name -> (what happens, source)."""
    cfg, out = ctx.cfg, {}
    if not (cfg.target_hidden_size and cfg.target_hidden_size != cfg.hidden_size):
        out["model.embed_tokens.weight"] = (
            "set_embed: replaced by the target's embedding",
            EMBED_FROM_TARGET,
        )
    row = pick(NULL_VOCAB_HEAD_FROM_TARGET, ctx.release)
    if row.value and cfg.draft_vocab_size is None and not cfg.tie_word_embeddings:
        msg = "draft_vocab_size is null: set_embed_and_head takes the target's embedding and head"
        out["model.embed_tokens.weight"] = (msg, row.source)
        out["lm_head.weight"] = (msg, row.source)
    return out


def missing_d2t_failure(release: EngineRelease) -> Refusal | None:
    """The start-up exception when the checkpoint has no d2t (≤0.4.8), else None."""
    row = pick(D2T_MISSING_CRASH, release)
    if row.value:
        msg = "AttributeError: 'LlamaForCausalLMEagle3' object has no attribute 'hot_token_id'"
        return Refusal(msg, row.source)
    return None


def d2t_source(release: EngineRelease) -> str:
    """Where this release turns d2t into its token map (or leaves it None)."""
    return pick(D2T_MISSING_CRASH, release).source
