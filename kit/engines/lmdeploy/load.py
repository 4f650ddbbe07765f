"""What LMDeploy's draft loader does with each checkpoint key (every release read).

`Eagle3LlamaForCausalLM.load_weights` (identical in 0.11.0, 0.15.0 and 0.18.0) turns `d2t` into
`draft_id_to_target_id` with `arange` added (absolute target ids), prefixes `model.` to every
other name but `lm_head.weight`, skips `t2d`, rotary buffers and, with `tie_word_embeddings`, the
head, stacks q/k/v and gate/up, and looks everything else up in `params_dict`: an unknown name is
a start-up `KeyError`. There is no rename hook (`midlayer.*` only) and nothing ties or borrows the
head. After load the proposer replaces the draft's embedding by the target's when no key named
one.
"""

from __future__ import annotations

from kit.engines.base import EngineRelease
from kit.engines.lmdeploy.config import EAGLE3, MLA, P, is_mla
from kit.engines.vocab import KeyOutcome, LoadContext, Outcome, Refusal, Shard, stacked

LOAD = EAGLE3 + ":277-317 (0.11.0), :278-318 (0.15.0, 0.18.0) load_weights"
D2T = EAGLE3 + ":290-296 (0.11.0), :291-297 (0.15.0, 0.18.0) d2t + arange(draft_vocab_size)"
SKIPS = EAGLE3 + ":300-305 (0.11.0), :301-306 (0.15.0, 0.18.0) t2d, rotary_emb buffers"
TIED = EAGLE3 + ":306-307 (0.11.0), :307-308 (0.15.0, 0.18.0) tie_word_embeddings: lm_head skipped"
UNKNOWN = EAGLE3 + ":312,316 (0.11.0), :313,317 (0.15.0, 0.18.0) params_dict[name]"
EMBED_FROM_TARGET = (
    P + "spec_decode/proposers/eagle3.py:29-33 (0.11.0), :34-37 (0.18.0) 'Using embed_tokens "
    "from target model.' when no key names embed_tokens (" + EAGLE3 + ":298-299 (0.11.0))"
)
D2T_MAP = (
    f"{EAGLE3}:182-185 (0.11.0) draft_id_to_target_id = zeros(draft_vocab_size); "
    f"{P}spec_decode/proposers/eagle3.py:62 (0.11.0), :137 (0.18.0) "
    "draft_token_ids = draft_id_to_target_id[draft_token_ids]"
)

# Shapes: plain parameters go through default_weight_loader's assert; merged qkv / gate_up and
# RMSNorm loaders `copy_`, which fails with a size RuntimeError instead. Either stops start-up.
SHAPE_CHECK = (
    P + "weight_loader/model_weight_loader.py:28-35 default_weight_loader asserts "
    "param.size() == loaded_weight.size() (0.11.0, 0.15.0, 0.18.0); "
    f"{P}nn/linear/default.py:204,269 and nn/norm.py:89 copy_ (0.18.0)"
)

SKIPPED = ("t2d", "rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached")


def resolve_key(key: str, ctx: LoadContext) -> KeyOutcome:
    """What the loader does with one checkpoint key, in the loader's own order of tests."""
    if is_mla(ctx.cfg, ctx.release):
        return _resolve_mla(key, ctx)
    if "d2t" in key:
        msg = "loaded as draft_id_to_target_id = d2t + arange(draft_vocab_size): target ids"
        return _lookup(key, "draft_id_to_target_id", None, ctx, Outcome.CONSUMED, msg, D2T)
    name = key if "lm_head.weight" in key else "model." + key
    skipped = next((s for s in SKIPPED if s in name), None)
    if skipped:
        msg = f"{skipped} is skipped by the loader"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=SKIPS)
    if ctx.cfg.tie_word_embeddings and "lm_head.weight" in name:
        msg = "tie_word_embeddings: lm_head.weight skipped, and nothing ties the head"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=TIED)
    fused, sid = stacked(name)
    return _lookup(key, fused, sid, ctx, Outcome.LOADED, "", LOAD)


def _lookup(
    key: str, name: str, shard: Shard, ctx: LoadContext, outcome: Outcome, msg: str, src: str
) -> KeyOutcome:
    """`params_dict[name]`: the parameter, or the start-up KeyError."""
    if name in ctx.params:
        return KeyOutcome(key, outcome, name, shard, msg, src)
    return KeyOutcome(key, Outcome.ERROR, message=f"KeyError: '{name}'", source=UNKNOWN)


# The MLA draft's loader (0.18.0 kimi_k25_eagle3.py:506-601): `model.` stripped, t2d and rotary
# buffers skipped, d2t made absolute, the embedding key skipped (the target's is used), `layers.0.`
# renamed to `midlayer.`, `model.` put back but for lm_head; gate/up merged, q_a_proj and
# kv_a_proj_with_mqa into fused_qkv_a_proj_with_mqa, kv_b_proj split into kc / vc; any other name
# without a parameter raises KeyError.
MLA_LOAD = MLA + ":506-601 Eagle3DeepseekV2ForCausalLM.load_weights (0.18.0)"
MLA_EMBED = MLA + ":415-416 include_embed_tokens = False, :530-532 embed_tokens.weight skipped"
MLA_STACKED = ((".gate_up_proj", ".gate_proj", 0), (".gate_up_proj", ".up_proj", 1),
               (".fused_qkv_a_proj_with_mqa", ".self_attn.q_a_proj", "q"),
               (".fused_qkv_a_proj_with_mqa", ".self_attn.kv_a_proj_with_mqa", "kv"))  # fmt: skip


def _resolve_mla(key: str, ctx: LoadContext) -> KeyOutcome:
    name = key.removeprefix("model.")
    if name == "t2d" or name.endswith(".t2d") or "rotary_emb." in name:
        return KeyOutcome(key, Outcome.IGNORED, message="skipped by the loader", source=MLA_LOAD)
    if name == "d2t" or name.endswith(".d2t"):
        msg = "loaded as draft_id_to_target_id = d2t + arange(draft_vocab_size): target ids"
        return _mla_param(key, "draft_id_to_target_id", None, ctx, Outcome.CONSUMED, msg)
    if name == "embed_tokens.weight":
        msg = "skipped: the draft always uses the target's embedding"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=MLA_EMBED)
    name = name.replace("layers.0.", "midlayer.", 1)
    name = name if name.startswith("lm_head.") else "model." + name
    for fused, shard, sid in MLA_STACKED:
        if shard in name:
            fused_name = name.replace(shard, fused if sid in (0, 1) else ".self_attn" + fused)
            return _mla_param(key, fused_name, sid, ctx, Outcome.LOADED, "")
    msg = "split into the kc and vc batched matmuls" if ".self_attn.kv_b_proj." in name else ""
    return _mla_param(key, name, None, ctx, Outcome.LOADED, msg)


def _mla_param(
    key: str, name: str, shard: Shard, ctx: LoadContext, outcome: Outcome, msg: str
) -> KeyOutcome:
    if name in ctx.params:
        return KeyOutcome(key, outcome, name, shard, msg, MLA_LOAD)
    msg = f"KeyError: 'unexpected Kimi EAGLE3 checkpoint weight {key!r} mapped to {name!r}'"
    return KeyOutcome(key, Outcome.ERROR, message=msg, source=MLA_LOAD)


def from_target(ctx: LoadContext) -> dict[str, tuple[str, str]]:
    """The draft embedding is the target's when no checkpoint key names embed_tokens (the MLA
    draft's always); the head is never replaced."""
    if is_mla(ctx.cfg, ctx.release):
        return {"model.embed_tokens.weight": ("the target's embedding is used", MLA_EMBED)}
    if any("embed_tokens" in k for k in ctx.keys):
        return {}
    return {
        "model.embed_tokens.weight": ("Using embed_tokens from target model.", EMBED_FROM_TARGET)
    }


def missing_d2t_failure(release: EngineRelease) -> Refusal | None:
    """LMDeploy starts without d2t: the map stays zeros (every draft token becomes id 0)."""
    return None


def d2t_source(release: EngineRelease) -> str:
    """Where draft_id_to_target_id is built (zeros) and used (absolute ids)."""
    return D2T_MAP
