"""What TensorRT-LLM's draft loader does with each checkpoint key (1.2.0rc2).

`Eagle3ForCausalLM.load_weights` prefixes `model.` to every key without `lm_head` (a key with
`lm_head` makes the draft keep its own head; without one the head is skipped and the target's is
used), then the generic loader walks the draft's *modules*, not the keys: each module with
parameters takes the keys under its own name (q/k/v and gate/up stacked into `qkv_proj` /
`gate_up_proj`). A key no module asks for is never read, without a word; a module whose tensor
is absent fails the load (`Linear`: KeyError 'weight'; a manual copy: assert). After load the
draft takes the target's embedding when it has none, and the target's head when it loaded none.
"""

from __future__ import annotations

from kit.engines.base import EngineRelease, Row, VersionRange
from kit.engines.tensorrt_llm.config import AT, SPEC, own_embedding
from kit.engines.tensorrt_llm.params import D2T_PARAM
from kit.engines.vocab import KeyOutcome, LoadContext, Outcome, Refusal, stacked

UTILS = "tensorrt_llm/_torch/models/modeling_utils.py"
PREFIX = f"{SPEC}:301-316 load_weights: 'model.' + key unless 'lm_head' in key {AT}"
# The module walk (stored copies of modeling_utils.py / base_weight_mapper.py of the same API;
# the index holds none at the commit read, so lines are not cited).
WALK = Row(
    VersionRange("1.2.0rc2"),
    "modules",
    f"{UTILS} _load_weights_impl_v2: for name, module in named_modules(): "
    "filter_weights(name) (keys under the module's name), params_map qkv_proj <- q/k/v, "
    "gate_up_proj <- gate/up; keys no module asks for are never read",
)
MISSING_TENSOR = Row(
    VersionRange("1.2.0rc2"),
    "fails",
    f"{UTILS} _load_weights_impl_v2 -> modules/linear.py load_weights_vanilla_helper "
    "weights[0]['weight'] (KeyError) / checkpoints/base_weight_mapper.py handle_manual_copy "
    "(assert n in module_weights)",
)
HEAD_FROM_TARGET = (
    f"{SPEC}:307-313 no lm_head key: skip_modules=['lm_head']; :318-323 "
    f"load_weights_from_target_model: lm_head = target_model.lm_head {AT}"
)
EMBED_FROM_TARGET = (
    f"{SPEC}:205-206 embed_tokens = None (target_hidden_size == hidden_size); :320-321 "
    f"embed_tokens = target_model.model.embed_tokens {AT}"
)
SHAPE_CHECK = (
    "tensorrt_llm/_torch/modules/linear.py copy_weight: dst.data.copy_(src) raises on a shape "
    "the parameter cannot take (stored copies of the same API)"
)


def resolve_key(key: str, ctx: LoadContext) -> KeyOutcome:
    """What this release's loader does with one checkpoint key."""
    name = key if "lm_head" in key else "model." + key
    name, sid = stacked(name)
    shared_embed = name == "model.embed_tokens.weight" and not own_embedding(ctx.cfg)
    if name in ctx.params and not shared_embed:
        if name == "model.d2t":
            msg = "copied into model.d2t (draft id -> target id offsets)"
            return KeyOutcome(key, Outcome.CONSUMED, name, None, msg, D2T_PARAM)
        return KeyOutcome(key, Outcome.LOADED, name, sid, source=WALK.source)
    return _not_read(key, name, ctx)


def _not_read(key: str, name: str, ctx: LoadContext) -> KeyOutcome:
    """A key no module asks for: harmless where the engine has no use for it, else lost."""
    if name == "model.t2d":
        msg = "t2d is not read (no module asks for it); d2t alone maps draft ids"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=WALK.source)
    if name == "model.embed_tokens.weight" and not own_embedding(ctx.cfg):
        msg = "not read: the draft uses the target's embedding (target_hidden_size == hidden_size)"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=EMBED_FROM_TARGET)
    if name == "model.d2t":
        msg = "not read: draft_vocab_size == vocab_size builds no d2t"
        return KeyOutcome(key, Outcome.IGNORED, message=msg, source=D2T_PARAM)
    msg = f"no module reads {name}"
    return KeyOutcome(key, Outcome.DROPPED, message=msg, source=WALK.source)


def from_target(ctx: LoadContext) -> dict[str, tuple[str, str]]:
    """Parameters the draft takes from the target after load: name -> (what, source)."""
    out: dict[str, tuple[str, str]] = {}
    if not own_embedding(ctx.cfg):
        out["model.embed_tokens.weight"] = ("the target's embed_tokens", EMBED_FROM_TARGET)
    if not any("lm_head" in k for k in ctx.keys):
        msg = "no lm_head in the checkpoint: the target's lm_head is used"
        out["lm_head.weight"] = (msg, HEAD_FROM_TARGET)
    return out


def unloaded_failure(ctx: LoadContext, unloaded: list[str]) -> Refusal | None:
    """The load error for parameters no checkpoint tensor fills (d2t first: it belongs to the
    `model` module, the first one the loader walks)."""
    if not unloaded or ctx.release not in MISSING_TENSOR.versions:
        return None
    first = "model.d2t" if "model.d2t" in unloaded else unloaded[0]
    module, _, param = first.rpartition(".")
    more = f" (+{len(unloaded) - 1} more parameters without a tensor)" if len(unloaded) > 1 else ""
    msg = f"loading {module or first} fails: no checkpoint tensor for its '{param}'{more}"
    return Refusal(msg, MISSING_TENSOR.source)


def missing_d2t_failure(release: EngineRelease) -> Refusal | None:
    """No d2t alone is not an error: only a draft with a smaller vocabulary builds one, and its
    absence is then an unloaded parameter (`unloaded_failure`)."""
    return None


def d2t_source(release: EngineRelease) -> str:
    return D2T_PARAM
