"""SGLang load-weights replay, pinned era by era.

Each test names the SGLang release and the wheel file:line whose behaviour it reproduces.
Layouts are written as real safetensors files in `tmp_path`.
"""

from __future__ import annotations

import json

import pytest
from tiny_layouts import DATA, FLAT, LAYER, sim, speculators_multilayer, write

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.errors import KitError
from kit.load.replay import engine_params


def specforge(prefix: str = "midlayer.", embed: bool = False) -> dict[str, tuple[int, ...]]:
    """SpecForge / EAGLE layout: decoder under `midlayer.`, d2t + t2d, no embed_tokens."""
    keys = {prefix + k: s for k, s in LAYER.items()}
    keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    keys |= {"d2t": (16,), "t2d": (64,)}
    if embed:
        keys["embed_tokens.weight"] = (64, 32)
    return keys


def outcomes(report) -> dict[str, str]:
    return {k.key: k.outcome for k in report.keys}


# --- the bundled speculators-0.9.0 trainer output -------------------------------------------------


@pytest.mark.parametrize("engine", ["sglang==0.4.4.post2", "sglang==0.5.10", "sglang==0.5.23"])
def test_sample_config_refused_in_every_release(sample_dir, engine):
    """No SGLang wheel has a class for speculators' `Eagle3DraftModel` nor reads
    `transformer_layer_config` (sglang/srt/models/registry.py; sglang issue #18216): the server
    never starts, so every key's outcome is `error` and the refusal is the first root cause."""
    report = sim(sample_dir, engine)
    assert report.refusal is not None and report.crashed and not report.loads_cleanly
    assert {k.outcome for k in report.keys} == {"error"}
    first = report.findings[0]
    assert first.code == "UNSUPPORTED_CONFIG" and first.root_cause
    assert first.severity.name == "CRITICAL" and "LlamaForCausalLMEagle3" in first.fix
    assert "#18216" in first.source
    # everything after it holds only once config.json is rewritten, and is never a root cause
    assert all(f.title.startswith("if config.json is rewritten: ") for f in report.findings[1:])
    assert not any(f.root_cause for f in report.findings[1:])
    assert report.params == [] and report.rewritten is not None


def test_sample_0_5_10_if_rewritten_drops_exactly_the_decoder_layer(sample_dir):
    """sglang 0.5.10 `models/llama_eagle3.py:243` (own loader), on the config rewritten in its
    flat form: `layers.0.*` is neither a parameter nor `model.`+a parameter (the decoder is
    `midlayer`, :144) ⇒ dropped without a log; the layer keeps torch.empty / torch.ones."""
    report = sim(sample_dir, "sglang==0.5.10")
    served = report.rewritten
    dropped = {k.key for k in served.keys if k.outcome == "dropped_silently"}
    assert dropped == {k for k in open_checkpoint(sample_dir).tensors if k.startswith("layers.0.")}
    assert len(dropped) == 10
    # each key carries the same fate under `if_config_rewritten`
    fates = {k.key: k.if_config_rewritten.outcome for k in report.keys}
    assert {k for k, o in fates.items() if o == "dropped_silently"} == dropped
    at_init = {p.name: p.init for p in served.params if p.state == "left_at_init"}
    assert at_init == {
        "model.midlayer.self_attn.qkv_proj.weight": "uninitialized",
        "model.midlayer.self_attn.o_proj.weight": "uninitialized",
        "model.midlayer.mlp.gate_up_proj.weight": "uninitialized",
        "model.midlayer.mlp.down_proj.weight": "uninitialized",
        "model.midlayer.input_layernorm.weight": "ones",
        "model.midlayer.hidden_norm.weight": "ones",
        "model.midlayer.post_attention_layernorm.weight": "ones",
    }
    drop = next(f for f in served.findings if f.code == "KEYS_SILENTLY_DROPPED")
    assert drop.severity.name == "CRITICAL" and drop.root_cause
    assert "toward the floor" in drop.title and "≈ 1.00" not in drop.title
    assert drop.engine == "sglang==0.5.10" and "llama_eagle3.py:243" in drop.source
    assert "upgrade to sglang ≥ 0.5.12" in drop.fix  # with the rewritten config it loads as is


def test_sample_0_5_12_if_rewritten_legacy_layers_load(sample_dir):
    """sglang 0.5.12 `models/llama_eagle3.py:293-346`: the decoder is `model.layers.{i}` (:180),
    so `layers.0.*` + the `model.` prefix hits it; q/k/v and gate/up go to their shards."""
    report = sim(sample_dir, "sglang==0.5.12").rewritten
    assert report.loads_cleanly
    q = report.outcome("layers.0.self_attn.q_proj.weight")
    assert (q.param, q.shard) == ("model.layers.0.self_attn.qkv_proj.weight", "q")
    up = report.outcome("layers.0.mlp.up_proj.weight")
    assert (up.param, up.shard) == ("model.layers.0.mlp.gate_up_proj.weight", 1)
    qkv = report.param("model.layers.0.self_attn.qkv_proj.weight")
    assert qkv.state == "loaded" and sorted(qkv.loaded_from) == [
        "layers.0.self_attn.k_proj.weight",
        "layers.0.self_attn.q_proj.weight",
        "layers.0.self_attn.v_proj.weight",
    ]
    assert report.outcome("d2t").outcome == "consumed"
    assert report.outcome("t2d").outcome == "ignored"


def test_sample_0_4_8_if_rewritten_startup_keyerror(sample_dir):
    """sglang 0.4.8 `models/llama_eagle3.py:183-193` prefixes `model.` and delegates to
    `models/llama.py:532-596`: stacked names that are not parameters raise KeyError, other
    unknown names log `Parameter … not found in params_dict`."""
    report = sim(sample_dir, "sglang==0.4.8").rewritten
    assert report.crashed
    q = report.outcome("layers.0.self_attn.q_proj.weight")
    assert (
        q.outcome == "error" and q.message == "KeyError: 'model.layers.0.self_attn.qkv_proj.weight'"
    )
    o = report.outcome("layers.0.self_attn.o_proj.weight")
    assert o.outcome == "warned"
    assert o.message == "Parameter model.layers.0.self_attn.o_proj.weight not found in params_dict"
    crash = next(f for f in report.findings if f.code == "STARTUP_CRASH")
    assert "KeyError: 'model.layers.0.self_attn.qkv_proj.weight'" in crash.evidence
    assert "llama.py:532-596" in crash.source
    # ≤0.4.8 fc is nn.Linear(bias=True) (0.4.6.post1 llama_eagle3.py:108-111): random bias
    assert report.param("model.fc.bias").init == "random"
    assert report.param("model.fc.bias").state == "left_at_init"


def test_rewritten_config_is_sglangs_flat_form(sample_dir):
    """What `fix --for sglang==X` writes and the replay assumes: `LlamaForCausalLMEagle3`, the
    layer fields at top level, draft_vocab_size and the norm flags kept, aux ids in
    `eagle_config` as output of layer k (SGLang adds 1: 0.5.10 models/llama.py:783), a null
    target_hidden_size dropped (SGLang tests hasattr: 0.5.12 llama_eagle3.py:148)."""
    from kit.engines import parse_engine
    from kit.engines.sglang.config import rewritten_config

    cfg = load_draft_config(sample_dir)
    raw, changes = rewritten_config(cfg, parse_engine("sglang==0.5.10"))
    assert raw["architectures"] == ["LlamaForCausalLMEagle3"] and changes
    assert raw["hidden_size"] == cfg.hidden_size and "transformer_layer_config" not in raw
    assert raw["draft_vocab_size"] == cfg.draft_vocab_size
    assert raw["norm_before_residual"] is True and cfg.norm_before_residual
    assert raw["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [
        i - 1 for i in cfg.aux_layer_ids
    ]
    assert "target_hidden_size" not in raw


# --- SpecForge / EAGLE official / ModelOpt layouts ------------------------------------------------


@pytest.mark.parametrize("engine", ["sglang==0.4.6.post1", "sglang==0.5.10", "sglang==0.5.20"])
def test_specforge_layout_loads_in_every_era(tmp_path, engine):
    """SpecForge `midlayer.*`: 0.4.6.post1 `llama.py:481-535` (model.midlayer.* exists), 0.5.10
    `llama_eagle3.py:243` (`model.`+key), 0.5.20 `:327` legacy map midlayer→layers.0."""
    report = sim(write(tmp_path / "sf", specforge(), FLAT), engine)
    assert set(outcomes(report).values()) <= {"loaded", "consumed", "ignored"}
    embed = report.param("model.embed_tokens.weight")
    assert embed.state == "from_target" and not embed.loaded_from
    assert report.refusal is None and not report.crashed


@pytest.mark.parametrize(
    ("engine", "missing"),
    [("sglang==0.4.8", "get_hot_token_id"), ("sglang==0.4.9", "hot_token_id"),
     ("sglang==0.5.10", "hot_token_id"), ("sglang==0.5.23", "hot_token_id")],
)  # fmt: skip
def test_eagle_official_config_names_the_target_class(engine, missing):
    """The EAGLE reference config says `LlamaForCausalLM`: SGLang has no draft rename for it
    (0.5.10 configs/model_config.py:293-360), builds its target class, and the EAGLE worker asks
    it for the draft's hot-token map: 0.4.4.post2 speculative/eagle_worker.py:122
    `get_hot_token_id()`, 0.4.9 :143 and 0.5.10 eagle_worker_v2.py:213 `.hot_token_id`.
    Rewritten to `LlamaForCausalLMEagle3`, the `pytorch_model.bin` (opened with weights_only)
    loads every tensor (`llama_eagle3.py:243`)."""
    report = sim((DATA / "layouts" / "eagle-official"), engine)
    assert report.refusal is not None and f"no {missing}:" in report.refusal.message
    assert {k.outcome for k in report.keys} == {"error"}
    assert report.findings[0].code == "UNSUPPORTED_CONFIG"
    [change] = report.config_changes
    assert change.startswith("architectures [LlamaForCausalLM] -> [LlamaForCausalLMEagle3] (")
    assert "models/llama_eagle3.py:196 EntryClass" in change  # the registry's own line
    fixed = report.rewritten
    assert fixed.loads_cleanly and not fixed.with_outcome("dropped_silently")
    qkv = [p for p in fixed.params if p.name.endswith("self_attn.qkv_proj.weight")]
    assert [p.state for p in qkv] == ["loaded"]


@pytest.mark.parametrize(
    ("engine", "said"),
    [("sglang==0.4.6.post1", "Model architectures ['Eagle3LlamaForCausalLM'] are not supported"),
     ("sglang==0.5.10", "Cannot find model module. 'Eagle3LlamaForCausalLM' is not a registered")],
)  # fmt: skip
def test_unknown_eagle3_class_is_refused_by_the_registry(tmp_path, engine, said):
    """vLLM's draft name `Eagle3LlamaForCausalLM` is no SGLang class (models/registry.py: the
    only EAGLE-3 EntryClass is `LlamaForCausalLMEagle3`, models/llama_eagle3.py:290 in 0.5.10).
    Up to 0.4.6.post1 the registry says so (models/registry.py:33); from 0.4.7 its Transformers
    fallback does, finding no such class (0.5.10 model_loader/utils.py:151)."""
    src = DATA / "layouts" / "eagle-official"
    folder = tmp_path / "draft"
    folder.mkdir()
    raw = json.loads((src / "config.json").read_text()) | {
        "architectures": ["Eagle3LlamaForCausalLM"]
    }
    (folder / "config.json").write_text(json.dumps(raw))
    (folder / "pytorch_model.bin").symlink_to(src / "pytorch_model.bin")
    report = sim(folder, engine)
    assert said in report.refusal.message
    assert report.rewritten.loads_cleanly


def test_modelopt_two_layers_before_0_5_12_is_a_value_error(tmp_path):
    """sglang ≤0.5.11 `llama_eagle3.py` __init__ (single midlayer, :130 in 0.4.10): num_hidden_layers != 1 ⇒
    ValueError("EAGLE3 currently only supports 1 layer") (SpecForge#129)."""
    report = sim((DATA / "layouts" / "modelopt-layers"), "sglang==0.5.11")
    assert report.crashed
    assert set(report.errors) == {"ValueError: EAGLE3 currently only supports 1 layer"}


def test_modelopt_midlayer_indexed_dropped_by_legacy_map(tmp_path):
    """sglang 0.5.12 `llama_eagle3.py:306`: substring map midlayer→layers.0 turns
    `midlayer.1.x` into `layers.0.1.x`, which matches nothing ⇒ dropped silently."""
    report = sim((DATA / "layouts" / "modelopt-midlayer"), "sglang==0.5.12")
    dropped = {k.key for k in report.with_outcome("dropped_silently")}
    assert "midlayer.0.self_attn.q_proj.weight" in dropped
    assert "midlayer.1.mlp.down_proj.weight" in dropped
    assert report.param("model.layers.1.self_attn.qkv_proj.weight").state == "left_at_init"


def test_modelopt_layers_two_layer_shapes_0_5_12():
    """sglang 0.5.12 builds `model.layers.{i}` (:180); layer ≥1 attends over H, not 2H (0.5.12
    `models/llama_eagle3.py:56-57`)."""
    report = sim((DATA / "layouts" / "modelopt-layers"), "sglang==0.5.12")
    q1 = report.outcome("layers.1.self_attn.q_proj.weight")
    assert q1.outcome == "loaded" and q1.param == "model.layers.1.self_attn.qkv_proj.weight"
    assert report.param("model.layers.1.self_attn.qkv_proj.weight").shape == (64, 32)
    assert report.param("model.layers.0.self_attn.qkv_proj.weight").shape == (64, 64)


def test_model_prefixed_keys_per_era(tmp_path):
    """`model.`-prefixed keys: 0.4.8 prefixes again (`llama_eagle3.py:183-193`) ⇒ KeyError on
    `model.model.…qkv_proj`; 0.5.10 tries the key as-is first (`:243`) ⇒ loads."""
    keys = {("" if k.startswith(("lm_head", "d2t", "t2d")) else "model.") + k: s
            for k, s in specforge().items()}  # fmt: skip
    folder = write(tmp_path / "pref", keys, FLAT)
    old = sim(folder, "sglang==0.4.8")
    assert old.outcome("model.midlayer.self_attn.q_proj.weight").message == (
        "KeyError: 'model.model.midlayer.self_attn.qkv_proj.weight'"
    )
    assert not sim(folder, "sglang==0.5.10").with_outcome("dropped_silently")


def test_fc_bias_dropped_without_config_bias(tmp_path):
    """sglang ≥0.4.9 builds fc with `bias=config.bias` (0.4.10 `llama_eagle3.py:124`): an
    `fc.bias` tensor without `"bias": true` is dropped silently (the loader keeps no record of
    names it cannot place: 0.4.10 `llama_eagle3.py:202-243`)."""
    keys = specforge() | {"fc.bias": (32,)}
    report = sim(write(tmp_path / "b", keys, FLAT), "sglang==0.5.10")
    assert report.outcome("fc.bias").outcome == "dropped_silently"
    drop = next(f for f in report.findings if f.code == "KEYS_SILENTLY_DROPPED")
    assert drop.severity.name == "WARNING" and not drop.root_cause  # no decoder param at init
    with_bias = sim(write(tmp_path / "b2", keys, FLAT | {"bias": True}), "sglang==0.5.10")
    assert with_bias.outcome("fc.bias").param == "model.fc.bias"


def test_tied_head_dropped(tmp_path):
    """Tied (`tie_word_embeddings: true`): `lm_head` is `model.embed_tokens` and absent from
    named_parameters, so 0.5.10 (`llama_eagle3.py:243`) drops `lm_head.weight` silently."""
    report = sim(write(tmp_path / "t", specforge(), FLAT | {"tie_word_embeddings": True}),
                 "sglang==0.5.10")  # fmt: skip
    assert report.outcome("lm_head.weight").outcome == "dropped_silently"
    assert any(f.code == "TIED_HEAD_DROPPED" for f in report.findings)
    assert all(p.name != "lm_head.weight" for p in report.params)


def test_missing_d2t_per_era(tmp_path):
    """No d2t: 0.4.6.post1 `speculative/eagle_worker.py:121-127` reads hot_token_id ⇒
    AttributeError; ≥0.4.9 (`llama_eagle3.py:215`) hot_token_id=None ⇒ wrong ids (D2T_MISSING)."""
    keys = {k: s for k, s in specforge().items() if k != "d2t"}
    folder = write(tmp_path / "nod2t", keys, FLAT)
    old = sim(folder, "sglang==0.4.6.post1")
    assert old.crashed and "hot_token_id" in next(
        f.title for f in old.findings if f.code == "STARTUP_CRASH"
    )
    new = sim(folder, "sglang==0.5.10")
    d2t = next(f for f in new.findings if f.code == "D2T_MISSING")
    assert d2t.severity.name == "CRITICAL" and not new.crashed


def test_null_draft_vocab_takes_target_head(tmp_path):
    """`draft_vocab_size: null` ≥0.5.2 (0.5.3 `llama_eagle3.py:201-207`,
    `eagle_worker.py:149-154`): head built with vocab_size rows, embed+head from the target."""
    cfg = FLAT | {"draft_vocab_size": None, "vocab_size": 100}
    keys = {k: s for k, s in specforge().items() if k not in ("lm_head.weight", "d2t", "t2d")}
    report = sim(write(tmp_path / "n", keys, cfg), "sglang==0.5.3")
    head = report.param("lm_head.weight")
    assert head.state == "from_target" and head.shape == (128, 32)  # pad64(100)
    assert not any(f.code == "LM_HEAD_MISSING" for f in report.findings)
    before = sim(tmp_path / "n", "sglang==0.5.1")
    assert before.crashed


def test_missing_head_is_critical(tmp_path):
    """No `lm_head.weight` with a draft vocab: the head stays torch.empty (sglang#27829)."""
    keys = {k: s for k, s in specforge().items() if k != "lm_head.weight"}
    report = sim(write(tmp_path / "nh", keys, FLAT), "sglang==0.5.23")
    f = next(f for f in report.findings if f.code == "LM_HEAD_MISSING")
    assert f.severity.name == "CRITICAL" and report.param("lm_head.weight").init == "uninitialized"


def test_shape_mismatch_fails_like_the_weight_loader(tmp_path):
    """`default_weight_loader` asserts equal sizes (0.4.6.post1 `weight_utils.py:535`)."""
    keys = specforge() | {"norm.weight": (31,)}
    report = sim(write(tmp_path / "s", keys, FLAT), "sglang==0.5.10")
    out = report.outcome("norm.weight")
    assert out.outcome == "error" and "AssertionError" in out.message and report.crashed


def test_vocab_padding_and_fc_width_from_eagle_config():
    """embed [pad64(V), H] (0.5.10 `layers/vocab_parallel_embedding.py:43,52-54`); ≥0.5.12 fc
    in-width = len(eagle_config ids)·Ht (0.5.12 `models/llama_eagle3.py:154-165`)."""
    from kit.checkpoint.config import parse_draft_config

    cfg = parse_draft_config(
        FLAT
        | {"vocab_size": 100, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4]}}
    )
    new = {p.name: p for p in engine_params(cfg, "sglang==0.5.12")}
    old = {p.name: p for p in engine_params(cfg, "sglang==0.5.11")}
    assert new["model.embed_tokens.weight"].shape == (128, 32)
    assert new["model.fc.weight"].shape == (32, 128) and old["model.fc.weight"].shape == (32, 96)
    assert "model.fc.bias" not in new and "model.midlayer.hidden_norm.weight" in old


def test_input_norm_only_from_0_5_17(tmp_path):
    """`norm_before_fc` ⇒ `model.input_norm` from 0.5.17 (`llama_eagle3.py:163-170`); in 0.5.16
    the trained input_norm.weight matches nothing and is dropped silently."""
    keys = specforge() | {"input_norm.weight": (96,)}
    folder = write(tmp_path / "in", keys, FLAT | {"norm_before_fc": True})
    assert sim(folder, "sglang==0.5.17").outcome("input_norm.weight").outcome == "loaded"
    assert sim(folder, "sglang==0.5.16").outcome("input_norm.weight").outcome == "dropped_silently"


def test_mla_draft(tmp_path):
    """`Eagle3DeepseekV2ForCausalLM` exists from 0.5.12 (`kimi_k25_eagle3.py:377-450`): it maps
    `^layers.0.` → `midlayer.` (`:397`) and warns "Eagle3 MLA: skipping unexpected weight"
    (`:444`)."""
    cfg = FLAT | {"architectures": ["Eagle3DeepseekV2ForCausalLM"], "q_lora_rank": 16,
                  "kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 8}  # fmt: skip
    keys = {"layers.0.self_attn.q_a_proj.weight": (16, 64), "layers.0.mlp.up_proj.weight": (64, 32),
            "layers.0.verifier_norm.weight": (32,), "d2t": (16,)}  # fmt: skip
    folder = write(tmp_path / "mla", keys, cfg)
    report = sim(folder, "sglang==0.5.12")
    q = report.outcome("layers.0.self_attn.q_a_proj.weight")
    assert (q.param, q.shard) == (
        "model.midlayer.self_attn.fused_qkv_a_proj_with_mqa.weight",
        "q_a",
    )
    warned = report.outcome("layers.0.verifier_norm.weight")
    assert warned.outcome == "warned" and "Eagle3 MLA: skipping unexpected weight" in warned.message
    assert sim(folder, "sglang==0.5.10").crashed


def test_version_outside_range_names_it(sample_dir):
    with pytest.raises(KitError, match=r"0\.4\.4\.post2 … 0\.5\.23"):
        sim(sample_dir, "sglang==0.6.0")


def test_llama4_mlp_width_from_0_4_9():
    """0.4.9 rebuilt the draft MLP with `intermediate_size_mlp` for `llama4_text` (absent from
    0.4.8 `models/llama_eagle3.py`; 0.5.10 `:64-67`)."""
    from kit.checkpoint.config import parse_draft_config

    cfg = parse_draft_config(FLAT | {"model_type": "llama4_text", "intermediate_size_mlp": 48})
    new = {p.name: p.shape for p in engine_params(cfg, "sglang==0.4.9")}
    old = {p.name: p.shape for p in engine_params(cfg, "sglang==0.4.8")}
    assert new["model.midlayer.mlp.down_proj.weight"] == (32, 48)
    assert old["model.midlayer.mlp.down_proj.weight"] == (32, 64)


# --- 0.5.12 and later: multi-layer drafts, more aux states -----------------------------------------


def test_0_5_12_later_layers_open_with_hidden_norm(tmp_path):
    """sglang 0.5.12 `models/llama_eagle3.py:93-100`: layers ≥ 1 run `hidden_norm(h, residual)`;
    their `input_layernorm` comes from the LlamaDecoderLayer base class, is loaded and never
    used. A speculators draft trains layer 1's `input_layernorm` and has no `layers.1.hidden_norm`:
    the norm the engine uses stays ones, the trained one is ignored."""
    folder = speculators_multilayer(tmp_path / "two")
    report = sim(folder, "sglang==0.5.12").rewritten
    unused = report.param("model.layers.1.input_layernorm.weight")
    assert unused.state == "loaded" and "llama_eagle3.py:93-100" in unused.unused
    used = report.param("model.layers.1.hidden_norm.weight")
    assert used.state == "left_at_init" and used.init == "ones" and not used.unused
    f = next(f for f in report.findings if f.code == "TRAINED_NORM_UNUSED")
    assert f.severity.name == "ERROR" and "model.layers.1.hidden_norm.weight" in f.evidence[0]
    assert f.data["key_renames"] == {
        "layers.1.input_layernorm.weight": "layers.1.hidden_norm.weight"
    }
    # the norm it covers is not reported again as an ordinary parameter left at init
    assert not any(f.code == "PARAM_LEFT_AT_INIT" for f in report.findings)


def test_0_5_12_fc_width_from_eagle_config_ids(tmp_path):
    """sglang 0.5.12 `llama_eagle3.py:154-165`: fc in-width = num_aux_hidden_states, else
    len(eagle_config ids), else 3 — so the config rewritten with the draft's four ids in
    eagle_config loads a [H, 4·Ht] fc; 0.5.11 (:138-142 `hidden_size_in * 3`) cannot."""
    folder = speculators_multilayer(tmp_path / "four", layers=1)
    new = sim(folder, "sglang==0.5.12").rewritten
    assert new.outcome("fc.weight").outcome == "loaded" and new.loads_cleanly
    old = sim(folder, "sglang==0.5.11").rewritten
    assert (
        old.outcome("fc.weight").outcome == "error"
        and "AssertionError" in old.outcome("fc.weight").message
    )


def test_fix_for_0_5_12_on_a_multilayer_draft_with_four_aux_states(tmp_path):
    """`fix --for sglang==0.5.12` on a 2-layer speculators draft with 4 aux states: the config
    becomes SGLang's flat form (4 ids in eagle_config) and layer 1's trained input_layernorm is
    renamed to the hidden_norm that layer opens with; afterwards every tensor loads, and the
    finding the fix answers is gone (and no new one appears)."""
    from kit.load.rewrite import plan_fix, verify_output, write_fixed

    folder = speculators_multilayer(tmp_path / "ml")
    ck = open_checkpoint(folder)
    plan = plan_fix(ck, load_draft_config(folder), "sglang==0.5.12")
    assert plan.renames == {"layers.1.input_layernorm.weight": "layers.1.hidden_norm.weight"}
    assert len(plan.config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]) == 4
    out = write_fixed(ck, plan, tmp_path / "fixed")
    after = verify_output(out, "sglang==0.5.12")
    assert after.loads_cleanly
    before_codes = {f.code for f in sim(folder, "sglang==0.5.12").rewritten.findings}
    after_codes = {f.code for f in after.findings}
    assert "TRAINED_NORM_UNUSED" in before_codes and "TRAINED_NORM_UNUSED" not in after_codes
    assert after_codes <= before_codes
