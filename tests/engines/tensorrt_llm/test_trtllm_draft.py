"""The reference draft module as TensorRT-LLM 1.2.0rc2 builds and runs it (`kit.tracing.draft`, built
from `kit.engines.tensorrt_llm.engine_params`), on real tensors and a real checkpoint.

SPEC:171-177 (midlayer ModuleList), SPEC:233-249 (later layers add the previous residual and run
a full Eagle3DecoderLayer, SPEC:109-140), SPEC:325-340 (fc iff the width is not the draft's).
"""

from __future__ import annotations

import pytest
import torch
from tiny_layouts import FLAT, LAYER, write

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.load.replay import engine_params, simulate_load
from kit.tracing.draft import build_draft, load_state

torch.set_num_threads(1)
TRT = "tensorrt_llm==1.2.0rc2"


def two_layer_draft(folder):
    """A two-layer draft in TensorRT-LLM's own form, written as a real safetensors file."""
    keys = {f"midlayer.{i}.{k}": s for i in range(2) for k, s in LAYER.items()}
    keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    keys |= {"d2t": (16,)}
    config = {**FLAT, "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2}
    return write(folder, keys, config)


class Target(torch.nn.Module):
    """A stand-in target with an embedding and head of the draft's sizes (for from_target)."""

    def __init__(self, vocab: int, hidden: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def get_input_embeddings(self):
        return self.embed

    def get_output_embeddings(self):
        return self.head


@pytest.fixture
def loaded(tmp_path):
    folder = two_layer_draft(tmp_path / "d")
    ck, cfg = open_checkpoint(folder), load_draft_config(folder)
    draft = build_draft(cfg, release=TRT)
    load_state(draft, ck, simulate_load(ck, cfg, TRT), target=Target(64, 32))
    return draft, ck, cfg


def test_module_names_are_the_engines(loaded):
    """Every engine parameter is a module parameter of the same name (the midlayer list)."""
    draft, _, cfg = loaded
    names = {n for n, _ in draft.named_parameters()}
    want = {p.name for p in engine_params(cfg, TRT)} - {"model.d2t"}
    assert want <= names
    assert isinstance(draft.model.midlayer, torch.nn.ModuleList) and len(draft.model.midlayer) == 2


def test_checkpoint_tensors_land_in_their_shards(loaded):
    """Stacked q/k/v: k_proj fills rows 32..48 of the fused qkv (the replay's shard 'k')."""
    draft, ck, _ = loaded
    qkv = dict(draft.named_parameters())["model.midlayer.1.self_attn.qkv_proj.weight"]
    k = ck.read_tensor("midlayer.1.self_attn.k_proj.weight").to(qkv.dtype)
    assert torch.equal(qkv[32:48], k)
    assert torch.equal(draft.d2t, ck.read_tensor("d2t"))


def test_every_layer_reads_embeds_and_hidden(loaded):
    """SPEC:233-249: layer 1 attends over [input_layernorm(embeds) ‖ hidden_norm(h + residual)],
    2H wide (SGLang's and vLLM's later layers read H), and its input_layernorm, applied to the
    embeddings, changes the output."""
    draft, _, cfg = loaded
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (5,), generator=g)
    aux = torch.randn(5, 96, generator=g).to(torch.bfloat16)
    draft = draft.to(torch.bfloat16)
    logits, cache = draft.run_with_cache(ids, aux)
    assert cache["layers.1.attn_in"].shape == (5, 64) and draft.fc_applied
    with torch.no_grad():
        draft.model.midlayer[1].input_layernorm.weight.mul_(3.0)
    changed, _ = draft.run_with_cache(ids, aux)
    assert not torch.equal(logits, changed)


def test_fc_is_skipped_on_a_draft_wide_state(loaded):
    """SPEC:337-338: apply_eagle3_fc runs fc only when the width differs from hidden_size."""
    draft, _, cfg = loaded
    ids = torch.zeros(3, dtype=torch.long)
    draft.run_with_cache(ids, torch.randn(3, cfg.hidden_size))
    assert draft.fc_applied is False
