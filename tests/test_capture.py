"""The capture report across engines: JSON, overrides, rule tables without gaps, and each engine
reading its own place for the ids. Layer indices are states after k target layers."""

from __future__ import annotations

import json

from capture_configs import KIMI, flat_draft, target

from kit.checkpoint.config import (
    load_draft_config,
    load_target_config,
)
from kit.tracing.capture import simulate_capture


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
    reads the top-level list first, eagle_config only when it is absent (0.24.0
    v1/worker/gpu_model_runner.py:5353-5381)."""
    d = flat_draft(ids=[1, 15, 28], eagle_aux_hidden_state_layer_ids=[3, 10, 20])
    assert simulate_capture(target(), d, "sglang==0.5.23").config_layer_ids == [1, 15, 28]
    assert simulate_capture(target(), d, "vllm==0.24.0").config_layer_ids == [3, 10, 20]
    assert simulate_capture(target(), d, "vllm==0.18.0").config_layer_ids == [3, 10, 20]
