"""vLLM load-weights replay, pinned release by release (docs/engines.md#vllm-keys-and-loading).

Each test names the vLLM release and the wheel file (and function) whose behaviour it
reproduces. Layouts are written as real safetensors files in `tmp_path`.
"""

from __future__ import annotations

import json

import pytest
from tiny_layouts import DATA, FLAT, LAYER, sim, write

from kit.checkpoint.config import parse_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.load.replay import engine_params

SAMPLE = DATA / "samples" / "speculators-0.9.0-tiny"
LAYOUTS = DATA / "layouts"


def keys_of(prefix: str = "midlayer.", d2t: bool = True) -> dict[str, tuple[int, ...]]:
    keys = {prefix + k: s for k, s in LAYER.items()}
    keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32), "t2d": (64,)}
    if d2t:
        keys["d2t"] = (16,)
    return keys


def speculators_config(**top) -> dict:
    raw = json.loads((SAMPLE / "config.json").read_text())
    raw.update(top)
    return raw


@pytest.mark.parametrize("engine", ["vllm==0.9.2", "vllm==0.10.0"])
def test_sample_loads_everywhere_but_before_0_10_1_1_the_config_is_refused(engine):
    """0.9.2 and 0.10.0 have no speculators config support (no
    `transformers_utils/configs/speculators/` package in either sdist: Unrecognized model); from
    0.10.1.1 `configs/speculators/base.py` reads it. The loader (`llama_eagle3.py` load_weights)
    takes `layers.0.*` with the `model.` prefix everywhere."""
    old = sim(SAMPLE, engine)
    assert old.refusal is not None and {k.outcome for k in old.keys} == {"error"}
    assert old.findings[0].code == "UNSUPPORTED_CONFIG" and old.findings[0].root_cause
    # once rewritten as a flat LlamaForCausalLM config, the release loads every tensor
    assert old.rewritten.loads_cleanly


def test_sample_loads_from_0_10_1_1():
    for engine in ("vllm==0.10.1.1", "vllm==0.11.0", "vllm==0.33.0"):
        report = sim(SAMPLE, engine)
        assert report.refusal is None and not report.crashed
        bad = [k for k in report.keys if k.outcome not in ("loaded", "consumed", "ignored")]
        assert bad == []
        d2t = report.outcome("d2t")
        assert (d2t.outcome, d2t.param) == ("consumed", "draft_id_to_target_id")
        assert report.outcome("t2d").outcome == "ignored"


def test_embed_sharing_by_release():
    """0.11.0 `v1/spec_decode/eagle.py` load_model replaces the draft embedding by the target's
    whenever shapes match; 0.11.2+ `process_eagle_weight` shares only when the checkpoint has none."""
    assert sim(SAMPLE, "vllm==0.11.0").param("model.embed_tokens.weight").state == "from_target"
    own = sim(SAMPLE, "vllm==0.11.2").param("model.embed_tokens.weight")
    assert own.state == "loaded" and own.loaded_from == ["embed_tokens.weight"]


def test_specforge_arch_needs_0_10_2(tmp_path):
    """`LlamaForCausalLMEagle3` is registered from 0.10.2 (0.10.2 `models/registry.py:283`;
    0.10.1.1 `:265` has it commented out); 0.9.2 even prefixes it to
    `Eagle3LlamaForCausalLMEagle3` (0.9.2 `transformers_utils/configs/eagle.py:59-63`)."""
    folder = write(tmp_path / "sf", keys_of(), FLAT)
    r092 = sim(folder, "vllm==0.9.2")
    f = next(f for f in r092.findings if f.code == "UNSUPPORTED_CONFIG")
    assert "Eagle3LlamaForCausalLMEagle3" in f.title
    assert "LlamaForCausalLMEagle3" in sim(folder, "vllm==0.10.1.1").refusal.message
    r0102 = sim(folder, "vllm==0.10.2")
    assert r0102.refusal is None and not r0102.crashed
    r011 = sim(folder, "vllm==0.11.0")
    assert r011.refusal is None and not r011.crashed
    q = r011.outcome("midlayer.self_attn.q_proj.weight")
    assert (q.param, q.shard) == ("model.layers.0.self_attn.qkv_proj.weight", "q")


def test_eagle_official_bin_everywhere():
    """EAGLE official (`LlamaForCausalLM`, midlayer.*, .bin) is accepted by every release: the
    loader maps `midlayer.` → `layers.0.` (`llama_eagle3.py` LlamaModel.load_weights)."""
    for engine in ("vllm==0.9.2", "vllm==0.18.0", "vllm==0.33.0"):
        report = sim(LAYOUTS / "eagle-official", engine)
        assert report.loads_cleanly
        assert report.param("model.embed_tokens.weight").state == "from_target"


def test_model_prefix_is_an_error(tmp_path):
    """Keys already prefixed `model.` become `model.model.*`: KeyError in 0.11.0
    (`params_dict[name]`), ValueError from 0.28 (`models/utils.py` AutoWeightsLoader)."""
    keys = {("" if k.startswith(("lm_head", "d2t", "t2d")) else "model.") + k: s
            for k, s in keys_of("layers.0.").items()}  # fmt: skip
    folder = write(tmp_path / "p", keys, FLAT)
    r = sim(folder, "vllm==0.11.0")
    assert r.crashed and "KeyError: 'model.model.fc.weight'" in r.errors
    r33 = sim(folder, "vllm==0.33.0")
    assert "ValueError: There is no module or parameter named 'model.model.fc.weight'" in r33.errors


def test_modelopt_midlayer_indexed_is_an_error():
    """ModelOpt `midlayer.0.*` → `layers.0.0.*` (0.11.0 `llama_eagle3.py:176-177`): KeyError in
    0.11.0."""
    r = sim(LAYOUTS / "modelopt-midlayer", "vllm==0.11.0")
    assert r.outcome("midlayer.0.self_attn.o_proj.weight").message == (
        "KeyError: 'model.layers.0.0.self_attn.o_proj.weight'"
    )


def test_modelopt_layers_multi_layer_from_0_11_1():
    """0.11.0 builds one decoder layer (`llama_eagle3.py:123-128`) so `layers.1.*` errors;
    0.11.1 builds num_hidden_layers (:155-165, vllm PR #26164), each a LlamaDecoderLayer with its
    own hidden_norm (:67) that layers ≥ 1 never use (they open with input_layernorm, :91-93):
    a ModelOpt layer 1 ships none, and nothing is lost; it ships no input_layernorm either, and
    that one is used, so it is reported left at its init."""
    folder = LAYOUTS / "modelopt-layers"
    assert sim(folder, "vllm==0.11.0").crashed
    for engine in ("vllm==0.11.1", "vllm==0.14.0", "vllm==0.18.0"):
        r = sim(folder, engine)
        assert not r.crashed and r.outcome("layers.1.self_attn.q_proj.weight").outcome == "loaded"
        h1 = r.param("model.layers.1.hidden_norm.weight")
        assert (h1.state, h1.init) == ("left_at_init", "ones") and h1.unused
        left = next(f for f in r.findings if f.code == "PARAM_LEFT_AT_INIT")
        assert left.data["params"] == ["model.layers.1.input_layernorm.weight"]


def test_extra_top_level_key_is_an_error(tmp_path):
    """Any unknown key (e.g. `verifier_lm_head.weight`) fails start-up in every release (0.11.0
    `llama_eagle3.py:182,187` params_dict[name]; 0.33.0 `models/utils.py:443`)."""
    folder = write(tmp_path / "v", keys_of() | {"verifier_lm_head.weight": (64, 32)}, FLAT)
    for engine in ("vllm==0.11.0", "vllm==0.24.0", "vllm==0.33.0"):
        r = sim(folder, engine)
        assert r.crashed and r.outcome("verifier_lm_head.weight").outcome == "error"


def test_missing_d2t_is_silent_identity(tmp_path):
    """d2t absent with Vd < V: `draft_id_to_target_id` stays zeros (identity) and loading
    succeeds (0.11.0 `llama_eagle3.py` Eagle3LlamaForCausalLM.__init__) ⇒ D2T_MISSING."""
    r = sim(write(tmp_path / "n", keys_of(d2t=False), FLAT), "vllm==0.11.0")
    assert not r.crashed
    p = r.param("draft_id_to_target_id")
    assert (p.state, p.init, p.shape) == ("left_at_init", "zeros", (16,))
    assert next(f for f in r.findings if f.code == "D2T_MISSING").severity.name == "CRITICAL"


def test_full_vocab_identity_d2t_fails_in_0_33(tmp_path):
    """0.33 builds draft_id_to_target_id only when draft_vocab_size != vocab (0.33.0
    `llama_eagle3.py:339-345`), so a
    SpecForge full-vocab draft that ships d2t fails; 0.28 loads it."""
    keys = keys_of() | {"lm_head.weight": (64, 32), "d2t": (64,)}
    folder = write(tmp_path / "fv", keys, FLAT | {"draft_vocab_size": 64})
    r33 = sim(folder, "vllm==0.33.0")
    assert r33.outcome("d2t").message == (
        "ValueError: There is no module or parameter named 'draft_id_to_target_id'"
    )
    assert not sim(folder, "vllm==0.28.0").crashed


def test_input_norm_discarded_in_0_18(tmp_path):
    """0.18 does not copy `norm_before_fc` from a speculators config (`configs/speculators/
    algos.py` update_eagle3) and skips `input_norm.` (skip_substrs) ⇒ the trained weight is
    discarded (0.18.0 `llama_eagle3.py:417-418`; vllm PR #38111); 0.24 copies it and loads
    `model.input_norm.weight`."""
    keys = {k: t.shape for k, t in open_checkpoint(SAMPLE).tensors.items()}
    keys["input_norm.weight"] = (96,)
    folder = write(tmp_path / "inorm", keys, speculators_config(norm_before_fc=True))
    r18 = sim(folder, "vllm==0.18.0")
    assert r18.outcome("input_norm.weight").outcome == "ignored"
    assert any(f.code == "INPUT_NORM_DISCARDED" for f in r18.findings)
    r24 = sim(folder, "vllm==0.24.0")
    assert r24.outcome("input_norm.weight").param == "model.input_norm.weight"


def test_four_aux_layers_fc_shape_error(tmp_path):
    """A speculators draft with 4 aux layers: fc is sized from eagle_config ids or 3, never the
    top-level ids ⇒ fc.weight shape error (0.14.0 `model_loader/weight_utils.py:976-988`
    assert)."""
    keys = {k: t.shape for k, t in open_checkpoint(SAMPLE).tensors.items()}
    keys["fc.weight"] = (32, 128)
    cfg = speculators_config(eagle_aux_hidden_state_layer_ids=[2, 8, 16, 29])
    folder = write(tmp_path / "four", keys, cfg)
    for engine in ("vllm==0.11.0", "vllm==0.33.0"):
        out = sim(folder, engine).outcome("fc.weight")
        assert out.outcome == "error" and "AssertionError" in out.message


def test_fc_bias_keyerror_then_ignored(tmp_path):
    """`fc.bias` (model has none): KeyError up to 0.24 (`params_dict[name]`); 0.33 ignores
    unexpected `.bias` (0.33.0 `models/utils.py:458` AutoWeightsLoader)."""
    folder = write(tmp_path / "b", keys_of() | {"fc.bias": (32,)}, FLAT)
    assert sim(folder, "vllm==0.24.0").outcome("fc.bias").message == "KeyError: 'model.fc.bias'"
    assert sim(folder, "vllm==0.33.0").outcome("fc.bias").outcome == "ignored"


def test_fc_skipped_without_aux(tmp_path):
    """`eagle_config.use_aux_hidden_state: false` adds `fc.` to the skip set from 0.12 (0.12.0
    `llama_eagle3.py:368-369`)."""
    cfg = FLAT | {"eagle_config": {"use_aux_hidden_state": False}}
    folder = write(tmp_path / "noaux", keys_of(), cfg)
    assert sim(folder, "vllm==0.12.0").outcome("fc.weight").outcome == "ignored"
    assert sim(folder, "vllm==0.11.2").outcome("fc.weight").outcome == "loaded"


def test_full_vocab_head_shared_in_0_11_0(tmp_path):
    """0.11.0 only: a full-vocab draft head is replaced by the target's (`eagle.py` load_model)."""
    keys = keys_of() | {"lm_head.weight": (64, 32)}
    folder = write(tmp_path / "fh", keys, FLAT | {"draft_vocab_size": 64})
    assert sim(folder, "vllm==0.11.0").param("lm_head.weight").state == "from_target"
    assert sim(folder, "vllm==0.11.2").param("lm_head.weight").state == "loaded"


def test_qwen3_speculators_draft_needs_0_24(tmp_path):
    """Before 0.24 every speculators draft is an `Eagle3LlamaForCausalLM` (`algos.py`), so a Qwen3
    draft's q_norm/k_norm are unknown keys; 0.24 maps qwen3 → `Eagle3Qwen3ForCausalLM`."""
    raw = speculators_config()
    raw["transformer_layer_config"] = raw["transformer_layer_config"] | {"model_type": "qwen3"}
    keys = {k: t.shape for k, t in open_checkpoint(SAMPLE).tensors.items()}
    keys |= {"layers.0.self_attn.q_norm.weight": (8,), "layers.0.self_attn.k_norm.weight": (8,)}
    folder = write(tmp_path / "q3", keys, raw)
    assert sim(folder, "vllm==0.18.0").crashed
    r24 = sim(folder, "vllm==0.24.0")
    assert not r24.crashed
    assert r24.outcome("layers.0.self_attn.q_norm.weight").param == (
        "model.layers.0.self_attn.q_norm.weight"
    )


def test_param_names_and_inits_per_release():
    """vLLM parameter table: padded vocab rows, fc in-width 3·Ht until 0.18 and
    len(eagle_config ids)·Ht from 0.24 (`llama_eagle3.py` LlamaModel.__init__)."""
    cfg = parse_draft_config(
        FLAT
        | {"vocab_size": 100, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4]}}
    )
    p18 = {p.name: p for p in engine_params(cfg, "vllm==0.18.0")}
    p24 = {p.name: p for p in engine_params(cfg, "vllm==0.24.0")}
    assert p18["model.fc.weight"].shape == (32, 96) and p24["model.fc.weight"].shape == (32, 128)
    assert p18["model.embed_tokens.weight"].shape == (128, 32)
    assert p18["model.layers.0.input_layernorm.weight"].init == "ones"
    assert p18["model.layers.0.self_attn.qkv_proj.weight"].init == "uninitialized"
