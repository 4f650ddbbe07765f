"""Draft registries per release (kit/engines/*/registry.py, kit/engines/classes.py): which names
each release builds, the engine's own refusal for the others, the class `kit fix` writes for the
draft's shape, and the false verdicts of issue #35 on the names trainers publish.

Drafts are header-only safetensors in tmp_path (tests/draft_headers.py), shapes real."""

from __future__ import annotations

import json

import pytest
from draft_headers import build, write_header_only

from kit.checkpoint.config import load_draft_config, parse_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.engines import ENGINES, parse_engine
from kit.engines.classes import Shape, shape_evidence
from kit.findings import Severity
from kit.load.replay import simulate_load
from kit.load.rewrite import plan_fix, verify_output, write_fixed

LLAMA = {
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
    "vocab_size": 256, "draft_vocab_size": 64, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}  # fmt: skip
# ModelOpt's Kimi-K2 template (Eagle3DeepseekV2ForCausalLM, model_type kimi_k2), small
MLA = LLAMA | {
    "architectures": ["Eagle3DeepseekV2ForCausalLM"], "model_type": "kimi_k2",
    "q_lora_rank": 48, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
    "v_head_dim": 16, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 4]},
}  # fmt: skip


def sim(folder, engine: str):
    return simulate_load(open_checkpoint(folder), load_draft_config(folder), engine)


def codes(report) -> dict:
    return {f.code: f for f in report.findings}


def draft(tmp_path, config: dict, trainer: str = "modelopt", name: str = "d"):
    return build(tmp_path / name, config, trainer)


# --- vLLM -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arch", ["GptOssForCausalLMEagle3", "Qwen2ForCausalLMEagle3", "Qwen3MoEForCausalLMEagle3"]
)
@pytest.mark.parametrize("engine", ["vllm==0.32.0", "vllm==0.33.0"])
def test_vllm_refuses_eagle3_names_it_does_not_register(tmp_path, arch, engine):
    """vLLM keeps a name ending with Eagle3 (0.33.0 transformers_utils/configs/eagle.py:54-63) and
    registers only a few (0.33.0 models/registry.py:698-713): the others find no Transformers
    class and stop the server (`_raise_for_unsupported`, :1250). Was "loads fully"."""
    folder = draft(tmp_path, LLAMA | {"architectures": [arch]})
    report = sim(folder, engine)
    assert report.refusal is not None
    assert f"Model architectures ['{arch}'] are not supported for now" in report.refusal.message
    refused = codes(report)["UNSUPPORTED_CONFIG"]
    assert refused.root_cause and "LlamaForCausalLMEagle3" in refused.fix
    assert report.rewritten.loads_cleanly  # the Llama-shaped draft loads once named right


def test_vllm_healthy_control_loads(tmp_path):
    report = sim(draft(tmp_path, LLAMA), "vllm==0.33.0")
    assert report.refusal is None and report.loads_cleanly
    assert "DRAFT_CLASS_MISMATCH" not in codes(report)


def test_vllm_registers_its_mla_draft_from_0_18(tmp_path):
    """`Eagle3DeepseekV2ForCausalLM` (deepseek_eagle3.py) from 0.18.0: MLA attention with the
    fused q/kv down-projection, every tensor loaded. Was "vLLM refuses … does not start"."""
    folder = draft(tmp_path, MLA)
    for engine in ("vllm==0.18.0", "vllm==0.24.0", "vllm==0.32.0", "vllm==0.33.0"):
        report = sim(folder, engine)
        assert report.refusal is None and report.loads_cleanly, (engine, report.findings)
        q = report.outcome("layers.0.self_attn.q_a_proj.weight")
        assert (q.param, q.shard) == ("model.layers.0.self_attn.fused_qkv_a_proj.weight", 0)
        assert report.param("model.layers.0.self_attn.kv_b_proj.weight").state == "loaded"
    old = sim(folder, "vllm==0.14.0")
    assert "Eagle3DeepseekV2ForCausalLM" in old.refusal.message
    assert "vllm ≥ 0.18.0" in old.findings[0].fix


def test_vllm_mla_loader_before_and_after_0_25(tmp_path):
    """A name the MLA draft has no parameter for: skipped without a word by 0.24's hand loop
    (deepseek_eagle3.py:303), a ValueError from 0.25's AutoWeightsLoader."""
    shapes = {n: (t.dtype, tuple(t.shape)) for n, t in
              open_checkpoint(draft(tmp_path, MLA)).tensors.items()}  # fmt: skip
    shapes["layers.0.self_attn.extra_scale.weight"] = ("BF16", (8,))
    folder = write_header_only(tmp_path / "extra", shapes, MLA)
    key = "layers.0.self_attn.extra_scale.weight"
    assert sim(folder, "vllm==0.24.0").outcome(key).outcome == "dropped_silently"
    late = sim(folder, "vllm==0.25.0").outcome(key)
    assert late.outcome == "error" and "There is no module or parameter named" in late.message


def test_vllm_mla_draft_under_a_name_vllm_lacks(tmp_path):
    """An MLA draft named `DeepseekV3ForCausalLMEagle3`: refused at start-up by the registry (was
    a weight-load crash: wrong stage, wrong reason); the fix names vLLM's MLA class."""
    folder = draft(tmp_path, MLA | {"architectures": ["DeepseekV3ForCausalLMEagle3"]})
    report = sim(folder, "vllm==0.33.0")
    assert "['DeepseekV3ForCausalLMEagle3'] are not supported" in report.refusal.message
    assert report.config_changes[0].startswith(
        "architectures [DeepseekV3ForCausalLMEagle3] -> [Eagle3DeepseekV2ForCausalLM]"
    )
    assert "Eagle3DeepseekV2ForCausalLM" in codes(report)["UNSUPPORTED_CONFIG"].fix
    assert report.rewritten.loads_cleanly


def test_shape_is_read_from_fields_and_tensors_not_the_name(tmp_path):
    cfg = parse_draft_config(MLA | {"architectures": ["LlamaForCausalLMEagle3"]})
    shape, why = shape_evidence(cfg)
    assert shape is Shape.MLA and "kv_lora_rank: 32" in why
    keys = list(open_checkpoint(draft(tmp_path, MLA)).tensors)
    plain = parse_draft_config(LLAMA)
    assert shape_evidence(plain, keys)[0] is Shape.MLA  # the tensors alone say MLA
    assert shape_evidence(plain, [k for k in keys if "self_attn" not in k])[0] is Shape.LLAMA


@pytest.mark.parametrize("engine", ["vllm==0.33.0", "sglang==0.5.23"])
def test_mla_draft_named_as_llama_is_a_class_mismatch_that_fix_repairs(tmp_path, engine):
    """The name picks the Llama draft class, the tensors are MLA: a root cause naming the class
    the release registers for MLA; `kit fix` writes it and the written draft loads fully."""
    folder = draft(tmp_path, MLA | {"architectures": ["LlamaForCausalLMEagle3"]})
    report = sim(folder, engine)
    f = codes(report)["DRAFT_CLASS_MISMATCH"]
    assert f.severity is Severity.CRITICAL and f.root_cause and "MLA" in f.title
    assert "Eagle3DeepseekV2ForCausalLM" in f.fix and any("q_a_proj" in e for e in f.evidence)
    ck, cfg = open_checkpoint(folder), load_draft_config(folder)
    plan = plan_fix(ck, cfg, engine)
    assert plan.config["architectures"] == ["Eagle3DeepseekV2ForCausalLM"]
    assert any("MLA" in c for c in plan.config_changes)
    assert verify_output(write_fixed(ck, plan, out=tmp_path / "fixed"), engine).loads_cleanly


# --- SGLang -----------------------------------------------------------------------------------


def test_sglang_mla_draft_under_a_name_it_lacks_is_fixed_to_its_mla_class(tmp_path):
    """The issue's case: `DeepseekV3ForCausalLMEagle3` on SGLang 0.5.23. The fix was a rewrite to
    `LlamaForCausalLMEagle3` (crashing once rewritten) and `kit fix` exited 2 about candidate
    names; now the rewrite names the MLA draft (models/kimi_k25_eagle3.py), which loads fully."""
    folder = draft(tmp_path, MLA | {"architectures": ["DeepseekV3ForCausalLMEagle3"]})
    report = sim(folder, "sglang==0.5.23")
    assert "Cannot find model module. 'DeepseekV3ForCausalLMEagle3'" in report.refusal.message
    assert report.rewritten.loads_cleanly
    ck, cfg = open_checkpoint(folder), load_draft_config(folder)
    plan = plan_fix(ck, cfg, "sglang==0.5.23")
    assert plan.config["architectures"] == ["Eagle3DeepseekV2ForCausalLM"]
    assert "MLA" in plan.config_changes[0] and "kimi_k25_eagle3.py" in plan.config_changes[0]
    written = write_fixed(ck, plan, out=tmp_path / "fixed")
    assert verify_output(written, "sglang==0.5.23").loads_cleanly


def test_sglang_before_0_5_12_names_the_first_release_with_an_mla_class(tmp_path):
    folder = draft(tmp_path, MLA | {"architectures": ["DeepseekV3ForCausalLMEagle3"]})
    report = sim(folder, "sglang==0.5.10")
    assert report.rewritten.refusal is not None  # no rename helps in 0.5.10
    said = " ".join(f.fix for f in report.findings)
    assert "sglang ≥ 0.5.12" in said and "Eagle3DeepseekV2ForCausalLM" in said


def test_sglang_mla_draft_needs_a_q_lora_rank(tmp_path):
    """kimi_k25_eagle3.py:114-117 (0.5.23) rebuilds the fused down-projection from q_lora_rank."""
    cfg = MLA | {"q_lora_rank": None}
    folder = write_header_only(tmp_path / "noq", {"fc.weight": ("BF16", (64, 192))}, cfg)
    report = sim(folder, "sglang==0.5.23")
    assert "requires q_lora_rank" in codes(report)["STARTUP_CRASH"].title


# --- tied configs over trained heads ----------------------------------------------------------


TIED = LLAMA | {"tie_word_embeddings": True}


@pytest.mark.parametrize("engine", ["sglang==0.4.8", "sglang==0.5.10", "sglang==0.5.23"])
def test_sglang_tied_config_over_a_trained_head_is_critical(tmp_path, engine):
    """SGLang ties the head to the embedding (0.5.23 llama_eagle3.py:303-304) and drops the
    checkpoint's `lm_head.weight` (:368-378; skipped by 0.4.8's delegating loader): with a
    reduced draft vocabulary the head is the target's embedding rows, not the draft's tokens.
    `kit fix` writes tie_word_embeddings: false and the trained head loads."""
    folder = draft(tmp_path, TIED, trainer="specforge")
    report = sim(folder, engine)
    f = codes(report)["TIED_HEAD_DROPPED"]
    assert f.severity is Severity.CRITICAL and f.root_cause
    assert "tie_word_embeddings: false" in f.fix
    assert "KEYS_SILENTLY_DROPPED" not in codes(report)  # no rename brings the head back
    plan = plan_fix(open_checkpoint(folder), load_draft_config(folder), engine)
    assert plan.config["tie_word_embeddings"] is False
    assert plan.after.param("lm_head.weight").state == "loaded"
    assert "TIED_HEAD_DROPPED" not in codes(plan.after)


def test_tied_config_with_the_full_vocabulary_is_an_error(tmp_path):
    folder = draft(tmp_path, TIED | {"draft_vocab_size": 256}, trainer="specforge")
    f = codes(sim(folder, "sglang==0.5.23"))["TIED_HEAD_DROPPED"]
    assert f.severity is Severity.ERROR and f.root_cause


def test_untied_control_and_vllm_which_never_ties(tmp_path):
    """vLLM's Llama draft always builds its own head (0.33.0 llama_eagle3.py:329) and never reads
    tie_word_embeddings: the trained head loads. An untied config is quiet everywhere."""
    tied = sim(draft(tmp_path, TIED, trainer="specforge", name="t"), "vllm==0.33.0")
    assert "TIED_HEAD_DROPPED" not in codes(tied) and tied.loads_cleanly
    assert tied.param("lm_head.weight").state == "loaded"
    plain = sim(draft(tmp_path, LLAMA, trainer="specforge", name="u"), "sglang==0.5.23")
    assert "TIED_HEAD_DROPPED" not in codes(plain) and plain.loads_cleanly


def test_lmdeploy_tied_head_fix_unties(tmp_path):
    """LMDeploy skips the tied head's tensor and ties nothing (0.18.0 llama_eagle3.py:307-308):
    LM_HEAD_MISSING, whose fix `kit fix` now writes."""
    cfg = TIED | {"architectures": ["LlamaForCausalLM"]}
    folder = draft(tmp_path, cfg, trainer="eagle")
    report = sim(folder, "lmdeploy==0.18.0")
    assert "tie_word_embeddings: false" in codes(report)["LM_HEAD_MISSING"].fix
    plan = plan_fix(open_checkpoint(folder), load_draft_config(folder), "lmdeploy==0.18.0")
    assert plan.config["tie_word_embeddings"] is False and plan.after.loads_cleanly


# --- LMDeploy and TensorRT-LLM ----------------------------------------------------------------


def test_lmdeploy_serves_the_kimi_mla_draft_from_0_18(tmp_path):
    """0.18.0 maps `Eagle3DeepseekV2ForCausalLM` (module_map.py:334-335) for a kimi_k2 draft
    config (configurations/kimi_k2.py:22-26); its loader fuses q_a / kv_a and splits kv_b
    (kimi_k25_eagle3.py:506-601). 0.15.0 has no such class; a DeepSeek model_type meets
    DeepSeek's builder, which asserts an MTP draft."""
    folder = draft(tmp_path, MLA)
    report = sim(folder, "lmdeploy==0.18.0")
    assert report.refusal is None and report.loads_cleanly, report.findings
    kv = report.outcome("layers.0.self_attn.kv_a_proj_with_mqa.weight")
    assert (kv.param, kv.shard) == ("model.midlayer.self_attn.fused_qkv_a_proj_with_mqa.weight",
                                    "kv")  # fmt: skip
    assert "Can not found rewrite" in sim(folder, "lmdeploy==0.15.0").refusal.message
    deepseek = draft(tmp_path, MLA | {"model_type": "deepseek_v3"}, name="ds")
    assert "deepseek_mtp" in sim(deepseek, "lmdeploy==0.18.0").refusal.message


def test_tensorrt_llm_has_no_mla_draft(tmp_path):
    """1.2.0rc2 builds `Eagle3ForCausalLM` whatever the name (modeling_speculative.py:479-482):
    an MLA draft's tensors find no module, and no rename helps."""
    report = sim(draft(tmp_path, MLA), "tensorrt_llm==1.2.0rc2")
    f = codes(report)["DRAFT_CLASS_MISMATCH"]
    assert "registers no class for MLA" in f.fix and report.crashed


def test_every_registered_class_cites_its_registry_line():
    for name, eng in ENGINES.items():
        for cls in eng.registry.CLASSES:
            assert cls.source and ":" in cls.source, (name, cls)
            first = parse_engine(f"{name}=={cls.versions.first}")
            assert eng.class_for(cls.shape, first) is not None


def test_config_json_is_untouched_by_the_replay(tmp_path):
    folder = draft(tmp_path, MLA | {"architectures": ["DeepseekV3ForCausalLMEagle3"]})
    before = (folder / "config.json").read_text()
    sim(folder, "vllm==0.33.0")
    assert json.loads((folder / "config.json").read_text()) == json.loads(before)


@pytest.mark.parametrize(
    ("engine", "said"),
    [("lmdeploy==0.15.0", "deepseek_mtp"),
     ("lmdeploy==0.18.0", "must use architecture Eagle3DeepseekV2ForCausalLM")],
)  # fmt: skip
def test_lmdeploy_builder_of_the_drafts_model_type_comes_before_llamas(tmp_path, engine, said):
    """LMDeploy picks a config builder by the draft config before Llama's can rename it
    (configurations/__init__.py imports them alphabetically; builder.py:37-43 takes the first
    whose condition holds): SpecForge's Kimi-K2 draft says `model_type: kimi_k2`, which
    DeepSeek's builder (0.15.0) or Kimi-K2's (0.18.0) takes. `kit fix` also writes
    model_type llama; a llama model_type is the control."""
    cfg = LLAMA | {"architectures": ["LlamaForCausalLM"], "model_type": "kimi_k2"}
    folder = draft(tmp_path, cfg, trainer="eagle")
    assert said in sim(folder, engine).refusal.message
    plan = plan_fix(open_checkpoint(folder), load_draft_config(folder), engine)
    assert plan.config["model_type"] == "llama" and plan.after.loads_cleanly
    control = draft(tmp_path, cfg | {"model_type": "llama"}, trainer="eagle", name="c")
    assert sim(control, engine).refusal is None


@pytest.mark.parametrize(
    ("engine", "where"),
    [("sglang==0.5.10", "sglang ≥ 0.5.12 does (Eagle3DeepseekV2ForCausalLM)"),
     ("lmdeploy==0.15.0", "lmdeploy ≥ 0.18.0 does"),
     ("tensorrt_llm==1.2.0rc2", "serve it with another engine")],
)  # fmt: skip
def test_kit_fix_on_an_mla_draft_a_release_cannot_serve_says_so(tmp_path, engine, where):
    """One line, exit 2, naming MLA and where it can be served (was an error about the fixer's
    own candidate names, `midlayer.0.*` -> `layers.0.0.*`, that never said MLA)."""
    import subprocess
    import sys

    folder = draft(tmp_path, MLA | {"architectures": ["DeepseekV3ForCausalLMEagle3"]})
    cmd = [sys.executable, "-m", "kit", "fix", str(folder), "--engine", engine, "--out",
           str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    [line] = done.stderr.strip().splitlines()
    assert "the draft is MLA" in line and where in line and "Traceback" not in done.stderr


def test_a_qwen3_draft_gets_vllms_qwen3_class_from_kit_fix(tmp_path):
    """Per-head q_norm / k_norm in the layer: vLLM's Llama draft has no such parameter (a
    ValueError at load from 0.25), its Qwen3 draft (`Eagle3Qwen3ForCausalLM`, qwen3_eagle3.py,
    0.24.0 registry.py:614) has; `kit fix` names it. A norm-only difference is told by the key
    replay, not as a class mismatch."""
    shapes = {n: (t.dtype, tuple(t.shape)) for n, t in
              open_checkpoint(draft(tmp_path, LLAMA)).tensors.items()}  # fmt: skip
    shapes |= {f"layers.0.self_attn.{n}_norm.weight": ("BF16", (16,)) for n in "qk"}
    folder = write_header_only(tmp_path / "qwen3", shapes, LLAMA)
    report = sim(folder, "vllm==0.33.0")
    assert "DRAFT_CLASS_MISMATCH" not in codes(report)
    assert report.outcome("layers.0.self_attn.q_norm.weight").outcome == "error"
    plan = plan_fix(open_checkpoint(folder), load_draft_config(folder), "vllm==0.33.0")
    assert plan.config["architectures"] == ["Eagle3Qwen3ForCausalLM"] and plan.after.loads_cleanly
