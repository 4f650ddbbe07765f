"""vLLM's aux-capture rules, one test per row, each citing its release and source line."""

from __future__ import annotations

import pytest
from capture_configs import KIMI, codes, flat_draft, sample_draft, target

from kit.checkpoint.config import (
    load_draft_config,
    load_target_config,
)
from kit.findings import Severity
from kit.tracing.capture import Feed, simulate_capture

# ---- vLLM ----------------------------------------------------------------------------------


def test_vllm_ignores_ids_up_to_0110_reads_top_level_from_0112():
    """vllm 0.9.2–0.11.0 never read the draft's ids; from 0.11.1 (pinned here at 0.11.2) the
    top-level list is read verbatim as "state after k layers" (0.11.1
    v1/worker/gpu_model_runner.py:3395-3420; vllm PR #25961)."""
    t, d = target(n=32, hidden=32), sample_draft([3, 10, 20])
    old = simulate_capture(t, d, "vllm==0.11.0")
    assert old.captured_layers == [2, 16, 29] and "AUX_IDS_IGNORED" in codes(old)
    new = simulate_capture(t, d, "vllm==0.11.2")
    assert new.config_layer_ids == [3, 10, 20] == new.captured_layers == new.trained_layers
    assert not new.findings


def test_vllm_reads_eagle_config_ids_verbatim_from_024():
    """eagle_config ids: absent in 0.18.0, read verbatim from 0.24.0 (0.24.0
    v1/worker/gpu_model_runner.py:5353-5381), so a
    SpecForge list (output of layer k) is captured one layer early (vllm PR #43671)."""
    d = flat_draft(ids=[1, 15, 28])
    ignored = simulate_capture(target(), d, "vllm==0.18.0")
    assert ignored.captured_layers == [2, 16, 29] == ignored.trained_layers
    read = simulate_capture(target(), d, "vllm==0.24.0")
    assert read.captured_layers == [1, 15, 28] and read.trained_layers == [2, 16, 29]
    assert codes(read)["AUX_LAYER_OFFSET"].severity == Severity.ERROR


def test_vllm_always_applies_fc():
    """No width gate in vLLM: the proposer always calls combine_hidden_states (0.9.2
    v1/spec_decode/eagle.py:100-104; 0.33 llm_base_proposer.py:549). A target that hands over
    one Ht-wide state therefore fails in fc instead of bypassing it."""
    t, d = target(), flat_draft()
    r = simulate_capture(t, d, "vllm==0.33.0", aux_capture=False)
    assert r.fc_applied and r.hidden_width == 4096 and r.feeds == Feed.CRASH
    assert "llm_base_proposer.py:549" in r.sources["fc_gate"]
    assert "FC_BYPASSED" not in codes(r) and "AUX_WIDTH_MISMATCH" in codes(r)


def test_vllm_use_aux_hidden_state_false_skips_fc_from_012():
    """combine_hidden_states returns its input when eagle_config.use_aux_hidden_state is False
    (0.12.0 model_executor/models/llama_eagle3.py:341); 0.11.0 ignores the flag."""
    d = flat_draft(use_aux=False)
    assert simulate_capture(target(), d, "vllm==0.11.0").fc_applied
    r = simulate_capture(target(), d, "vllm==0.12.0")
    assert not r.fc_applied and r.feeds == Feed.FINAL_HIDDEN_POST_NORM and "FC_BYPASSED" in codes(r)


def test_vllm_state_n_is_capturable_from_018():
    """0.9.2 models/llama.py:387-391 appends before layer idx (ids < n); ≥0.18 after every
    layer, so id n (the final pre-norm state, speculators' trainer allows it) is captured."""
    t, d = target(n=32, hidden=32), sample_draft([2, 16, 32])
    assert simulate_capture(t, d, "vllm==0.18.0").captured_layers == [2, 16, 32]
    old = simulate_capture(t, d, "vllm==0.14.0")
    assert old.captured_layers == [2, 16] and old.feeds == Feed.CRASH


@pytest.mark.parametrize(
    ("arch", "model_type", "first", "before"),
    [
        ("Qwen3ForCausalLM", "qwen3", "vllm==0.10.1.1", "vllm==0.10.0"),
        ("Qwen3MoeForCausalLM", "qwen3_moe", "vllm==0.11.2", "vllm==0.11.0"),
        ("KimiK25ForConditionalGeneration", "kimi_k25", "vllm==0.18.0", "vllm==0.14.0"),
    ],
)
def test_vllm_supported_targets_per_release(arch, model_type, first, before):
    """EAGLE-3 capable target modules per release (`SupportsEagle3`: qwen3 0.10.1.1, qwen3_moe
    0.11.1 (0.11.1 models/qwen3_moe.py:630,713), kimi_k25 0.18) plus the model_type allow-list up
    to 0.14 (docs/engines.md#vllm-aux-capture-and-the-fc-gate)."""
    t = (
        load_target_config(KIMI / "target")
        if arch.startswith("Kimi")
        else target(arch=arch, model_type=model_type)
    )
    d = flat_draft(hidden=t.hidden_size)
    assert simulate_capture(t, d, first).startup_error is None
    r = simulate_capture(t, d, before)
    assert r.startup_error and "AUX_CAPTURE_UNSUPPORTED" in codes(r)


def test_vllm_0_10_0_allows_llama_targets_only():
    """0.10.0 vllm/config.py:3027-3031 raises "Eagle3 is only supported for Llama models" for any
    other text model_type; qwen joins the list in 0.10.1.1 (vllm/config/__init__.py:2347-2353)."""
    d = flat_draft(hidden=4096)
    qwen = target(arch="Qwen3ForCausalLM", model_type="qwen3")
    refused = simulate_capture(qwen, d, "vllm==0.10.0")
    assert "'qwen3'" in refused.startup_error and "allowed: llama)" in refused.startup_error
    assert simulate_capture(qwen, d, "vllm==0.10.1.1").startup_error is None


def test_vllm_allow_list_reads_the_text_config_model_type():
    """0.11.0–0.14.0 match eagle3 targets on hf_text_config.model_type ("deepseek_v3" for
    Kimi-K2.5, not "kimi_k25"): 0.11.1 vllm/config/speculative.py:621-631."""
    r = simulate_capture(
        load_target_config(KIMI / "target"), load_draft_config(KIMI / "draft"), "vllm==0.11.0"
    )
    assert "'deepseek_v3'" in r.startup_error
