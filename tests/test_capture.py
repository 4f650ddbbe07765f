"""Aux-capture rules, one test per convention row of the references, each citing its source.

References: shared/reference/sglang-eagle3.md §C, §D, §E, §I; vllm-eagle3.md §3, §4;
checkpoint-formats.md §4. Layer indices are states after k target layers (HF hidden_states[k]).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kit.capture import Feed, simulate_capture
from kit.config import (
    AFTER_K_LAYERS,
    load_draft_config,
    load_target_config,
    parse_draft_config,
    parse_target_config,
)
from kit.engines import parse_engine, pick
from kit.engines.aux_ids import default_layers
from kit.engines.sglang.capture import MISSING_HOOK
from kit.findings import Severity

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "speculators-0.9.0-tiny"
KIMI = ROOT / "data" / "incident" / "kimi-k2.5"


def target(n=32, hidden=4096, arch="LlamaForCausalLM", model_type="llama"):
    return parse_target_config(
        {
            "architectures": [arch],
            "model_type": model_type,
            "num_hidden_layers": n,
            "hidden_size": hidden,
            "vocab_size": 128256,
        }
    )


def flat_draft(hidden=4096, ids=None, use_aux=None, target_hidden=None, **extra):
    """A SpecForge / ModelOpt style flat config (ids in eagle_config: output-of-layer)."""
    raw = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "draft_vocab_size": 32000,
        "num_hidden_layers": 1,
        "target_hidden_size": target_hidden,
        **extra,
    }
    eagle = {}
    if ids is not None:
        eagle["eagle_aux_hidden_state_layer_ids"] = ids
    if use_aux is not None:
        eagle["use_aux_hidden_state"] = use_aux
    if eagle:
        raw["eagle_config"] = eagle
    return parse_draft_config(raw)


def sample_draft(ids=None):
    """The real speculators 0.9.0 config (H = 32), optionally with other top-level ids."""
    raw = json.loads((SAMPLE / "config.json").read_text())
    if ids is not None:
        raw["eagle_aux_hidden_state_layer_ids"] = ids
    return parse_draft_config(raw)


def codes(report):
    return {f.code: f for f in report.findings}


# ---- SGLang --------------------------------------------------------------------------------


def test_sglang_default_ids_are_inputs_of_layers_2_half_and_minus_3():
    """sglang 0.4.10 models/llama.py:743 (defaults [2, L//2, L−3]) and :330-332 (captured as
    the input of layer i, i.e. hidden_states + residual before the layer runs)."""
    r = simulate_capture(target(n=32), flat_draft(), "sglang==0.4.10")
    assert r.engine_layer_ids == [2, 16, 29] == r.captured_layers
    assert r.config_layer_ids is None and r.hidden_width == 3 * 4096
    assert r.fc_applied and r.feeds == Feed.AUX_CONCAT and not r.findings
    r61 = simulate_capture(target(n=61, hidden=7168), flat_draft(hidden=7168), "sglang==0.4.10")
    assert r61.captured_layers == [2, 30, 58] == default_layers(61)


def test_sglang_up_to_048_does_not_read_ids():
    """sglang 0.4.4.post2–0.4.8 never read eagle_config ids: 0.4.6.post1
    model_executor/model_runner.py:227-229 passes none; sglang-eagle3.md §D table row 1."""
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
    sglang-eagle3.md §C last paragraph (0.5.10 llama_eagle3.py:176, fc :138)."""
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
    (0.5.10 model_executor/model_runner.py:667-670; sglang-eagle3.md §E)."""
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
    """kimi_k25.py first appears in sglang 0.5.9 (sglang-eagle3.md §E)."""
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
    """The kit's class table is partial (0.5.23 has 70 capture classes, sglang-eagle3.md §D)."""
    r = simulate_capture(target(arch="SomeNewForCausalLM"), flat_draft(), "sglang==0.5.23")
    assert (
        r.feeds == Feed.AUX_CONCAT and codes(r)["AUX_CAPTURE_UNVERIFIED"].severity == Severity.INFO
    )


# ---- vLLM ----------------------------------------------------------------------------------


def test_vllm_ignores_ids_up_to_0110_reads_top_level_from_0112():
    """vllm 0.9.2–0.11.0 never read the draft's ids; 0.11.2+ read the top-level list verbatim
    as "state after k layers" (v1/worker/gpu_model_runner.py load_model; vllm-eagle3.md §4)."""
    t, d = target(n=32, hidden=32), sample_draft([3, 10, 20])
    old = simulate_capture(t, d, "vllm==0.11.0")
    assert old.captured_layers == [2, 16, 29] and "AUX_IDS_IGNORED" in codes(old)
    new = simulate_capture(t, d, "vllm==0.11.2")
    assert new.config_layer_ids == [3, 10, 20] == new.captured_layers == new.trained_layers
    assert not new.findings


def test_vllm_reads_eagle_config_ids_verbatim_from_024():
    """eagle_config ids: absent in 0.18.0, read verbatim from 0.24.0 (vllm-eagle3.md §4), so a
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
    (0.12+, vllm-eagle3.md §3); 0.11.0 ignores the flag."""
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
    """EAGLE-3 capable target modules per release (vllm-eagle3.md §4: qwen3 0.10.1.1,
    qwen3_moe 0.11.2, kimi_k25 0.18) plus the model_type allow-list up to 0.14 (§1.4)."""
    t = (
        load_target_config(KIMI / "target")
        if arch.startswith("Kimi")
        else target(arch=arch, model_type=model_type)
    )
    d = flat_draft(hidden=t.hidden_size)
    assert simulate_capture(t, d, first).startup_error is None
    r = simulate_capture(t, d, before)
    assert r.startup_error and "AUX_CAPTURE_UNSUPPORTED" in codes(r)


def test_vllm_allow_list_reads_the_text_config_model_type():
    """0.11.0–0.14.0 match eagle3 targets on hf_text_config.model_type ("deepseek_v3" for
    Kimi-K2.5, not "kimi_k25"): vllm-eagle3.md §1.4."""
    r = simulate_capture(
        load_target_config(KIMI / "target"), load_draft_config(KIMI / "draft"), "vllm==0.11.0"
    )
    assert "'deepseek_v3'" in r.startup_error


def test_report_round_trips_to_json():
    r = simulate_capture(target(), flat_draft(ids=[3, 10, 20]), "sglang==0.5.10", cuda_graph=True)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["captured_layers"] == [4, 11, 21] and d["cuda_graph_layers"] == [2, 16, 29]
    assert {f["code"] for f in d["findings"]} == {"AUX_LAYERS_DIFFER_UNDER_CUDA_GRAPH"}


def test_target_class_override():
    """--target-class: the same Kimi-K2.5 config served through the inner DeepseekV3 class
    has the hook from 0.5.5 (deepseek_v2.py:3822), the KimiK25 wrapper only from 0.5.10."""
    t, d = load_target_config(KIMI / "target"), load_draft_config(KIMI / "draft")
    assert simulate_capture(t, d, "sglang==0.5.9").startup_error is not None
    inner = simulate_capture(t, d, "sglang==0.5.9", target_class="DeepseekV3ForCausalLM")
    assert inner.startup_error is None and inner.target_class == "DeepseekV3ForCausalLM"
    assert inner.hidden_width == 21504 and inner.fc_applied


def test_rule_tables_have_no_gaps():
    """Every modelled release × every class the kit knows × every switch gets an answer
    (`pick` raises on a gap in a table), and the answer is self-consistent."""
    from kit.engines import all_releases
    from kit.engines.sglang.capture import CAPTURE_CLASSES as SGLANG_CAPTURE_CLASSES
    from kit.engines.vllm.capture import ARCH_MODULE as VLLM_ARCH_MODULE

    classes = sorted({*SGLANG_CAPTURE_CLASSES, *VLLM_ARCH_MODULE, "UnknownForCausalLM"})
    draft = flat_draft(hidden=64, ids=[1, 17, 32])
    for engine in ("sglang", "vllm"):
        for rel in all_releases(engine):
            for cls in classes:
                for aux in (None, False):
                    r = simulate_capture(target(n=36, hidden=64, arch=cls), draft, rel,
                                         aux_capture=aux, cuda_graph=True)  # fmt: skip
                    assert (r.startup_error is None) == (r.hidden_width > 0)
                    assert r.captured_layers == sorted(r.captured_layers)
                    assert r.hidden_width in (0, 64 * max(1, len(r.captured_layers)))


def test_each_engine_reads_its_own_place_when_a_config_has_both():
    """SGLang reads only eagle_config (0.5.23 spec_aux_hidden_state.py:185-196); vLLM ≥0.24
    reads the top-level list first, eagle_config only when it is absent (vllm-eagle3.md §4)."""
    d = flat_draft(ids=[1, 15, 28], eagle_aux_hidden_state_layer_ids=[3, 10, 20])
    assert simulate_capture(target(), d, "sglang==0.5.23").config_layer_ids == [1, 15, 28]
    assert simulate_capture(target(), d, "vllm==0.24.0").config_layer_ids == [3, 10, 20]
    assert simulate_capture(target(), d, "vllm==0.18.0").config_layer_ids == [3, 10, 20]
