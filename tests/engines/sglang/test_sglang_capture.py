"""SGLang's aux-capture rules, one test per row, each citing its release and source line."""

from __future__ import annotations

import dataclasses

import pytest
from capture_configs import KIMI, codes, flat_draft, sample_draft, target

from kit.checkpoint.config import (
    AFTER_K_LAYERS,
    load_draft_config,
    load_target_config,
)
from kit.engines import parse_engine, pick
from kit.engines.aux_ids import default_layers
from kit.engines.sglang.capture import MISSING_HOOK
from kit.findings import Severity
from kit.tracing.capture import Feed, simulate_capture

# ---- SGLang --------------------------------------------------------------------------------


def test_sglang_default_ids_are_inputs_of_layers_2_half_and_minus_3():
    """sglang 0.4.10 models/llama.py:743 (defaults [2, L//2, L−3]) and :330-332 (captured as
    the input of layer i, i.e. hidden_states + residual before the layer runs)."""
    r = simulate_capture(target(n=32), flat_draft(), "sglang==0.4.10")
    assert r.engine_layer_ids == [2, 16, 29] == r.captured_layers
    assert r.config_layer_ids is None and r.hidden_width == 3 * 4096
    assert r.fc_applied and r.feeds == Feed.AUX_CONCAT
    # no ids in the config: the default is named, as information (it is the trainers' default)
    assert [(f.code, f.severity.name) for f in r.findings] == [("AUX_IDS_DEFAULT", "INFO")]
    r61 = simulate_capture(target(n=61, hidden=7168), flat_draft(hidden=7168), "sglang==0.4.10")
    assert r61.captured_layers == [2, 30, 58] == default_layers(61)


def test_sglang_up_to_048_does_not_read_ids():
    """sglang 0.4.4.post2–0.4.8 never read eagle_config ids: 0.4.6.post1
    model_executor/model_runner.py:227-229 passes none
    (docs/engines.md#sglang-aux-capture-and-the-fc-gate)."""
    draft = flat_draft(ids=[3, 10, 20])
    r = simulate_capture(target(), draft, "sglang==0.4.8")
    assert r.config_layer_ids is None and r.captured_layers == [2, 16, 29]
    f = codes(r)["AUX_IDS_IGNORED"]
    assert f.severity == Severity.ERROR and r.trained_layers == [4, 11, 21]
    newer = simulate_capture(target(), draft, "sglang==0.4.9")
    assert newer.config_layer_ids == [3, 10, 20] and newer.captured_layers == [4, 11, 21]


def test_sglang_explicit_ids_plus_one():
    """sglang ≥0.4.9: set_eagle3_layers_to_capture uses ids+1 (0.4.10 models/llama.py:743,
    0.5.23 models/llama.py:929); SpecForge's [1, n//2-1, n-4] = the defaults."""
    r = simulate_capture(target(), flat_draft(ids=[1, 15, 28]), "sglang==0.5.23")
    assert r.config_layer_ids == [1, 15, 28]
    assert r.engine_layer_ids == [2, 16, 29] == r.captured_layers == r.trained_layers
    assert "models/llama.py:929" in r.sources["id_rule"] and not r.findings


def test_sglang_ignores_top_level_ids():
    """Only eagle_config is read for capture (0.4.10 model_executor/model_runner.py:340-361;
    0.5.23 model_runner_components/spec_aux_hidden_state.py:185-196): a flat config's top-level
    (vLLM-style, states after k layers) ids are ignored and the defaults captured."""
    draft = flat_draft(hidden=32, eagle_aux_hidden_state_layer_ids=[3, 10, 20])
    r = simulate_capture(target(n=32, hidden=32), draft, "sglang==0.5.23")
    assert r.captured_layers == [2, 16, 29] and r.trained_layers == [3, 10, 20]
    f = codes(r)["AUX_IDS_IGNORED"]
    assert f.severity == Severity.ERROR and "spec_aux_hidden_state.py:185-196" in f.source


def test_sglang_traces_a_speculators_draft_as_rewritten():
    """SGLang refuses a speculators config as saved; the capture is traced as SGLang reads the
    config once rewritten in its form (ids moved to eagle_config, minus one): the draft's own
    training layers are captured, and the trace says it assumed the rewrite."""
    r = simulate_capture(target(n=32, hidden=32), sample_draft([3, 10, 20]), "sglang==0.5.23")
    assert r.config_layer_ids == [2, 9, 19]
    assert r.captured_layers == [3, 10, 20] == r.trained_layers
    assert set(codes(r)) == {"TRACED_AS_REWRITTEN"}
    assert codes(r)["TRACED_AS_REWRITTEN"].severity == Severity.INFO


def test_deepseek_plus_one_always_until_0512():
    """DeepSeek-V2/V3 targets 0.5.5–0.5.12: ids+1 (0.5.10 models/deepseek_v2.py:2295)."""
    t = target(n=61, hidden=7168, arch="DeepseekV3ForCausalLM", model_type="deepseek_v3")
    r = simulate_capture(t, flat_draft(hidden=7168, ids=[2, 30, 58]), "sglang==0.5.12")
    assert r.captured_layers == [3, 31, 59]


def test_deepseek_plus_one_only_if_first_id_is_1_from_0513():
    """sglang 0.5.13 models/deepseek_v2.py:2752 / 0.5.23 :3466-3473 (PR #25454): +1 only if
    ids[0] == 1, else ids as-is."""
    t = target(n=61, hidden=7168, arch="DeepseekV3ForCausalLM", model_type="deepseek_v3")
    one = simulate_capture(t, flat_draft(hidden=7168, ids=[1, 29, 57]), "sglang==0.5.13")
    assert one.captured_layers == [2, 30, 58]
    two = simulate_capture(t, flat_draft(hidden=7168, ids=[2, 30, 58]), "sglang==0.5.23")
    assert two.captured_layers == [2, 30, 58]
    assert "deepseek_v2.py:3466-3473" in two.sources["id_rule"]


def test_aux_layer_offset_when_ids_are_read_in_another_convention():
    """kimi-k2.5-eagle3-mla wrote "capture-before" ids [2, 30, 58] in eagle_config; sglang
    0.5.12 (deepseek_v2.py ids+1) reads them one layer late, 0.5.13 (PR #25454) as meant;
    a SpecForge-convention list (output of layer) is read one early by 0.5.13's as-is branch."""
    t = target(n=61, hidden=7168, arch="KimiK25ForConditionalGeneration", model_type="kimi_k25")
    before = dataclasses.replace(
        flat_draft(hidden=7168, ids=[2, 30, 58]), aux_layer_convention=AFTER_K_LAYERS
    )
    late = simulate_capture(t, before, "sglang==0.5.12")
    f = codes(late)["AUX_LAYER_OFFSET"]
    assert late.captured_layers == [3, 31, 59] and late.trained_layers == [2, 30, 58]
    assert f.severity == Severity.ERROR and f.data["captured"] == [3, 31, 59]
    assert "AUX_LAYER_OFFSET" not in codes(simulate_capture(t, before, "sglang==0.5.13"))
    specforge = flat_draft(hidden=7168, ids=[2, 30, 58])  # eagle_config: output of layer k
    early = simulate_capture(t, specforge, "sglang==0.5.13")
    assert early.trained_layers == [3, 31, 59] and early.captured_layers == [2, 30, 58]
    assert "AUX_LAYER_OFFSET" in codes(early)


def test_gpt_oss_ids_as_is_when_max_is_n_from_0520():
    """sglang 0.5.23 models/gpt_oss.py:1347-1352: ids as-is if max(ids) == L, else ids+1
    (nvidia gpt-oss-120b-Eagle3-v3 writes [24, 30, 36] for 36 layers)."""
    t = target(n=36, hidden=2880, arch="GptOssForCausalLM", model_type="gpt_oss")
    d = flat_draft(hidden=2880, ids=[24, 30, 36])
    r = simulate_capture(t, d, "sglang==0.5.20")
    assert r.captured_layers == [24, 30, 36] and r.feeds == Feed.AUX_CONCAT
    old = simulate_capture(t, d, "sglang==0.5.19")  # ids+1: 37 is past the last layer
    assert old.engine_layer_ids == [25, 31, 37] and old.captured_layers == [25, 31]
    assert old.feeds == Feed.CRASH and "AUX_WIDTH_MISMATCH" in codes(old)


def test_ids_past_the_last_layer_are_never_captured():
    """The decoder loop appends before layer i, so i ≥ L is never captured (0.4.10
    models/llama.py:330-332); two states reach an fc built for three: a shape crash."""
    r = simulate_capture(target(n=32), flat_draft(ids=[1, 15, 31]), "sglang==0.5.10")
    assert r.engine_layer_ids == [2, 16, 32] and r.captured_layers == [2, 16]
    assert r.hidden_width == 2 * 4096 and r.fc_applied and r.feeds == Feed.CRASH
    f = codes(r)["AUX_WIDTH_MISMATCH"]
    assert f.severity == Severity.CRITICAL and any("[32]" in e for e in f.evidence)


def test_use_aux_hidden_state_false_switches_capture_off_from_058():
    """eagle_config.use_aux_hidden_state (default True) is read from 0.5.8 (0.5.10
    model_executor/model_runner.py:355-379); with it off the logits processor stores the
    post-final-norm hidden (0.4.6.post1 layers/logits_processor.py:323-345), and with
    Ht == H the gate (0.5.10 llama_eagle3.py:176) skips fc."""
    d = flat_draft(use_aux=False)
    old = simulate_capture(target(), d, "sglang==0.5.7")
    assert old.aux_capture and old.hidden_width == 3 * 4096 and old.fc_applied
    new = simulate_capture(target(), d, "sglang==0.5.8")
    assert not new.aux_capture and new.captured_layers == []
    assert new.hidden_width == 4096 and not new.fc_applied
    assert new.feeds == Feed.FINAL_HIDDEN_POST_NORM
    f = codes(new)["FC_BYPASSED"]
    assert f.root_cause and f.severity == Severity.CRITICAL


def test_aux_off_with_a_wider_target_crashes_in_fc():
    """With Ht != H the gate is true and fc (3·Ht inputs) gets one Ht-wide state:
    0.5.10 models/llama_eagle3.py:176 (the gate) and :138-142 (fc)."""
    d = flat_draft(hidden=2048, target_hidden=4096, use_aux=False)
    r = simulate_capture(target(hidden=4096), d, "sglang==0.5.10")
    assert r.hidden_width == 4096 and r.fc_applied and r.fc_in_features == 3 * 4096
    assert r.feeds == Feed.CRASH and "AUX_WIDTH_MISMATCH" in codes(r)


def test_cuda_graph_replays_default_layers_04_9_to_0_5_10():
    """0.4.9–0.5.10: CudaGraphRunner re-sets the layers with no ids before capture (0.5.10
    model_executor/cuda_graph_runner.py:644-653) and the custom ids are set after
    (model_runner.py:655 then :668); fixed in 0.5.11 (model_runner.py:762-764, PR #22836)."""
    d = flat_draft(ids=[3, 10, 20])
    r = simulate_capture(target(), d, "sglang==0.5.10", cuda_graph=True)
    assert r.captured_layers == [4, 11, 21] and r.cuda_graph_layers == [2, 16, 29]
    f = codes(r)["AUX_LAYERS_DIFFER_UNDER_CUDA_GRAPH"]
    assert f.severity == Severity.ERROR and "cuda_graph_runner.py:644-653" in f.source
    assert (
        simulate_capture(target(), d, "sglang==0.5.11", cuda_graph=True).cuda_graph_layers is None
    )
    eager = simulate_capture(target(), d, "sglang==0.5.10", cuda_graph=False)
    assert eager.cuda_graph_layers is None
    same = simulate_capture(target(), flat_draft(ids=[1, 15, 28]), "sglang==0.4.9", cuda_graph=True)
    assert same.cuda_graph_layers == same.captured_layers
    assert "AUX_LAYERS_DIFFER_UNDER_CUDA_GRAPH" not in codes(same)


@pytest.mark.parametrize(
    ("cls", "missing", "present"),
    [
        ("DeepseekV3ForCausalLM", "sglang==0.5.4", "sglang==0.5.5"),
        ("KimiK25ForConditionalGeneration", "sglang==0.5.9", "sglang==0.5.10"),
    ],
)
def test_target_class_without_set_eagle3_layers_to_capture(cls, missing, present):
    """DeepSeek gained the hook in 0.5.5 (deepseek_v2.py:3822), Kimi-K2.5 in 0.5.10
    (kimi_k25.py:841-850); before, the runner's plain call raises AttributeError at start-up
    (0.5.10 model_executor/model_runner.py:667-670)."""
    t = target(n=61, hidden=7168, arch=cls, model_type="deepseek_v3")
    d = flat_draft(hidden=7168)
    r = simulate_capture(t, d, missing)
    assert r.startup_error.startswith("AttributeError") and cls in r.startup_error
    assert r.feeds == Feed.CRASH and r.hidden_width == 0 and r.captured_layers == []
    f = codes(r)["AUX_CAPTURE_UNSUPPORTED"]
    assert f.root_cause and f.severity == Severity.CRITICAL
    ok = simulate_capture(t, d, present)
    assert ok.startup_error is None and ok.captured_layers == [2, 30, 58]


def test_missing_hook_is_a_value_error_from_0523():
    """0.5.23 model_runner_components/attention_backend_setup.py:54-61 raises ValueError;
    0.5.22 still a plain call (AttributeError)."""
    assert pick(MISSING_HOOK, parse_engine("sglang==0.5.23")).value.startswith("ValueError")
    assert pick(MISSING_HOOK, parse_engine("sglang==0.5.22")).value.startswith("AttributeError")


def test_no_start_up_error_when_capture_is_off():
    """0.5.8–0.5.22 call set_eagle3_layers_to_capture only if eagle_use_aux_hidden_state
    (0.5.10 model_runner.py:355-379): a class without it starts, with fc bypassed."""
    t = load_target_config(KIMI / "target")
    d = load_draft_config(KIMI / "draft")
    on = simulate_capture(t, d, "sglang==0.5.9")
    assert on.startup_error is not None
    off = simulate_capture(t, d, "sglang==0.5.9", aux_capture=False)
    assert off.startup_error is None and off.feeds == Feed.FINAL_HIDDEN_POST_NORM
    assert "FC_BYPASSED" in codes(off)


def test_kimi_k25_is_not_an_sglang_architecture_before_059():
    """models/kimi_k25.py first appears in the sglang 0.5.9 wheel (0.5.8 has none)."""
    r = simulate_capture(load_target_config(KIMI / "target"), load_draft_config(KIMI / "draft"),
                         "sglang==0.5.8")  # fmt: skip
    assert "not an SGLang architecture before 0.5.9" in r.startup_error


def test_fc_width_follows_the_aux_count_from_0512():
    """fc is [H, 3·Ht] up to 0.5.11 (0.5.10 llama_eagle3.py:138) and [H, K·Ht] from 0.5.12
    (0.5.12 llama_eagle3.py:160, K = num_aux_hidden_states or len(eagle_config ids))."""
    d = flat_draft(ids=[1, 8, 15, 28])
    old = simulate_capture(target(), d, "sglang==0.5.11")
    assert old.fc_in_features == 3 * 4096 and old.hidden_width == 4 * 4096
    assert old.feeds == Feed.CRASH
    new = simulate_capture(target(), d, "sglang==0.5.12")
    assert new.fc_in_features == 4 * 4096 and new.feeds == Feed.AUX_CONCAT


def test_unknown_target_class_is_assumed_and_said():
    """The kit's class table is partial (about 70 classes implement set_eagle3_layers_to_capture
    in 0.5.23; docs/engines.md#sglang-aux-capture-and-the-fc-gate)."""
    r = simulate_capture(target(arch="SomeNewForCausalLM"), flat_draft(), "sglang==0.5.23")
    assert (
        r.feeds == Feed.AUX_CONCAT and codes(r)["AUX_CAPTURE_UNVERIFIED"].severity == Severity.INFO
    )
