"""The bundled target + draft pair run as LMDeploy builds, loads and counts it (real torch modules,
CPU): the draft in LMDeploy's form, its absolute token map, and how its metrics count the verify
step that reaches a request's stop token."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.load.replay import simulate_load
from kit.load.rewrite import plan_fix, write_fixed
from kit.offline_acceptance import evaluate, load_prompts
from kit.tracing.draft import build_draft, load_state
from tests.conftest import DRAFT, PROMPTS, TARGET

ENGINE = "lmdeploy==0.18.0"


@pytest.fixture(scope="module")
def few():
    return load_prompts(PROMPTS)[:24]


@pytest.fixture(scope="module")
def lmdeploy_draft(tmp_path_factory):
    """The bundled draft as `fix --for lmdeploy==0.18.0` writes it."""
    ck = open_checkpoint(DRAFT)
    out = tmp_path_factory.mktemp("lmd") / "draft"
    return write_fixed(ck, plan_fix(ck, load_draft_config(DRAFT), ENGINE), out=out)


def test_stop_counting_credits_drafts_verified_past_the_stop(target, few):
    """LMDeploy counts `(next_token_ids > -1).sum() - 1` on the verify step's output tokens
    (0.11.0 pytorch/engine/engine.py:923; 0.15.0 engine_loop.py:372; 0.18.0 :409), which the stop
    check never trims (strategies/ar_spec/sequence.py:93-94 trims the sequence only): drafts
    the target verified past the stop token count, as in vLLM, unlike SGLang 0.5.10."""
    common = {"prompts": few, "target": target, "progress": False}
    lmd = evaluate(TARGET, DRAFT, count_as=ENGINE, **common).result
    sgl = evaluate(TARGET, DRAFT, count_as="sglang==0.5.10", **common).result
    vllm = evaluate(TARGET, DRAFT, count_as="vllm==0.11.2", **common).result
    assert lmd.verify_steps == sgl.verify_steps and lmd.emitted == sgl.emitted
    assert lmd.accepted > sgl.accepted and lmd.accepted == vllm.accepted
    assert "engine_loop.py:372, 0.18.0 :409" in lmd.settings.counting


def test_fixed_draft_runs_as_the_trained_function(target, few, lmdeploy_draft):
    """Loaded by LMDeploy in its own form, the bundled draft computes what vLLM's module does
    (same trained function: one layer, fc on 3 aux states, its own embedding, pre-norm state
    fed back), drafts included: the counts agree to the last token."""
    common = {"prompts": few, "target": target, "progress": False, "count_as": ENGINE}
    lmd = evaluate(TARGET, lmdeploy_draft, ENGINE, **common).result
    vllm = evaluate(TARGET, DRAFT, "vllm==0.11.2", **common).result
    assert lmd.wiring.fc_applied is True and list(lmd.wiring.layers) == [2, 4, 5]
    assert (lmd.accepted, lmd.verify_steps) == (vllm.accepted, vllm.verify_steps)
    assert lmd.accept_len > 3.0


def test_missing_d2t_sends_every_drafted_token_to_id_0(target, few, lmdeploy_draft, tmp_path):
    """Without d2t, draft_id_to_target_id stays the zeros it was built with (llama_eagle3.py:
    183-184 in 0.18.0) and the proposer indexes it (proposers/eagle3.py:137): every drafted
    token is target id 0, so acceptance falls to the floor."""
    folder = tmp_path / "no_d2t"
    folder.mkdir()
    tensors = load_file(lmdeploy_draft / "model.safetensors")
    del tensors["d2t"]
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text((lmdeploy_draft / "config.json").read_text())
    row = evaluate(TARGET, folder, ENGINE, prompts=few, target=target, progress=False)
    assert row.result.accept_len < 1.1
    assert any(f.code == "D2T_MISSING" for f in row.findings)

    cfg, ck = load_draft_config(folder), open_checkpoint(folder)
    draft = build_draft(cfg, "lmdeploy", ENGINE)
    load_state(draft, ck, simulate_load(ck, cfg, ENGINE), target=target)
    assert torch.equal(draft.to_target_ids(torch.arange(cfg.draft_vocab_size)),
                       torch.zeros(cfg.draft_vocab_size, dtype=torch.long))  # fmt: skip


def test_loaded_token_map_holds_absolute_target_ids(lmdeploy_draft, target):
    """d2t offsets + arange (llama_eagle3.py:291-297 in 0.18.0): the module's map is the absolute
    id, and a drafted id maps where the trainer's offsets say."""
    cfg, ck = load_draft_config(lmdeploy_draft), open_checkpoint(lmdeploy_draft)
    draft = build_draft(cfg, "lmdeploy", ENGINE)
    load_state(draft, ck, simulate_load(ck, cfg, ENGINE), target=target)
    d2t = ck.read_tensor("d2t")
    ids = torch.arange(cfg.draft_vocab_size)
    assert torch.equal(draft.draft_id_to_target_id, ids + d2t)
    assert torch.equal(draft.to_target_ids(ids), ids + d2t)
