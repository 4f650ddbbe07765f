"""The reference EAGLE-3 draft module: engine parameter names, the fc gate, hooks, loading."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from kit.checkpoint.config import load_draft_config, parse_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.errors import KitError
from kit.load.replay import engine_params, simulate_load
from kit.tracing.draft import ChainCache, build_draft, load_state

torch.set_num_threads(1)

ERAS = [
    "sglang==0.4.8",
    "sglang==0.4.9",
    "sglang==0.5.10",
    "sglang==0.5.11",
    "sglang==0.5.12",
    "sglang==0.5.17",
    "sglang==0.5.23",
    "vllm==0.9.2",
    "vllm==0.11.0",
    "vllm==0.11.2",
    "vllm==0.18.0",
    "vllm==0.24.0",
    "vllm==0.28.0",
    "vllm==0.33.0",
]


@pytest.fixture
def cfg(sample_dir):
    return load_draft_config(sample_dir)


def variant(cfg, **changes):
    return dataclasses.replace(cfg, **changes)


def _names(draft, engine_names):
    params = {n for n, _ in draft.named_parameters()}
    buffers = {n for n, _ in draft.named_buffers() if n in engine_names}
    return params | buffers


@pytest.mark.parametrize("release", ERAS)
@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"norm_before_fc": True, "fc_norm": True, "norm_output": True},
        {"bias": True},
        {"draft_vocab_size": None},
    ],
    ids=["sample", "norms", "bias", "full-vocab"],
)
def test_parameter_names_are_the_load_simulations(cfg, release, changes):
    """One source of truth: the module's names are `kit.load.replay.engine_params`' names.

    SGLang ≤0.5.11 `model.midlayer.*` (0.5.10 llama_eagle3.py:144), ≥0.5.12 `model.layers.{i}`
    (0.5.12 :180) + `fc_norm` (≥0.5.12) / `input_norm` (≥0.5.17, 0.5.23 :163); fc bias always in
    ≤0.4.8 (0.4.6.post1 :109-111); vLLM `draft_id_to_target_id` (0.33 only when Vd != V).
    Shapes agree too, except the engines' 64-row vocab padding, which the module leaves out.
    """
    c = variant(cfg, **changes)
    specs = engine_params(c, release)
    if changes.get("draft_vocab_size", 1) is None and release in ("sglang==0.4.8", "sglang==0.4.9"):
        # a null draft_vocab_size sizes lm_head from None before 0.5.2: the engine builds nothing
        with pytest.raises(KitError, match="draft_vocab_size=None"):
            build_draft(c, release=release)
        return
    draft = build_draft(c, release=release)
    want = {s.name: s for s in specs}
    assert _names(draft, want) == set(want)
    shapes = dict(draft.named_parameters()) | dict(draft.named_buffers())
    for name, spec in want.items():
        rows = spec.rows or spec.shape[0]
        assert tuple(shapes[name].shape) == (rows, *spec.shape[1:]), name


@pytest.mark.parametrize(
    "release", ["sglang==0.5.12", "sglang==0.5.23", "vllm==0.11.2", "vllm==0.33.0"]
)
def test_two_layer_names_match(cfg, release):
    """SGLang ≥0.5.12 (0.5.12 `models/llama_eagle3.py:180-186`, a `layers` ModuleList) and vLLM
    ≥0.11.1 (vllm PR #26164; 0.11.1 `model_executor/models/llama_eagle3.py:155-165`) build
    `num_hidden_layers` draft layers; every vLLM layer builds a hidden_norm (0.11.1 `:67`)."""
    c = variant(cfg, num_hidden_layers=2)
    want = {s.name for s in engine_params(c, release)}
    assert _names(build_draft(c, release=release), want) == want


def test_one_layer_only_before_sglang_0_5_12(cfg):
    """SGLang ≤0.5.11: `ValueError("EAGLE3 currently only supports 1 layer")` (SpecForge#129)."""
    with pytest.raises(KitError, match="only supports 1 layer"):
        build_draft(variant(cfg, num_hidden_layers=2), release="sglang==0.5.11")


def _inputs(cfg, width, t=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, cfg.vocab_size, (t,), generator=g)
    return ids, torch.randn(t, width, generator=g)


def test_sglang_fc_gate_bypasses_fc_when_width_equals_hidden(cfg):
    """SGLang 0.5.10 `llama_eagle3.py:176`: `if hidden_states.shape[-1] != embeds.shape[-1]:
    hidden_states = self.fc(hidden_states)`: a single H-wide state skips fc without a word."""
    draft = build_draft(cfg, release="sglang==0.5.10")
    ids, aux = _inputs(cfg, 3 * cfg.hidden_size)
    _, cache = draft.run_with_cache(ids, aux)
    assert draft.fc_applied is True
    assert cache["fc_in"].shape[-1] == 3 * cfg.hidden_size
    assert cache["fc_out"].shape[-1] == cfg.hidden_size
    ids, final = _inputs(cfg, cfg.hidden_size)
    _, cache = draft.run_with_cache(ids, final)
    assert draft.fc_applied is False
    assert "fc_out" not in cache and "fc_in" not in cache
    assert torch.equal(cache["aux_hidden_states"], final)
    assert cache["attn_in"].shape[-1] == 2 * cfg.hidden_size


def test_sglang_fc_with_a_wrong_width_fails_in_fc(cfg):
    """SGLang's fc gate (0.5.10 `models/llama_eagle3.py:176`): a width that is neither H nor K·Ht
    takes the gate, and fc's matmul (`:138-142`) fails."""
    draft = build_draft(cfg, release="sglang==0.5.10")
    ids, aux = _inputs(cfg, 2 * cfg.hidden_size)
    with pytest.raises(RuntimeError):
        draft(ids, aux)


def test_vllm_always_applies_fc_to_target_states(cfg):
    """vLLM 0.9.2 `v1/spec_decode/eagle.py` L100-104: `combine_hidden_states` (fc) on every
    target hand-over, no width gate, so a single H-wide state fails in fc instead."""
    draft = build_draft(cfg, release="vllm==0.11.0")
    ids, aux = _inputs(cfg, 3 * cfg.hidden_size)
    draft(ids, aux)
    assert draft.fc_applied is True
    ids, final = _inputs(cfg, cfg.hidden_size)
    with pytest.raises(RuntimeError):
        draft(ids, final)
    # the draft's own hidden from the previous step never goes through fc
    draft(ids, final, own_hidden=True)
    assert draft.fc_applied is False


def test_vllm_use_aux_hidden_state_false_skips_fc_from_0_12(cfg):
    """vLLM ≥0.12 `combine_hidden_states` returns its input when
    `eagle_config.use_aux_hidden_state` is False (0.12.0
    `model_executor/models/llama_eagle3.py:341`)."""
    c = variant(cfg, use_aux_hidden_state=False)
    ids, final = _inputs(cfg, cfg.hidden_size)
    build_draft(c, release="vllm==0.12.0")(ids, final)
    with pytest.raises(RuntimeError):
        build_draft(c, release="vllm==0.11.0")(ids, final)


def test_norm_before_residual_is_vllm_only(cfg):
    """vLLM layer 0: residual = hidden_norm(h) when `norm_before_residual` (0.11.1
    `model_executor/models/llama_eagle3.py:69-72`); SGLang keeps the pre-norm h in every version
    (0.5.12 `models/llama_eagle3.py:93-97`; no release reads the flag)."""
    assert cfg.norm_before_residual
    ids, aux = _inputs(cfg, 3 * cfg.hidden_size)
    h = cfg.hidden_size
    for rel, residual_in in (("vllm==0.11.0", "hidden_norm"), ("sglang==0.5.12", "fc_out")):
        d = build_draft(cfg, release=rel)
        with torch.no_grad():
            d.model.decoder_layers()[0].hidden_norm.weight.mul_(3.0)
        _, c = d.run_with_cache(ids, aux)
        before = c["attn_in"][..., h:] if residual_in == "hidden_norm" else c["fc_out"]
        other = c["fc_out"] if residual_in == "hidden_norm" else c["attn_in"][..., h:]
        assert torch.allclose(c["residual"] - c["attn_out"], before, atol=1e-5), rel
        assert not torch.allclose(c["residual"] - c["attn_out"], other, atol=1e-3), rel


def test_norm_output_carries_the_post_norm_hidden(cfg):
    """SGLang ≥0.5.12 (0.5.12 llama_eagle3.py:218 ff.) and vLLM ≥0.24: with `norm_output` the
    next draft step gets norm(s); otherwise the pre-norm sum s."""
    c = variant(cfg, norm_output=True)
    ids, aux = _inputs(cfg, 3 * cfg.hidden_size)
    _, new = build_draft(c, release="sglang==0.5.12").run_with_cache(ids, aux)
    assert torch.equal(new["hidden_out"], new["norm_out"])
    _, old = build_draft(c, release="sglang==0.5.10").run_with_cache(ids, aux)
    assert not torch.equal(old["hidden_out"], old["norm_out"])
    summed = old["mlp_out"] + old["residual"]
    assert torch.allclose(old["hidden_out"], summed)


def test_d2t_maps_draft_ids_to_target_ids(cfg, sample_dir):
    """`target = i + d2t[i]` (docs/conventions.md#vocabulary-maps-d2t-and-t2d; SGLang
    hot_token_id, 0.4.6.post1 eagle_worker.py:430); without the map draft ids are used as target
    ids."""
    ck = open_checkpoint(sample_dir)
    draft = build_draft(cfg, release="sglang==0.5.12")
    load_state(draft, ck, simulate_load(ck, cfg, "sglang==0.5.12"), target=_FakeTarget(cfg))
    d2t = ck.read_tensor("d2t")
    assert torch.equal(draft.d2t, d2t)
    ids, aux = _inputs(cfg, 3 * cfg.hidden_size)
    logits, cache = draft.run_with_cache(ids, aux)
    i = logits.argmax(-1)
    assert torch.equal(cache["draft_token_ids"], i + d2t[i])
    draft.use_d2t = False
    _, cache = draft.run_with_cache(ids, aux)
    assert torch.equal(cache["draft_token_ids"], i)


def test_embedding_init_is_nn_embeddings_and_skipped_on_meta(cfg):
    """Same seed, same draw as `nn.Embedding` on cpu; on meta no values, so nothing to draw."""
    torch.manual_seed(3)
    draft = build_draft(cfg, release="sglang==0.5.12")
    torch.manual_seed(3)
    plain = torch.nn.Embedding(cfg.vocab_size, cfg.hidden_size)
    assert isinstance(draft.model.embed_tokens, torch.nn.Embedding)
    assert torch.equal(draft.model.embed_tokens.weight, plain.weight)
    with torch.device("meta"):
        meta = build_draft(cfg, release="sglang==0.5.12")
    assert meta.model.embed_tokens.weight.is_meta
    assert meta.model.embed_tokens.weight.shape == plain.weight.shape


def test_attention_matches_torch_causal_sdpa(cfg):
    """The hand-written attention (needed for chain drafting) is ordinary causal attention."""
    draft = build_draft(cfg, release="sglang==0.5.12")
    attn = draft.model.layers[0].self_attn
    x = torch.randn(2, 7, 2 * cfg.hidden_size)
    pos = torch.arange(7)
    ours = attn(x, pos, None)
    q, k, v = attn.qkv_proj(x).split(
        [attn.nh * attn.hd, attn.nkv * attn.hd, attn.nkv * attn.hd], -1
    )
    q = attn.rotary(q.unflatten(-1, (attn.nh, attn.hd)), pos).transpose(1, 2)
    k = attn.rotary(k.unflatten(-1, (attn.nkv, attn.hd)), pos).transpose(1, 2)
    v = v.unflatten(-1, (attn.nkv, attn.hd)).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    ref = attn.o_proj(ref.transpose(1, 2).flatten(-2))
    assert torch.allclose(ours, ref, atol=1e-5)


def test_chain_cache_equals_step_by_step_drafting(cfg):
    """Drafting from every row at once (ChainCache) gives what a server computes step by step:
    for row t, step j attends to the extend pass up to t and to its own chain."""
    torch.manual_seed(0)
    draft = build_draft(cfg, release="sglang==0.5.10")
    ids, aux = _inputs(cfg, 3 * cfg.hidden_size, t=8)
    cache = ChainCache(1)
    l0, h0 = draft(ids, aux, cache=cache)
    t1 = l0.argmax(-1)
    l1, h1 = draft(t1, h0, torch.arange(8) + 1, cache, own_hidden=True)
    t2 = l1.argmax(-1)
    l2, _ = draft(t2, h1, torch.arange(8) + 2, cache, own_hidden=True)
    fc = draft.combine(aux, own=False)
    for t in (0, 3, 7):
        seq = torch.cat([ids[: t + 1], t1[t : t + 1], t2[t : t + 1]])
        hid = torch.cat([fc[: t + 1], h0[t : t + 1], h1[t : t + 1]])
        ref, _ = draft(seq, hid)  # widths are all H: SGLang's gate skips fc, as on a server
        assert torch.allclose(ref[t + 1], l1[t], atol=1e-5)
        assert torch.allclose(ref[t + 2], l2[t], atol=1e-5)


def test_full_scale_kimi_trace_on_meta_device():
    """Kimi-K2.5 sizes (H 7168, vocab 163840): shapes for every hook, no tensor memory;
    21504 → fc → 7168 with capture on, 7168 and fc bypassed with it off (the incident)."""
    kimi = parse_draft_config(
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "hidden_size": 7168,
            "num_attention_heads": 64,
            "num_key_value_heads": 64,
            "head_dim": 112,
            "intermediate_size": 18432,
            "vocab_size": 163840,
            "draft_vocab_size": 32000,
        }
    )
    with torch.device("meta"):
        draft = build_draft(kimi, release="sglang==0.5.10")
        ids = torch.zeros(4, dtype=torch.long)
        _, on = draft.run_with_cache(ids, torch.zeros(4, 21504))
        assert draft.fc_applied
        _, off = draft.run_with_cache(ids, torch.zeros(4, 7168))
        assert not draft.fc_applied
    assert draft.model.fc.weight.is_meta
    assert on["fc_in"].shape == (4, 21504) and on["fc_out"].shape == (4, 7168)
    assert on["attn_in"].shape == (4, 14336)
    assert on["logits"].shape == (4, 32000)
    assert "fc_out" not in off and off["attn_in"].shape == (4, 14336)


class _FakeTarget(torch.nn.Module):
    """A stand-in target with an embedding and head of the draft's vocab (for from_target)."""

    def __init__(self, cfg):
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.embed = torch.nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.head = torch.nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        with torch.no_grad():
            self.embed.weight.copy_(torch.randn(self.embed.weight.shape, generator=g))

    def get_input_embeddings(self):
        return self.embed

    def get_output_embeddings(self):
        return self.head


def test_healthy_load_copies_every_tensor(cfg, sample_dir):
    """sglang==0.5.12 loads the speculators layout whole (legacy map, 0.5.12
    llama_eagle3.py:306): q/k/v and gate/up land at their shard rows; the embedding is the
    target's (the EAGLE worker's `set_embed`, 0.4.6.post1 `models/llama.py:624-634`)."""
    ck = open_checkpoint(sample_dir)
    target = _FakeTarget(cfg)
    draft = build_draft(cfg, release="sglang==0.5.12")
    load_state(draft, ck, simulate_load(ck, cfg, "sglang==0.5.12"), target=target)
    layer = draft.model.layers[0]
    qkv = torch.cat([ck.read_tensor(f"layers.0.self_attn.{n}_proj.weight") for n in "qkv"]).float()
    assert torch.equal(layer.self_attn.qkv_proj.weight, qkv)
    gate_up = torch.cat([ck.read_tensor(f"layers.0.mlp.{n}_proj.weight") for n in ("gate", "up")])
    assert torch.equal(layer.mlp.gate_up_proj.weight, gate_up.float())
    assert torch.equal(draft.lm_head.weight, ck.read_tensor("lm_head.weight").float())
    assert torch.equal(draft.model.embed_tokens.weight, target.embed.weight)


def test_sglang_0_5_10_leaves_the_decoder_layer_at_init(cfg, sample_dir):
    """SGLang 0.4.9–0.5.11 silently drop `layers.0.*` (0.5.10 llama_eagle3.py:243-256): the
    layer keeps `torch.empty` weights (stand-in: seeded, repeatable) and RMSNorm ones."""
    ck = open_checkpoint(sample_dir)
    report = simulate_load(ck, cfg, "sglang==0.5.10")
    a, b = (build_draft(cfg, release="sglang==0.5.10") for _ in range(2))
    torch.manual_seed(1)
    load_state(a, ck, report, target=_FakeTarget(cfg))
    torch.manual_seed(2)
    load_state(b, ck, report, target=_FakeTarget(cfg))
    mid = a.model.midlayer
    assert torch.equal(mid.hidden_norm.weight, torch.ones(cfg.hidden_size))
    q = ck.read_tensor("layers.0.self_attn.q_proj.weight").float()
    assert not torch.allclose(mid.self_attn.qkv_proj.weight[: q.shape[0]], q)
    assert torch.equal(mid.self_attn.qkv_proj.weight, b.model.midlayer.self_attn.qkv_proj.weight)
    assert torch.equal(a.model.fc.weight, ck.read_tensor("fc.weight").float())


def test_from_target_needs_the_target(cfg, sample_dir):
    ck = open_checkpoint(sample_dir)
    draft = build_draft(cfg, release="sglang==0.5.10")
    with pytest.raises(KitError, match="pass the target"):
        load_state(draft, ck, simulate_load(ck, cfg, "sglang==0.5.10"))
