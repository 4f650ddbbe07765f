"""A reference EAGLE-3 draft `nn.Module` that follows the engines' forward pass step for step.

One draft step, as SGLang's `LlamaForCausalLMEagle3` runs it (0.5.10
`sglang/srt/models/llama_eagle3.py:144-190`) and where vLLM's `Eagle3LlamaForCausalLM` differs
(0.11.1 `vllm/model_executor/models/llama_eagle3.py:74-207`, `v1/spec_decode/eagle.py`); LMDeploy
runs SGLang's step with its own head only and an absolute token map (`Era`):

    e = embed_tokens(input_ids)                                   hook: embeds
    SGLang, LMDeploy: fc only if hidden.shape[-1] != e.shape[-1]  hook: aux_hidden_states
    vLLM:   fc always on the target's states (not on the draft's own)
            [input_norm over K·Ht] [fc_norm per chunk] -> fc      hooks: fc_in, fc_out
    residual = h (vLLM norm_before_residual: hidden_norm(h))
    x = cat(input_layernorm(e), hidden_norm(h))                   hook: attn_in (2H wide)
    q, k, v = qkv_proj(x); RoPE; causal attention; o_proj         hooks: qkv, attn_out
    y, residual = post_attention_layernorm(a + residual)          hook: residual
    m = mlp(y)                                                    hook: mlp_out
    s = m + residual; n = norm(s)                                 hook: norm_out
    logits = lm_head(n)  (draft vocab)                            hook: logits
    ids = argmax; target id = i + d2t[i] (LMDeploy: map[i])       hook: draft_token_ids
    next hidden = s (or n with norm_output)                       hook: hidden_out

The module is built from the release's own parameter list (`kit.engines.<engine>.engine_params`:
merged `qkv_proj` / `gate_up_proj`; `model.midlayer` in SGLang ≤0.5.11 and LMDeploy,
`model.layers.{i}` in later SGLang and in vLLM, `model.midlayer` / `model.midlayer.{i}` in
TensorRT-LLM, whose later layers read the embeddings again), so a load simulation's report applies
name for name and no structural fact is stated twice. SGLang and vLLM pad vocabulary rows to a
multiple of 64; this module keeps the
exact vocabulary (padding rows are never read). Every tensor that crosses a boundary passes an
identity `HookPoint`, and `run_with_cache` returns `{hook name: tensor}` (TransformerLens style).
The module builds and runs on the meta device, so a full-scale draft traces without memory.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from kit.checkpoint.config import DraftConfig
from kit.checkpoint.files import Checkpoint
from kit.engines import ENGINES, EngineRelease, parse_engine
from kit.engines.vocab import (
    EVERY_LAYER_READS_EMBEDS,
    Era,
    FcGate,
    Honoured,
    Init,
    Outcome,
    ParamSpec,
    State,
    TokenMap,
)
from kit.errors import KitError
from kit.tracing.rotary import rotary

# The release whose module `build_draft` makes when none is named: for SGLang and vLLM one in which
# every layout loads; LMDeploy's and TensorRT-LLM's module is the same in every release read.
DEFAULT_RELEASE = {
    "sglang": "sglang==0.5.12",
    "vllm": "vllm==0.11.2",
    "lmdeploy": "lmdeploy==0.18.0",
    "tensorrt_llm": "tensorrt_llm==1.2.0rc2",
}


# ---------------------------------------------------------------------------------------------
# Building blocks.


class HookPoint(nn.Module):
    """Identity; a named place where `run_with_cache` reads the tensor passing through."""

    def __init__(self, name: str):
        super().__init__()
        self.hook_name = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class RMSNorm(nn.Module):
    """RMSNorm with the engines' fused add: `norm(x, residual)` returns `(norm(x+r), x+r)`."""

    def __init__(self, width: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None):
        if residual is not None:
            x = x + residual
        var = x.float().pow(2).mean(-1, keepdim=True)
        out = (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight
        return out if residual is None else (out, x)


class Embedding(nn.Embedding):
    """`nn.Embedding` whose random init is skipped on the meta device, which holds no values.

    On a real device it draws exactly what `nn.Embedding` draws. On meta, `normal_` would be the
    build's only op that runs one of torch's Python meta kernels, and the first such call in a
    process imports sympy and torch._dynamo (about 1 s and 70 MB); without it a meta build (the
    size check before a cpu trace) runs no meta kernel at all.
    """

    def reset_parameters(self) -> None:
        if not self.weight.is_meta:
            super().reset_parameters()


class ChainCache:
    """Keys and values of earlier draft steps, for chain drafting from every row at once.

    Step 0 runs causally over the whole sequence (the draft-extend pass) and stores its keys.
    Step j ≥ 1 is one query per row `t` (the chain that started at `t`): it attends to step 0's
    keys at positions ≤ t plus its own chain's keys of steps 1..j (EAGLE-3 "training-time test"),
    each rotated at the position its step ran at (`chain_positions`).
    """

    def __init__(self, num_layers: int):
        self.kv: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in range(num_layers)]


def chain_positions(rows: torch.Tensor, step: int, late: int = 0) -> torch.Tensor:
    """The RoPE positions of chain step `step` for the chains that start at `rows`.

    Step 0, the draft-extend pass, runs row t at t (the token after t with the target's state at
    t), as the draft is trained; step j runs at t + j as trained, and `late` positions later in a
    release whose draft decode runs late (`Engine.draft_positions`: SGLang before 0.5.12). Its
    keys stay where they ran, so every later step of the chain attends to them there.
    """
    return rows + step + (late if step else 0)


class Attention(nn.Module):
    def __init__(self, cfg: DraftConfig, specs: dict[str, ParamSpec], p: str, hook_prefix: str):
        super().__init__()
        self.nh, self.nkv, self.hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.rotary = rotary(cfg, self.hd)
        qkv = specs[p + "qkv_proj.weight"].shape
        self.qkv_proj = nn.Linear(qkv[1], qkv[0], bias=False)
        bias = p + "o_proj.bias" in specs
        self.o_proj = nn.Linear(self.nh * self.hd, cfg.hidden_size, bias=bias)
        if p + "q_norm.weight" in specs:  # Qwen3 drafts (vLLM ≥0.24): per-head RMSNorm on q, k
            self.q_norm = RMSNorm(self.hd, cfg.rms_norm_eps)
            self.k_norm = RMSNorm(self.hd, cfg.rms_norm_eps)
        self.hook_qkv = HookPoint(hook_prefix + "qkv")

    def forward(self, x: torch.Tensor, positions: torch.Tensor, kv: list | None) -> torch.Tensor:
        qkv = self.hook_qkv(self.qkv_proj(x))
        q, k, v = qkv.split([self.nh * self.hd, self.nkv * self.hd, self.nkv * self.hd], -1)
        q, k = q.unflatten(-1, (self.nh, self.hd)), k.unflatten(-1, (self.nkv, self.hd))
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = self.rotary(q, positions), self.rotary(k, positions)
        v = v.unflatten(-1, (self.nkv, self.hd))
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, -2), v.repeat_interleave(rep, -2)  # [..., T, nh, hd]
        if kv is not None:
            kv.append((k, v))
        scale = 1.0 / math.sqrt(self.hd)
        k0, v0 = kv[0] if kv else (k, v)
        scores = torch.einsum("...qhd,...khd->...hqk", q, k0) * scale  # [..., nh, T, T]
        t = scores.shape[-1]
        causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        if kv and len(kv) > 1:  # chain steps: each row also sees its own chain's keys
            diag = [torch.einsum("...qhd,...qhd->...hq", q, ki)[..., None] for ki, _ in kv[1:]]
            scores = torch.cat([scores, *(d * scale for d in diag)], -1)
        p = scores.float().softmax(-1).to(q.dtype)
        out = torch.einsum("...hqk,...khd->...qhd", p[..., :t], v0)
        for j, (_, vj) in enumerate(kv[1:] if kv else []):
            out = out + p[..., t + j].transpose(-1, -2)[..., None] * vj
        return self.o_proj(out.flatten(-2))


class MLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden, 2 * intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, -1)
        return self.down_proj(F.silu(gate) * up)


class DecoderLayer(nn.Module):
    """Layer 0 reads `cat(input_layernorm(embeds), hidden_norm(h))`; later layers read H and open
    with one fused-add norm (`Era.later_input_norm`), or, in TensorRT-LLM, add the previous
    residual and read embeds and hidden again like layer 0. Built with exactly the norms the
    engine builds for this layer, used or not, so a load report applies name for name."""

    def __init__(self, cfg: DraftConfig, specs: dict[str, ParamSpec], p: str, index: int,
                 era: Era, honoured: Honoured):  # fmt: skip
        super().__init__()
        h, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.first = index == 0 or era.later_input_norm == EVERY_LAYER_READS_EMBEDS
        hook = "" if index == 0 else f"layers.{index}."
        self.input_norm_name = "input_layernorm" if self.first else era.later_input_norm
        for norm in ("input_layernorm", "hidden_norm", "post_attention_layernorm"):
            if p + norm + ".weight" in specs:
                setattr(self, norm, RMSNorm(h, eps))
        if not hasattr(self, self.input_norm_name):
            raise KitError(f"{p}{self.input_norm_name} is used but the engine builds none")
        self.self_attn = Attention(cfg, specs, p + "self_attn.", hook)
        self.mlp = MLP(h, specs[p + "mlp.gate_up_proj.weight"].shape[0] // 2)
        self.norm_before_residual = honoured.norm_before_residual
        self.hook_attn_in = HookPoint(hook + "attn_in")
        self.hook_attn_out = HookPoint(hook + "attn_out")
        self.hook_residual = HookPoint(hook + "residual")
        self.hook_mlp_out = HookPoint(hook + "mlp_out")

    def forward(self, embeds, h, residual, positions, kv):
        if self.first:
            if residual is not None:  # a later layer that reads embeds again (TensorRT-LLM)
                h = h + residual
            hn = self.hidden_norm(h)
            residual = hn if self.norm_before_residual else h
            x = torch.cat([self.input_layernorm(embeds), hn], -1)
        else:
            x, residual = getattr(self, self.input_norm_name)(h, residual)
        a = self.hook_attn_out(self.self_attn(self.hook_attn_in(x), positions, kv))
        y, residual = self.post_attention_layernorm(a, residual)
        return self.hook_mlp_out(self.mlp(y)), self.hook_residual(residual)


class Eagle3Model(nn.Module):
    """The `model.` part: embedding, fc (and its norms), decoder layer(s), final norm."""

    def __init__(self, cfg: DraftConfig, specs: dict[str, ParamSpec], era: Era, honoured: Honoured):
        super().__init__()
        h, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.embed_tokens = Embedding(cfg.vocab_size, h)
        if "model.input_norm.weight" in specs:
            self.input_norm = RMSNorm(specs["model.input_norm.weight"].shape[0], eps)
        fc_norms = [n for n in specs if n.startswith("model.fc_norm.")]
        if fc_norms:
            ht = specs[fc_norms[0]].shape[0]
            self.fc_norm = nn.ModuleList(RMSNorm(ht, eps) for _ in fc_norms)
        if "model.fc.weight" in specs:
            out_w, in_w = specs["model.fc.weight"].shape
            self.fc = nn.Linear(in_w, out_w, bias="model.fc.bias" in specs)
        mid = {n.split(".")[2] for n in specs if n.startswith("model.midlayer.")}
        if mid and all(i.isdigit() for i in mid):  # TensorRT-LLM: a midlayer ModuleList
            self.midlayer = nn.ModuleList(
                DecoderLayer(cfg, specs, f"model.midlayer.{i}.", i, era, honoured)
                for i in range(len(mid))
            )
        elif mid:
            self.midlayer = DecoderLayer(cfg, specs, "model.midlayer.", 0, era, honoured)
        else:
            count = len({n.split(".")[2] for n in specs if n.startswith("model.layers.")})
            self.layers = nn.ModuleList(
                DecoderLayer(cfg, specs, f"model.layers.{i}.", i, era, honoured)
                for i in range(count)
            )
        self.norm = RMSNorm(h, eps)

    def decoder_layers(self) -> list[DecoderLayer]:
        if not hasattr(self, "midlayer"):
            return list(self.layers)
        return list(self.midlayer) if isinstance(self.midlayer, nn.ModuleList) else [self.midlayer]


class Eagle3Draft(nn.Module):
    """An EAGLE-3 draft as one engine release builds and runs it (see the module docstring).

    Its parameters are the release's `engine_params` for the config, name for name; its forward
    follows the release's era (`kit.engines.<engine>.forward`) and the trained behaviours the
    release honours (`honours`), not the ones the config asks for.
    """

    def __init__(self, cfg: DraftConfig, release: EngineRelease):
        super().__init__()
        eng = ENGINES[release.name]
        failure = eng.constructor_failure(cfg, release)
        if failure is not None:
            raise KitError(f"{release} does not build this draft: {failure.message}", cfg.path)
        specs = {p.name: p for p in eng.engine_params(cfg, release)}
        if any(".fused_qkv_a_proj" in n for n in specs):
            raise KitError("the reference module does not model MLA drafts", cfg.path)
        row = eng.era(release)
        self.cfg, self.release, self.era, self.era_source = cfg, release, row.value, row.source
        self.honoured = eng.honours(cfg, release)
        self.model = Eagle3Model(cfg, specs, self.era, self.honoured)
        if "lm_head.weight" in specs:
            self.lm_head = nn.Linear(cfg.hidden_size, specs["lm_head.weight"].rows or 0, bias=False)
        # the token map: a vLLM / LMDeploy parameter (`draft_id_to_target_id`), SGLang's
        # `hot_token_id` source
        vd = cfg.effective_draft_vocab
        if "draft_id_to_target_id" in specs:
            self.register_buffer("draft_id_to_target_id", torch.zeros(vd, dtype=torch.long))
        elif vd != cfg.vocab_size:
            self.register_buffer("d2t", torch.zeros(vd, dtype=torch.long))
        for name in ("aux_hidden_states", "fc_in", "fc_out", "embeds", "norm_out", "logits"):
            setattr(self, f"hook_{name}", HookPoint(name))
        self.hook_draft_token_ids = HookPoint("draft_token_ids")
        self.hook_hidden_out = HookPoint("hidden_out")
        self.use_d2t = True
        self.fc_applied: bool | None = None  # whether the last forward ran fc

    # -- the vocabulary map ---------------------------------------------------------------

    def d2t_buffer_name(self) -> str | None:
        for name in ("draft_id_to_target_id", "d2t"):
            if hasattr(self, name):
                return name
        return None

    @property
    def d2t_offsets(self) -> torch.Tensor | None:
        """The token map (`Era.token_map`: d2t offsets, or absolute target ids); None: draft ids
        are used as target ids."""
        if not self.use_d2t:
            return None
        name = self.d2t_buffer_name()
        return None if name is None else getattr(self, name)

    def to_target_ids(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """Offsets add to the id; an absolute map (LMDeploy) is indexed, so one nothing loaded
        (zeros) sends every drafted token to target id 0, as the engine does."""
        d2t = self.d2t_offsets
        if d2t is None:
            return draft_ids
        if self.era.token_map is TokenMap.ABSOLUTE:
            return d2t[draft_ids]
        return draft_ids + d2t[draft_ids]

    def head(self) -> nn.Module:
        tied = self.cfg.tie_word_embeddings and not self.era.own_head_only
        return self.model.embed_tokens if tied else self.lm_head

    # -- one draft step -------------------------------------------------------------------

    def combine(self, hidden: torch.Tensor, own: bool) -> torch.Tensor:
        """The `fc` stage: the engine's gate, then `input_norm` / `fc_norm` and `fc`."""
        if not hasattr(self.model, "fc"):  # vLLM ≥0.12 with use_aux_hidden_state false
            run = False
        elif self.era.fc_gate is FcGate.WIDTH:  # SGLang: fc iff the width differs
            run = hidden.shape[-1] != self.cfg.hidden_size
        else:  # vLLM: combine_hidden_states on the target's states only
            run = not own
        self.fc_applied = run
        if not run:
            return hidden
        x = self.hook_fc_in(hidden)
        if hasattr(self.model, "input_norm"):
            x = self.model.input_norm(x)
        if hasattr(self.model, "fc_norm"):
            chunks = x.chunk(len(self.model.fc_norm), -1)
            x = torch.cat([n(c) for n, c in zip(self.model.fc_norm, chunks, strict=True)], -1)
        return self.hook_fc_out(self.model.fc(x))

    def forward(
        self,
        input_ids: torch.Tensor,
        hidden_states: torch.Tensor,
        positions: torch.Tensor | None = None,
        cache: ChainCache | None = None,
        own_hidden: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One draft step over `[..., T]` tokens; returns `(logits, next-step hidden)`.

        `hidden_states` is what the engine hands over: the target's aux states (`K·Ht` wide), or
        any other width to reproduce a fault; `own_hidden=True` marks the draft's own hidden from
        the previous step (vLLM then skips fc; SGLang's shape gate decides by itself).
        """
        if positions is None:
            positions = torch.arange(input_ids.shape[-1], device=input_ids.device)
        embeds = self.hook_embeds(self.model.embed_tokens(input_ids))
        h = self.combine(self.hook_aux_hidden_states(hidden_states), own_hidden)
        if h.shape[-1] != embeds.shape[-1]:  # what fc should have produced
            raise KitError(
                f"draft gets a {h.shape[-1]}-wide hidden state but its layer needs "
                f"{embeds.shape[-1]} (fc {'bypassed' if not self.fc_applied else 'ran'})"
            )
        layers = self.model.decoder_layers()
        residual = None
        for i, layer in enumerate(layers):
            kv = cache.kv[i] if cache is not None else None
            h, residual = layer(embeds, h, residual, positions, kv)
        normed, summed = self.model.norm(h, residual)
        normed = self.hook_norm_out(normed)
        logits = self.hook_logits(self.head()(normed)[..., : self.cfg.effective_draft_vocab])
        self.hook_draft_token_ids(self.to_target_ids(logits.argmax(-1)))
        nxt = normed if self.honoured.norm_output else summed
        return logits, self.hook_hidden_out(nxt)

    # -- hooks ----------------------------------------------------------------------------

    def hook_points(self) -> dict[str, HookPoint]:
        return {m.hook_name: m for m in self.modules() if isinstance(m, HookPoint)}

    def run_with_cache(
        self,
        input_ids: torch.Tensor,
        hidden_states: torch.Tensor,
        positions: torch.Tensor | None = None,
        names_filter: Callable[[str], bool] | list[str] | str | None = None,
        **kwargs,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Run one step and return `(logits, {hook name: tensor})` for the hooks that fired.

        `fc_out` is absent from the cache when fc was bypassed; `self.fc_applied` says which.
        """
        if isinstance(names_filter, str):
            names_filter = [names_filter]
        if isinstance(names_filter, list):
            wanted = set(names_filter)
            names_filter = wanted.__contains__
        cache: dict[str, torch.Tensor] = {}
        handles = []
        for name, hp in self.hook_points().items():
            if names_filter is None or names_filter(name):

                def save(_m, _inp, out, name=name):
                    cache[name] = out.detach()

                handles.append(hp.register_forward_hook(save))
        try:
            logits, _ = self(input_ids, hidden_states, positions, **kwargs)
        finally:
            for hnd in handles:
                hnd.remove()
        return logits, cache


def build_draft(
    cfg: DraftConfig, engine: str = "sglang", release: EngineRelease | str | None = None
) -> Eagle3Draft:
    """The draft as `release` (default: a release that loads every layout) builds it.

    Parameters start at PyTorch's defaults; `load_state` fills them as a load report says.
    Build under `with torch.device("meta"):` to trace a full-size draft without memory.
    """
    if release is None:
        release = DEFAULT_RELEASE.get(engine)
        if release is None:
            raise KitError(f"unknown engine {engine!r}; use {', '.join(DEFAULT_RELEASE)}")
    if isinstance(release, str):
        release = parse_engine(release)
    return Eagle3Draft(cfg, release)


# ---------------------------------------------------------------------------------------------
# Loading: apply a load simulation's report (`kit.load.replay.simulate_load`) to the module.


def load_state(
    draft: Eagle3Draft, ck: Checkpoint, report, target: nn.Module | None = None, seed: int = 0
) -> None:
    """Fill `draft` the way the report's engine release fills its parameters.

    Loaded keys are copied into their parameter (merged q/k/v and gate/up at their shard's
    rows); `from_target` parameters get the target's embedding / head (`target` is a
    transformers causal LM); `left_at_init` parameters get the engine's init: `ones`, `zeros`,
    `random` (PyTorch's default `nn.Linear` init) or `uninitialized`. The engine's
    `torch.empty` leaves whatever was in memory, which has no value to predict from; the
    stand-in here is a seeded draw at PyTorch's default init scale (U(±1/sqrt(fan_in))), so runs
    repeat, and offline acceptance reports the figure as the best case of a range that reaches
    the floor (NaN memory accepts nothing). A `d2t` key that the engine consumes becomes the
    module's token map.
    """
    report = report.as_served  # a refused config.json: the server that ran read its rewrite
    params = dict(draft.named_parameters()) | dict(draft.named_buffers())
    with torch.no_grad(), ck.tensor_reader() as read:
        for rec in report.keys:
            if rec.outcome == Outcome.CONSUMED and "d2t" in rec.key:
                buf = draft.d2t_buffer_name()
                if buf is not None:
                    params[buf].copy_(_token_map(draft, read(rec.key)))
            elif rec.outcome == Outcome.LOADED and rec.param in params:
                rows = _shard_rows(draft, rec.param, rec.shard)
                dest = params[rec.param] if rows is None else params[rec.param][rows]
                src = read(rec.key)
                dest.copy_(src[: dest.shape[0]] if src.shape[0] > dest.shape[0] else src)
        for st in report.params:
            if st.name not in params:
                continue
            p = params[st.name]
            if st.state == State.FROM_TARGET:
                p.copy_(_from_target(st.name, p, target))
            elif st.state == State.LEFT_AT_INIT:
                _init_like_engine(p, st.init, seed + zlib.crc32(st.name.encode()))


def _token_map(draft: Eagle3Draft, d2t: torch.Tensor) -> torch.Tensor:
    """The checkpoint's offsets as the engine stores them: absolute ids where it adds arange."""
    if draft.era.token_map is TokenMap.ABSOLUTE:
        return d2t + torch.arange(d2t.shape[0], dtype=d2t.dtype)
    return d2t


def _shard_rows(draft: Eagle3Draft, name: str, shard) -> slice | None:
    """Rows of a merged parameter that one checkpoint shard fills (engine shard ids)."""
    if shard is None:
        return None
    c = draft.cfg
    nq, nkv, i = (
        c.num_attention_heads * c.head_dim,
        c.num_key_value_heads * c.head_dim,
        c.intermediate_size,
    )
    starts = {"q": (0, nq), "k": (nq, nkv), "v": (nq + nkv, nkv), 0: (0, i), 1: (i, i)}
    if shard not in starts:
        raise KitError(f"unknown shard {shard!r} for {name}")
    begin, rows = starts[shard]
    return slice(begin, begin + rows)


def _from_target(name: str, p: torch.Tensor, target: nn.Module | None) -> torch.Tensor:
    if target is None:
        raise KitError(f"{name} comes from the target in this engine; pass the target model")
    src = (
        target.get_input_embeddings() if "embed_tokens" in name else target.get_output_embeddings()
    )
    w = src.weight
    if w.shape[1] != p.shape[1]:
        raise KitError(f"target {tuple(w.shape)} does not fit the draft's {name} {tuple(p.shape)}")
    return w[: p.shape[0]]


def _init_like_engine(p: torch.Tensor, init: Init, seed: int) -> None:
    if init == Init.ONES:
        p.fill_(1.0)
    elif init == Init.ZEROS:
        p.zero_()
    elif init in (Init.RANDOM, Init.UNINITIALIZED):
        g = torch.Generator().manual_seed(seed)
        bound = 1.0 / math.sqrt(p.shape[-1]) if p.dim() > 1 else 1.0 / math.sqrt(p.numel())
        p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound)
    else:
        raise KitError(f"unknown engine init {init!r}")
