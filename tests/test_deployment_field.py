"""Causes of low acceptance the field reported in 2026, each as the reported deployment (configs,
launch lines, checkpoint headers shaped like the thread's) and a healthy control that stays
quiet. Each finding names the engine source or thread it reproduces."""

from __future__ import annotations

import json

import deployment_scenarios as sc
import numpy as np
import pytest
from test_deployment_rules import sglang_line, vllm_line

import kit
from kit.checkpoint.inspection import inspect_checkpoint


def codes(report) -> dict:
    return {f.code: f for f in report.findings}


def check(launch=None, **kw):
    return codes(kit.check_deployment(launch, **kw))


@pytest.fixture
def pair(tmp_path):
    return sc.target(tmp_path / "target"), sc.specforge_draft(tmp_path / "draft")


def weights(folder, scales: bool = False):
    """A small safetensors file in the draft folder (header read only), k/v scales optional."""
    from safetensors.numpy import save_file

    tensors = {"fc.weight": np.zeros((64, 192), np.float32), "d2t": np.zeros(200, np.int64)}
    if scales:
        tensors |= {"midlayer.self_attn.k_scale": np.ones((), np.float32),
                    "midlayer.self_attn.v_scale": np.ones((), np.float32)}  # fmt: skip
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


# --- pipeline parallelism: aux states of earlier stages (sglang PR #39644, vllm PR #45985) ----


@pytest.mark.parametrize(
    "engine, extra, env, found",
    [
        ("sglang==0.5.10", "--pp-size 2", "", True),
        ("sglang==0.5.23", "--pp-size 2", "", True),
        ("sglang==0.5.10", "--pp-size 1", "", False),
        ("vllm==0.28.0", "-pp 2", "", True),
        ("vllm==0.33.0", "-pp 2", "", False),  # the V2 runner relays them (PR #50514)
        ("vllm==0.33.0", "-pp 2", "VLLM_USE_V2_MODEL_RUNNER=0 ", True),
        ("vllm==0.33.0", "-tp 2", "", False),
    ],
)  # fmt: skip
def test_pipeline_parallel_drops_aux_states(pair, engine, extra, env, found):
    target, draft = pair
    line = sglang_line(target, draft, extra) if engine.startswith("sglang") else (
        vllm_line(target, draft, extra))  # fmt: skip
    got = check(env + line, draft=draft, target_config=target, engine=engine)
    assert ("PIPELINE_AUX_STATES_DROPPED" in got) is found
    if found:
        f = got["PIPELINE_AUX_STATES_DROPPED"]
        assert f.root_cause is engine.startswith("sglang")
        assert "models/llama.py" in f.source or "PR #45985" in f.source or "V2" in f.evidence[-1]


# --- Gemma 3/4 at TP > 1 (sglang PR #23976) ---------------------------------------------------


def gemma(folder):
    return sc.vl_target(folder, model_type="gemma3_text") and _set(folder, model_type="gemma3")


def _set(folder, **over):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(over)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.mark.parametrize(
    "engine, tp, found",
    [("sglang==0.5.11", 2, True), ("sglang==0.5.12", 2, False), ("sglang==0.5.11", 1, False)],
)
def test_gemma_target_at_tp_gets_an_unsharded_embedding(tmp_path, engine, tp, found):
    target, draft = gemma(tmp_path / "gemma"), sc.specforge_draft(tmp_path / "draft")
    got = check(sglang_line(target, draft, f"--tp {tp}"), draft=draft, target_config=target,
                engine=engine)  # fmt: skip
    assert ("GEMMA_EMBEDDING_NOT_SHARDED" in got) is found


def test_a_llama_target_at_tp_is_not_gemmas_case(pair):
    target, draft = pair
    got = check(sglang_line(target, draft, "--tp 2"), draft=draft, target_config=target,
                engine="sglang==0.5.11")  # fmt: skip
    assert "GEMMA_EMBEDDING_NOT_SHARDED" not in got


# --- SGLang copies --quantization onto the draft (sglang PR #28196, #22588, #33115) ------------


@pytest.mark.parametrize(
    "engine, extra, found",
    [
        ("sglang==0.5.10", "--quantization awq", True),
        ("sglang==0.5.23", "--quantization fp8", True),
        ("sglang==0.5.6", "--quantization fp8", True),  # no flag for the draft's own yet
        ("sglang==0.5.10", "--quantization awq --speculative-draft-model-quantization unquant",
         False),
        ("sglang==0.5.10", "", False),
    ],
)  # fmt: skip
def test_the_targets_quantization_is_copied_onto_the_draft(pair, engine, extra, found):
    target, draft = pair
    got = check(sglang_line(target, draft, extra), draft=draft, target_config=target, engine=engine)
    assert ("DRAFT_QUANTIZATION_INHERITED" in got) is found
    if engine == "sglang==0.5.6":
        assert "0.5.7 or later" in got["DRAFT_QUANTIZATION_INHERITED"].fix


def test_a_draft_with_its_own_quantization_config_keeps_it(tmp_path, pair):
    target, _ = pair
    draft = sc.specforge_draft(tmp_path / "qdraft", quantization_config={"quant_method": "fp8"})
    got = check(sglang_line(target, draft, "--quantization fp8"), draft=draft,
                target_config=target, engine="sglang==0.5.10")  # fmt: skip
    assert "DRAFT_QUANTIZATION_INHERITED" not in got


# --- an FP8 KV cache the draft inherits without scales (tokenspeed PR #1012, vllm PR #24505) ---


@pytest.mark.parametrize(
    "engine, extra, spec, scales, found",
    [
        ("vllm==0.24.0", "--kv-cache-dtype fp8", {}, False, True),
        ("vllm==0.33.0", "--kv-cache-dtype fp8", {}, False, True),
        ("vllm==0.33.0", "--kv-cache-dtype fp8", {"kv_cache_dtype": "auto"}, False, False),
        ("vllm==0.24.0", "--kv-cache-dtype fp8", {}, True, False),
        ("vllm==0.24.0", "", {}, False, False),
    ],
)  # fmt: skip
def test_vllm_draft_kv_cache_follows_the_targets_fp8(tmp_path, pair, engine, extra, spec, scales,
                                                      found):  # fmt: skip
    target, draft = pair
    weights(draft, scales)
    line = vllm_line(target, draft, extra, **spec)
    got = check(line, draft=draft, target_config=target, engine=engine)
    assert ("DRAFT_KV_CACHE_UNSCALED" in got) is found


@pytest.mark.parametrize(
    "engine, extra, found",
    [
        ("sglang==0.5.10", "--kv-cache-dtype fp8_e4m3", True),
        ("sglang==0.5.18", "--kv-cache-dtype fp8_e4m3", True),
        ("sglang==0.5.18", "--kv-cache-dtype fp8_e4m3 --speculative-draft-kv-cache-dtype bf16",
         False),
    ],
)  # fmt: skip
def test_sglang_draft_kv_cache_follows_the_targets_fp8(pair, engine, extra, found):
    target, draft = pair
    weights(draft)
    got = check(sglang_line(target, draft, extra), draft=draft, target_config=target, engine=engine)
    assert ("DRAFT_KV_CACHE_UNSCALED" in got) is found


# --- a QuaRot-rotated target (vllm-ascend #5974, RFC #6445, PR #6914) ---------------------------


@pytest.mark.parametrize("quarot", [True, False])
def test_a_quarot_target_rotates_what_the_draft_reads(pair, quarot):
    target, draft = pair
    optional = {"quarot": {"rotation_map": {"global_rotation": "rotation.safetensors"}}}
    description = {"model_quant_type": "W8A8", **({"optional": optional} if quarot else {})}
    (target / "quant_model_description.json").write_text(json.dumps(description))
    got = check(draft=draft, target_config=target, engine="vllm==0.33.0")
    assert ("TARGET_HIDDEN_STATES_ROTATED" in got) is quarot
    if quarot:
        assert "optional.quarot" in got["TARGET_HIDDEN_STATES_ROTATED"].evidence[0]


# --- speculators' converter defaults num_key_value_heads to 8 (speculators PR #636) -----------


@pytest.mark.parametrize("kv_heads, found", [(8, True), (32, False)])
def test_the_converters_kv_head_default_against_k_proj(tmp_path, kv_heads, found):
    """A 32-head MHA draft (head_dim 8) whose EAGLE config named no KV heads: the converter wrote
    8, the weights hold 32 heads' keys."""
    from safetensors.numpy import save_file

    folder = sc.speculators_draft(tmp_path / "draft", hidden_size=256, num_attention_heads=32,
                                  head_dim=8, num_key_value_heads=kv_heads)  # fmt: skip
    save_file({f"layers.0.self_attn.{p}_proj.weight": np.zeros((256, 512), np.float32)
               for p in ("q", "k", "v")}, str(folder / "model.safetensors"))  # fmt: skip
    got = {f.code: f for f in inspect_checkpoint(folder).findings}
    assert ("KV_HEADS_CONVERTER_DEFAULT" in got) is found
    if found:
        f = got["KV_HEADS_CONVERTER_DEFAULT"]
        assert f.root_cause and "num_key_value_heads to 32" in f.fix
    else:
        assert "SHAPE_CONTRADICTS_CONFIG" not in got


# --- TensorRT-LLM: Llama 4 RoPE layout (PR #19036), hybrid one-model (#18449) ------------------


def test_a_llama4_target_on_trtllm_rotates_differently(tmp_path, pair):
    _, draft = pair
    target = sc.vl_target(tmp_path / "llama4", model_type="llama4_text")
    _set(target, model_type="llama4", architectures=["Llama4ForConditionalGeneration"])
    got = check(draft=draft, target_config=target, engine="tensorrt_llm==1.2.0rc2")
    f = got["DRAFT_ROPE_LAYOUT_MISMATCH"]
    assert f.root_cause and "modeling_speculative.py:41-44" in f.source
    assert "DRAFT_ROPE_LAYOUT_MISMATCH" not in check(draft=draft, target_config=target,
                                                     engine="vllm==0.33.0")  # fmt: skip


@pytest.mark.parametrize(
    "over, found",
    [
        ({"model_type": "qwen3_next"}, True),
        ({"layer_types": ["linear_attention", "full_attention"] * 4}, True),
        ({"hybrid_override_pattern": "M-M*M-M*"}, True),
        ({}, False),
    ],
)
def test_a_hybrid_target_in_trtllm_one_model_mode(tmp_path, pair, over, found):
    _, draft = pair
    target = sc.target(tmp_path / "hybrid", **over)
    got = check(draft=draft, target_config=target, engine="tensorrt_llm==1.2.0rc2")
    assert ("HYBRID_TARGET_ONE_MODEL" in got) is found
    assert "DRAFT_ROPE_LAYOUT_MISMATCH" not in got


# --- vLLM: a draft KV geometry a hybrid-attention target cannot share pages with --------------


@pytest.mark.parametrize(
    "engine, target_kv, found",
    [
        ("vllm==0.14.0", 4, True),  # 64 per token against the draft's 32: never unified
        ("vllm==0.19.0", 4, False),  # 64 is a multiple of 32: block sizes scaled
        ("vllm==0.19.0", 3, True),  # 48 is not
        ("vllm==0.33.0", 3, False),  # padded
        ("vllm==0.14.0", 2, False),  # the same geometry
    ],
)
def test_draft_kv_pages_against_a_sliding_and_full_target(tmp_path, engine, target_kv, found):
    draft = sc.specforge_draft(tmp_path / "draft")  # 2 KV heads × 16
    layer_types = ["sliding_attention", "full_attention"] * 4
    target = sc.target(tmp_path / "target", num_key_value_heads=target_kv, layer_types=layer_types,
                       num_attention_heads=12, hidden_size=192)  # fmt: skip
    got = check(draft=draft, target_config=target, engine=engine)
    assert ("DRAFT_KV_PAGES_NOT_UNIFIED" in got) is found


def test_a_single_attention_type_target_shares_one_group(tmp_path):
    draft = sc.specforge_draft(tmp_path / "draft")
    target = sc.target(tmp_path / "target", num_key_value_heads=3, num_attention_heads=12,
                       hidden_size=192)  # fmt: skip
    assert "DRAFT_KV_PAGES_NOT_UNIFIED" not in check(draft=draft, target_config=target,
                                                     engine="vllm==0.14.0")  # fmt: skip


# --- vLLM model runner V2: no parallel drafting (PR #43010), worse acceptance (#40551) ---------


@pytest.mark.parametrize(
    "env, spec, found",
    [("VLLM_USE_V2_MODEL_RUNNER=1 ", {"parallel_drafting": True}, True),
     ("", {"parallel_drafting": True}, False), ("VLLM_USE_V2_MODEL_RUNNER=1 ", {}, False)],
)  # fmt: skip
def test_parallel_drafting_on_a_forced_v2_runner(pair, env, spec, found):
    target, draft = pair
    got = check(env + vllm_line(target, draft, **spec), draft=draft, target_config=target,
                engine="vllm==0.33.0")  # fmt: skip
    assert ("PARALLEL_DRAFTING_ON_V2_RUNNER" in got) is found


@pytest.mark.parametrize(
    "engine, env, over, applies",
    [
        ("vllm==0.33.0", "", {}, True),  # a dense target runs V2 by default (PR #44443)
        ("vllm==0.24.0", "", {}, False),  # only Qwen3ForCausalLM by default then
        ("vllm==0.33.0", "", {"num_experts": 8}, False),  # MoE: V1 by default
        ("vllm==0.33.0", "VLLM_USE_V2_MODEL_RUNNER=0 ", {}, False),
        ("vllm==0.24.0", "VLLM_USE_V2_MODEL_RUNNER=1 ", {}, True),
    ],
)
def test_the_v2_runner_known_issue_applies_where_v2_runs(tmp_path, engine, env, over, applies):
    target = sc.target(tmp_path / "target", **over)
    draft = sc.specforge_draft(tmp_path / "draft")
    got = check(env + vllm_line(target, draft), draft=draft, target_config=target, engine=engine)
    assert ("KNOWN_ISSUE_MODEL_RUNNER_V2" in got) is applies


# --- llama.cpp: -md alone, --spec-draft-p-min 0 (#25345, #25792, #25908, #23544) --------------


@pytest.mark.parametrize(
    "line, off, p_min",
    [
        ("llama-server -m t.gguf -md d.gguf --spec-draft-n-max 3", True, False),
        ("llama-server -m t.gguf -md d.gguf --spec-type none", True, False),
        ("llama-server -m t.gguf -md d.gguf --spec-type draft-eagle3", False, True),
        ("llama-server -m t.gguf -md d.gguf --spec-type draft-eagle3 --spec-draft-p-min 0.0",
         False, True),
        ("llama-server -m t.gguf -md d.gguf --spec-type draft-eagle3 --spec-draft-p-min 0.75",
         False, False),
        ("./build/bin/llama-server -m t.gguf --model-draft=d.gguf --spec-type=draft-simple "
         "--draft-p-min 0.5", False, False),
        ("llama-server -m t.gguf", False, False),
    ],
)  # fmt: skip
def test_llama_server_lines(line, off, p_min):
    got = check(line)
    assert ("LLAMACPP_SPECULATION_OFF" in got) is off
    assert ("LLAMACPP_DRAFT_P_MIN_ZERO" in got) is p_min


def test_a_llama_server_script_is_read_like_a_line(tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=0\nllama-server -m t.gguf \\\n"
                      "  -md d.gguf\n")  # fmt: skip
    assert "LLAMACPP_SPECULATION_OFF" in check(script)
