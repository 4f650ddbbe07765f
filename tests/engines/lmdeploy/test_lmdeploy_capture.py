"""LMDeploy's aux-capture rules and the draft module built from its parameters, each citing the
release and the file:line inside the wheel's `lmdeploy/pytorch/`."""

from __future__ import annotations

import pytest
from capture_configs import KIMI, codes, flat_draft, sample_draft, target

from kit.checkpoint.config import load_draft_config, load_target_config
from kit.engines.lmdeploy.capture import AUX_FIX, IDS_FIX
from kit.findings import Severity
from kit.tracing.capture import Feed, simulate_capture
from kit.tracing.shapes import trace_draft

READ = ("lmdeploy==0.11.0", "lmdeploy==0.15.0", "lmdeploy==0.18.0")


@pytest.mark.parametrize("engine", READ)
def test_llama_target_captures_its_own_layers_whatever_the_draft_says(engine):
    """configurations/llama.py:26-28 sets (2, n // 2, n - 3) on a LlamaForCausalLM target and
    models/llama.py:260-261 (0.11.0; :266-267 later) appends the input of those layers; no
    release reads the draft's ids. Trained on them, nothing is wrong; trained elsewhere, the
    target captures other states than the draft learnt from."""
    same = simulate_capture(target(n=32, hidden=32), sample_draft([2, 16, 29]), engine)
    assert same.captured_layers == [2, 16, 29] and same.config_layer_ids is None
    assert same.fc_applied and same.feeds == Feed.AUX_CONCAT and same.hidden_width == 96
    assert codes(same)["AUX_IDS_IGNORED"].severity == Severity.INFO
    other = simulate_capture(target(n=32, hidden=32), sample_draft([3, 10, 20]), engine)
    assert other.captured_layers == [2, 16, 29] and other.trained_layers == [3, 10, 20]
    ignored = codes(other)["AUX_IDS_IGNORED"]
    assert ignored.severity == Severity.ERROR and ignored.fix == IDS_FIX


def test_specforge_ids_are_read_as_output_of_layer_and_match_the_default():
    """A SpecForge draft's eagle_config ids [1, 15, 28] are outputs of those layers = states
    after [2, 16, 29]: what LMDeploy captures for 32 layers anyway."""
    r = simulate_capture(target(), flat_draft(ids=[1, 15, 28]), "lmdeploy==0.18.0")
    assert r.captured_layers == r.trained_layers == [2, 16, 29]
    assert max(f.severity for f in r.findings) == Severity.INFO


@pytest.mark.parametrize("arch", ["Qwen3ForCausalLM", "MistralForCausalLM"])
def test_other_targets_start_but_capture_nothing(arch):
    """Only Llama's builder (architectures[0] == 'LlamaForCausalLM', configurations/llama.py:11)
    sets aux layers: any other target hands over its final normed state (models/llama.py:277,
    spec_decode/base.py:145 in 0.18.0). Same width: the width gate skips fc (llama_eagle3.py:
    125-127) and nothing fails; another width: fc gets Ht inputs for 3·Ht and the first batch
    fails."""
    same = simulate_capture(target(arch=arch), flat_draft(), "lmdeploy==0.15.0")
    assert not same.aux_capture and same.startup_error is None
    assert not same.fc_applied and same.feeds == Feed.FINAL_HIDDEN_POST_NORM
    bypassed = codes(same)["FC_BYPASSED"]
    assert bypassed.root_cause and bypassed.fix == AUX_FIX
    assert arch in " ".join(bypassed.evidence)
    wider = simulate_capture(target(arch=arch, hidden=5120), flat_draft(), "lmdeploy==0.18.0")
    assert wider.fc_applied and wider.feeds == Feed.CRASH and "AUX_WIDTH_MISMATCH" in codes(wider)


def test_kimi_k25_target_needs_0_18():
    """KimiK25ForConditionalGeneration is no LMDeploy architecture before 0.18.0 (module_map.py
    :119-120 in 0.18.0); from 0.18.0 its builder (configurations/kimi_k25.py:12,25 ->
    kimi_k2.py:82-83) captures (2, n // 2, n - 3) of the 61-layer text model."""
    t, d = load_target_config(KIMI / "target"), load_draft_config(KIMI / "draft")
    old = simulate_capture(t, d, "lmdeploy==0.15.0")
    assert old.feeds == Feed.CRASH and "Can not found rewrite" in old.startup_error
    assert codes(old)["AUX_CAPTURE_UNSUPPORTED"].source.endswith("module_map.py:119-120")
    new = simulate_capture(t, d, "lmdeploy==0.18.0")
    assert new.captured_layers == [2, 30, 58] and new.fc_applied


def test_small_target_captures_fewer_distinct_states():
    """n = 4: (2, 2, 1) names two distinct layers, `idx in aux_hidden_state_layers` captures each
    once: 2·Ht reaches an fc built for 3·Ht."""
    r = simulate_capture(target(n=4, hidden=32), sample_draft([2, 2, 1]), "lmdeploy==0.18.0")
    assert r.captured_layers == [1, 2] and r.hidden_width == 64 and r.feeds == Feed.CRASH


def test_trace_runs_lmdeploy_s_module_on_the_meta_device():
    """The reference module built from LMDeploy's parameters (one `model.midlayer`, unpadded
    head) traces a full-size Kimi-K2.5 draft: fc 3·7168 -> 7168, attention over 2H."""
    t, d = load_target_config(KIMI / "target"), load_draft_config(KIMI / "draft")
    r = trace_draft(t, d, "lmdeploy==0.18.0")
    shapes = {h.name: h.shape for h in r.hooks}
    assert r.fc_applied and r.error is None
    assert shapes["fc_in"][-1] == 3 * 7168 and shapes["attn_in"][-1] == 2 * 7168
    assert shapes["logits"][-1] == d.draft_vocab_size
    bypassed = trace_draft(t, d, "lmdeploy==0.18.0", aux_capture=False)
    assert bypassed.bypassed_step == "fc" and not bypassed.fc_applied
