"""LMDeploy's config acceptance and load-weights replay, pinned to the releases read.

Each test names the LMDeploy release(s) and the file:line inside the wheel's `lmdeploy/` whose
behaviour it reproduces; `llama_eagle3.py` is the same in 0.11.0, 0.15.0 and 0.18.0 (lines one
later from 0.15.0). Checkpoints are the bundled trainer layouts or real safetensors files written
in `tmp_path`.
"""

from __future__ import annotations

import pytest
from tiny_layouts import DATA, FLAT, LAYER, sim, speculators_multilayer, write

from kit.checkpoint.config import parse_draft_config
from kit.findings import Severity
from kit.load.replay import engine_params

READ = ("lmdeploy==0.11.0", "lmdeploy==0.15.0", "lmdeploy==0.18.0")
LAYOUTS = DATA / "layouts"
LLAMA = FLAT | {"architectures": ["LlamaForCausalLM"]}  # the EAGLE-official name


def midlayer(**extra: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """EAGLE-official / SpecForge keys: `midlayer.*`, d2t + t2d, no embed_tokens."""
    keys = {"midlayer." + k: s for k, s in LAYER.items()}
    keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    return keys | {"d2t": (16,), "t2d": (64,)} | extra


def fates(report) -> dict[str, tuple[str, str | None, object]]:
    return {k.key: (str(k.outcome), k.param, k.shard) for k in report.keys}


# --- the healthy form ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", READ)
def test_eagle_official_bin_loads_quietly(engine):
    """EAGLE official (`LlamaForCausalLM`, `midlayer.*`, pytorch_model.bin) is the form LMDeploy
    reads: configurations/llama.py:21 renames it Eagle3LlamaForCausalLM, load_weights
    (llama_eagle3.py:277-317 in 0.11.0) loads every tensor, and with no embed_tokens key the
    proposer takes the target's (spec_decode/proposers/eagle3.py:30-33). Nothing to report."""
    r = sim(LAYOUTS / "eagle-official", engine)
    assert r.loads_cleanly and r.findings == []
    f = fates(r)
    assert f["d2t"] == ("consumed", "draft_id_to_target_id", None)
    assert f["t2d"][0] == "ignored"
    assert f["midlayer.self_attn.k_proj.weight"] == (
        "loaded", "model.midlayer.self_attn.qkv_proj.weight", "k"
    )  # fmt: skip
    up = f["midlayer.mlp.up_proj.weight"]
    assert up == ("loaded", "model.midlayer.mlp.gate_up_proj.weight", 1)
    assert f["lm_head.weight"] == ("loaded", "lm_head.weight", None)
    assert r.param("model.embed_tokens.weight").state == "from_target"


def test_own_embedding_is_kept(tmp_path):
    """A checkpoint with embed_tokens sets include_embed_tokens (llama_eagle3.py:298-299 in
    0.11.0), so the proposer keeps the draft's own embedding (proposers/eagle3.py:30)."""
    r = sim(write(tmp_path / "e", midlayer(**{"embed_tokens.weight": (64, 32)}), LLAMA),
            "lmdeploy==0.18.0")  # fmt: skip
    embed = r.param("model.embed_tokens.weight")
    assert (embed.state, embed.loaded_from) == ("loaded", ["embed_tokens.weight"])
    assert r.findings == []


def test_eagle3_class_name_is_accepted_as_is(tmp_path):
    """`Eagle3LlamaForCausalLM` is in the model map itself (models/module_map.py:258 in 0.11.0,
    :329 in 0.18.0), so a config already carrying the renamed class starts too."""
    cfg = FLAT | {"architectures": ["Eagle3LlamaForCausalLM"]}
    for engine in READ:
        assert sim(write(tmp_path / "c", midlayer(), cfg), engine).loads_cleanly


# --- what stops it at start-up -------------------------------------------------------------------


@pytest.mark.parametrize(
    "folder", ["speculators-trainer", "speculators-converter", "../samples/speculators-0.9.0-tiny",
               "../pair/draft"],
)  # fmt: skip
def test_speculators_configs_stop_with_the_release_s_exception(folder):
    """No top-level model_type: 0.11.0 calls AutoConfig (pytorch/config.py:325) -> ValueError;
    0.15.0 / 0.18.0 fall back to a bare PretrainedConfig (hf_configs/__init__.py:36-39 / :39-42)
    and the default builder reads its missing hidden_size (configurations/default.py:18).
    Rewritten as a flat LlamaForCausalLM config the keys still fail: `layers.0.*` has no
    parameter (`params_dict[name]`, llama_eagle3.py:316 in 0.11.0) -> KeyError."""
    path = LAYOUTS / folder
    r11 = sim(path, "lmdeploy==0.11.0")
    assert r11.refusal.message.startswith("ValueError: Unrecognized model in")
    for engine in ("lmdeploy==0.15.0", "lmdeploy==0.18.0"):
        r = sim(path, engine)
        assert r.refusal.message == (
            "AttributeError: 'PretrainedConfig' object has no attribute 'hidden_size'"
        )
        assert {k.outcome for k in r.keys} == {"error"}
        assert r.findings[0].code == "UNSUPPORTED_CONFIG"
        layer = r.rewritten.outcome("layers.0.hidden_norm.weight")
        assert layer.message == "KeyError: 'model.layers.0.hidden_norm.weight'"
        assert r.rewritten.outcome("fc.weight").param == "model.fc.weight"


@pytest.mark.parametrize("folder", ["specforge", "modelopt-midlayer", "modelopt-layers"])
def test_eagle3_suffix_architecture_has_no_model_class(folder):
    """`LlamaForCausalLMEagle3` (SpecForge, ModelOpt) matches no config builder, keeps its name,
    and `_get_model_class` finds no rewrite (models/patch.py:185 in 0.11.0, :196 from 0.15.0)."""
    for engine in READ:
        r = sim(LAYOUTS / folder, engine)
        assert r.refusal.message == (
            "RuntimeError: Can not found rewrite for architectures: ['LlamaForCausalLMEagle3']"
        )
        assert "models/patch.py" in r.refusal.source


def test_specforge_loads_once_renamed_but_modelopt_has_two_layers():
    """Renamed LlamaForCausalLM, SpecForge's one midlayer loads; ModelOpt's two-layer exports stop
    in the constructor: `ValueError('eagle3 only supports 1 decode layer')` (llama_eagle3.py:171-172
    in 0.11.0, :172-173 in 0.15.0 / 0.18.0)."""
    assert sim(LAYOUTS / "specforge", "lmdeploy==0.15.0").rewritten.loads_cleanly
    for folder in ("modelopt-midlayer", "modelopt-layers"):
        rewritten = sim(LAYOUTS / folder, "lmdeploy==0.15.0").rewritten
        assert set(rewritten.errors) == {"ValueError: eagle3 only supports 1 decode layer"}


def test_multi_layer_speculators_draft_fails_in_the_constructor(tmp_path):
    """A 2-layer speculators draft: the same constructor ValueError, before any key is read."""
    r = sim(speculators_multilayer(tmp_path / "two", aux_ids=(2, 16, 29)), "lmdeploy==0.18.0")
    crash = next(f for f in r.rewritten.findings if f.code == "STARTUP_CRASH")
    assert "eagle3 only supports 1 decode layer" in crash.title and crash.source.endswith(
        ":172-173 (0.15.0, 0.18.0)"
    )


def test_config_without_or_with_null_fields_fails_in_the_constructor(tmp_path):
    """`config.draft_vocab_size` is read without a default for lm_head (llama_eagle3.py:177-181
    in 0.11.0): absent, an AttributeError. `getattr(config, 'target_hidden_size', hidden)`
    (:96) returns an explicit null, and `None * 3` sizes fc: a TypeError."""
    no_vocab = {k: v for k, v in LLAMA.items() if k != "draft_vocab_size"}
    r = sim(write(tmp_path / "v", midlayer(), no_vocab), "lmdeploy==0.11.0")
    assert r.errors[0] == "AttributeError: 'LlamaConfig' object has no attribute 'draft_vocab_size'"
    null = write(tmp_path / "t", midlayer(), LLAMA | {"target_hidden_size": None})
    r = sim(null, "lmdeploy==0.18.0")
    assert r.errors[0].startswith("TypeError: unsupported operand type(s) for *: 'NoneType'")


# --- keys LMDeploy has no parameter for ----------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "shape", "param"),
    [
        ("fc_norm.0.weight", (32,), "model.fc_norm.0.weight"),
        ("input_norm.weight", (96,), "model.input_norm.weight"),
        ("fc.bias", (32,), "model.fc.bias"),
        ("midlayer.self_attn.q_proj.bias", (32,), "model.midlayer.self_attn.qkv_proj.bias"),
        ("layers.0.mlp.down_proj.weight", (32, 64), "model.layers.0.mlp.down_proj.weight"),
    ],
)
def test_unknown_keys_are_a_startup_keyerror(tmp_path, key, shape, param):
    """Every name not skipped goes through `params_dict[name]` (llama_eagle3.py:312,316 in
    0.11.0): no fc_norm / input_norm / fc bias / qkv bias exists (qkv_proj is built bias=False,
    :36-46), and no rename maps layers.0 to midlayer."""
    for engine in READ:
        r = sim(write(tmp_path / "k", midlayer(**{key: shape}), LLAMA), engine)
        assert r.outcome(key).message == f"KeyError: '{param}'"
        assert r.crashed and any(f.code == "STARTUP_CRASH" for f in r.findings)


def test_model_prefixed_keys_get_a_second_prefix(tmp_path):
    """`model.` is prefixed to every name but lm_head.weight (llama_eagle3.py:296-297 in 0.11.0),
    so HF-style `model.fc.weight` looks up `model.model.fc.weight`."""
    keys = {("" if k.startswith(("lm_head", "d2t", "t2d")) else "model.") + k: s
            for k, s in midlayer().items()}  # fmt: skip
    r = sim(write(tmp_path / "p", keys, LLAMA), "lmdeploy==0.15.0")
    assert r.outcome("model.fc.weight").message == "KeyError: 'model.model.fc.weight'"


def test_rotary_buffers_and_t2d_are_skipped(tmp_path):
    """t2d and rotary_emb.inv_freq / cos_cached / sin_cached are `continue`d (llama_eagle3.py:
    300-305 in 0.11.0), whatever their shape."""
    extra = {"midlayer.self_attn.rotary_emb.inv_freq": (4,), "midlayer.rotary_emb.cos_cached": (9,)}
    r = sim(write(tmp_path / "r", midlayer(**extra), LLAMA), "lmdeploy==0.11.0")
    assert {r.outcome(k).outcome for k in [*extra, "t2d"]} == {"ignored"}
    assert r.loads_cleanly


def test_four_aux_states_fail_the_fc_shape_assert(tmp_path):
    """fc is built for exactly 3 target states (llama_eagle3.py:96-102), so an fc trained on 4
    fails default_weight_loader's size assert (weight_loader/model_weight_loader.py:33)."""
    r = sim(write(tmp_path / "f", midlayer(**{"fc.weight": (32, 128)}), LLAMA), "lmdeploy==0.18.0")
    fc = r.outcome("fc.weight")
    assert fc.outcome == "error" and "AssertionError" in fc.message and "[32, 96]" in fc.message
    assert "model_weight_loader.py:28-35" in fc.source


# --- silent faults -------------------------------------------------------------------------------


def test_tied_head_is_skipped_and_left_uninitialised(tmp_path):
    """`tie_word_embeddings: true` skips lm_head.weight (llama_eagle3.py:306-307 in 0.11.0) but
    nothing ties the head to the embedding: it stays torch.empty, silently. LM_HEAD_MISSING says
    so (not TIED_HEAD_DROPPED, which would claim the embedding is used)."""
    tied = write(tmp_path / "t", midlayer(), LLAMA | {"tie_word_embeddings": True})
    r = sim(tied, "lmdeploy==0.11.0")
    assert not r.crashed and r.outcome("lm_head.weight").outcome == "ignored"
    head = r.param("lm_head.weight")
    assert (head.state, head.init) == ("left_at_init", "uninitialized")
    codes = {f.code: f for f in r.findings}
    assert "TIED_HEAD_DROPPED" not in codes
    assert codes["LM_HEAD_MISSING"].severity == Severity.CRITICAL
    assert "tie_word_embeddings: false" in codes["LM_HEAD_MISSING"].fix


def test_missing_head_is_never_borrowed(tmp_path):
    """No lm_head.weight: LMDeploy never shares the target's head (proposers/eagle3.py replaces
    only embed_tokens), so it stays uninitialised; the fix does not suggest borrowing."""
    keys = {k: s for k, s in midlayer().items() if k != "lm_head.weight"}
    r = sim(write(tmp_path / "h", keys, LLAMA), "lmdeploy==0.18.0")
    found = next(f for f in r.findings if f.code == "LM_HEAD_MISSING")
    assert r.param("lm_head.weight").state == "left_at_init" and "never borrows" in found.fix


def test_missing_d2t_maps_every_draft_token_to_id_0_even_at_full_vocab(tmp_path):
    """draft_id_to_target_id starts as zeros (llama_eagle3.py:182-185) and the proposer indexes
    it (proposers/eagle3.py:62 in 0.11.0): without d2t every drafted token is target id 0,
    even when the draft vocab is the target's. vLLM, whose zero map is an identity offset, is
    quiet on the same checkpoint."""
    keys = {k: s for k, s in midlayer(**{"lm_head.weight": (64, 32)}).items() if k != "d2t"}
    folder = write(tmp_path / "n", keys, LLAMA | {"draft_vocab_size": 64})
    r = sim(folder, "lmdeploy==0.15.0")
    d2t = next(f for f in r.findings if f.code == "D2T_MISSING")
    assert d2t.severity == Severity.CRITICAL and d2t.root_cause and "target id 0" in d2t.title
    assert not any(f.code == "D2T_MISSING" for f in sim(folder, "vllm==0.11.2").findings)


def test_norm_before_residual_is_not_implemented(sample_dir):
    """The midlayer keeps the state before hidden_norm as the residual (llama_eagle3.py:59), and
    no release reads the flag: the sample, trained with norm_before_residual, runs otherwise."""
    rewritten = sim(sample_dir, "lmdeploy==0.18.0").rewritten
    flag = next(f for f in rewritten.findings if f.code == "TRAINED_FLAG_IGNORED")
    assert flag.data["flags"] == {"norm_before_residual": {"trained": True, "runs": False}}


def test_param_table_has_no_padding_and_a_three_state_fc():
    """Parameter names / shapes of Eagle3LlamaForCausalLM: embed of vocab_size rows and head of
    draft_vocab_size rows, both unpadded (nn.Embedding :88-92, build_rowwise_linear :177-181),
    one `model.midlayer`, fc (H, 3·Ht) without bias (:97-103) even when the config lists 4 ids."""
    cfg = parse_draft_config(
        LLAMA | {"vocab_size": 100, "target_hidden_size": 48,
                 "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4]}}
    )  # fmt: skip
    p = {s.name: s for s in engine_params(cfg, "lmdeploy==0.18.0")}
    assert p["model.embed_tokens.weight"].shape == (100, 32)
    assert p["lm_head.weight"].shape == (16, 32) and p["draft_id_to_target_id"].shape == (16,)
    assert p["model.fc.weight"].shape == (32, 144) and "model.fc.bias" not in p
    assert p["model.midlayer.self_attn.qkv_proj.weight"].shape == (64, 64)
    assert p["model.fc.weight"].init == "uninitialized" and p["model.norm.weight"].init == "ones"
    assert not any(".layers." in n for n in p)
