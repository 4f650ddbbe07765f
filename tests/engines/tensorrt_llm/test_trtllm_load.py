"""TensorRT-LLM 1.2.0rc2 load-weights replay, rule by rule.

Each test names the rule (a row or function of `kit.engines.tensorrt_llm`) and the source it
reproduces: `_torch/models/modeling_speculative.py` at the commit whose version.py is 1.2.0rc2
(cited as SPEC:line), and the module-walking loader of `modeling_utils.py`. Checkpoints are the
bundled layouts of every trainer, or real safetensors files written in `tmp_path`.
"""

from __future__ import annotations

import json

import pytest
from tiny_layouts import DATA, FLAT, LAYER, sim, write

from kit.checkpoint.config import parse_draft_config
from kit.engines import parse_engine, pick
from kit.engines.tensorrt_llm import acceptance, config, load, params
from kit.errors import KitError
from kit.load.replay import engine_params

TRT = "tensorrt_llm==1.2.0rc2"
SAMPLE = DATA / "samples" / "speculators-0.9.0-tiny"
LAYOUTS = DATA / "layouts"
SPECULATORS = [
    SAMPLE,
    LAYOUTS / "speculators-trainer",
    LAYOUTS / "speculators-converter",
    DATA / "pair" / "draft",
]


def midlayer_keys(layers: int = 1, d2t: bool = True) -> dict[str, tuple[int, ...]]:
    """TensorRT-LLM's own form: `midlayer.*` (one layer) or `midlayer.{i}.*`, every layer a
    full EAGLE-3 layer (2H-wide q/k/v, both input norms)."""
    keys: dict[str, tuple[int, ...]] = {}
    for i in range(layers):
        prefix = "midlayer." if layers == 1 else f"midlayer.{i}."
        keys |= {prefix + k: s for k, s in LAYER.items()}
    keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    keys |= {"d2t": (16,), "t2d": (64,)} if d2t else {}
    return keys


def flat(**changes) -> dict:
    return {**FLAT, "architectures": ["LlamaForCausalLM"], **changes}


def codes(report) -> dict:
    return {f.code: f for f in report.findings}


@pytest.mark.parametrize("layout", ["specforge", "eagle-official"])
def test_midlayer_checkpoints_load_quietly(layout):
    """SPEC:301-316 prefixes `model.`; the module walk fills `model.midlayer.*` (one layer,
    SPEC:176-177), `model.d2t` (SPEC:183-186, draft vocab 16 < 64), fc and norm; `t2d` is read by
    no module; the embedding is the target's (SPEC:205-206, :320-321). No finding at all."""
    report = sim(LAYOUTS / layout, TRT)
    assert report.loads_cleanly and report.findings == []
    d2t = report.outcome("d2t")
    assert (d2t.outcome, d2t.param) == ("consumed", "model.d2t")
    assert report.outcome("t2d").outcome == "ignored"
    assert report.param("model.embed_tokens.weight").state == "from_target"
    assert report.outcome("midlayer.self_attn.k_proj.weight").shard == "k"


@pytest.mark.parametrize("folder", SPECULATORS, ids=lambda p: p.parent.name + "/" + p.name)
def test_speculators_config_refused_and_layers_0_not_read(folder):
    """`SPECULATORS_CONFIG`: ModelConfig.from_pretrained is AutoConfig (SPEC:510), which has no
    model_type to go by. Rewritten flat, the `layers.0.*` keys become `model.layers.0.*`, which
    no module asks for (`load.WALK`), and `model.midlayer` gets no tensor
    (`load.MISSING_TENSOR`): the load fails."""
    report = sim(folder, TRT)
    assert report.refusal is not None and "Unrecognized model" in report.refusal.message
    assert report.findings[0].code == "UNSUPPORTED_CONFIG" and report.findings[0].root_cause
    rewritten = report.rewritten
    assert rewritten.outcome("layers.0.mlp.up_proj.weight").outcome == "dropped_silently"
    assert rewritten.crashed and "model.midlayer" in codes(rewritten)["STARTUP_CRASH"].title
    assert codes(rewritten)["KEYS_SILENTLY_DROPPED"].root_cause
    # the frozen copy of the target embedding is not read, and the server that skips it fails
    embed = [k.outcome for k in rewritten.keys if k.key == "embed_tokens.weight"]
    assert embed == ([] if "converter" in folder.name else ["error"])  # the server never starts


def test_fix_writes_the_form_it_reads(tmp_path):
    """`rewritten_config` + the `midlayer` rename: `fix --for` writes a flat LlamaForCausalLM
    config with draft_vocab_size and `midlayer.*` keys, which loads every tensor."""
    from kit.checkpoint.config import load_draft_config
    from kit.checkpoint.files import open_checkpoint
    from kit.load.rewrite import plan_fix, write_fixed

    ck, cfg = open_checkpoint(SAMPLE), load_draft_config(SAMPLE)
    plan = plan_fix(ck, cfg, TRT)
    assert plan.renames["layers.0.mlp.up_proj.weight"] == "midlayer.mlp.up_proj.weight"
    assert any("eagle3_layers_to_capture={1, 15, 28}" in c for c in plan.config_changes)
    out = write_fixed(ck, plan, tmp_path / "fixed")
    written = json.loads((out / "config.json").read_text())
    assert written["architectures"] == ["LlamaForCausalLM"] and written["draft_vocab_size"] == 16
    assert "transformer_layer_config" not in written
    assert sim(out, TRT).loads_cleanly


def test_multi_layer_in_its_own_form_loads(tmp_path):
    """`params.MIDLAYER_LIST` (SPEC:171-177): two layers are `model.midlayer.{0,1}`, each an
    Eagle3DecoderLayer with a 2H-wide qkv (SPEC:54-66) and its own input_layernorm/hidden_norm."""
    folder = write(tmp_path / "d", midlayer_keys(layers=2), flat(num_hidden_layers=2))
    report = sim(folder, TRT)
    assert report.loads_cleanly
    qkv = report.param("model.midlayer.1.self_attn.qkv_proj.weight")
    assert qkv.shape == (64, 64) and qkv.missing_shards == []
    assert report.param("model.midlayer.1.hidden_norm.weight").state == "loaded"


def test_modelopt_multi_layer_drafts_fail(tmp_path):
    """ModelOpt's later layers are next_layer_regular (H-wide q/k/v, no input norms): this
    release builds every layer with a 2H qkv, so `midlayer.1` q/k/v do not fit (`SHAPE_CHECK`);
    `layers.{i}.*` is read by no module. No rename helps: `fix` refuses with the reason."""
    from kit.checkpoint.config import load_draft_config
    from kit.checkpoint.files import open_checkpoint
    from kit.load.rewrite import plan_fix

    indexed = sim(LAYOUTS / "modelopt-midlayer", TRT)
    assert indexed.outcome("midlayer.1.self_attn.q_proj.weight").outcome == "error"
    assert "64" in codes(indexed)["STARTUP_CRASH"].evidence[0]
    flat_layers = sim(LAYOUTS / "modelopt-layers", TRT)
    assert flat_layers.outcome("layers.1.mlp.up_proj.weight").outcome == "dropped_silently"
    assert flat_layers.crashed
    folder = LAYOUTS / "modelopt-layers"
    with pytest.raises(KitError, match="no rename makes every tensor load"):
        plan_fix(open_checkpoint(folder), load_draft_config(folder), TRT)


def test_d2t_only_for_a_smaller_draft_vocab(tmp_path):
    """SPEC:183-186: `d2t` exists only when draft_vocab_size != vocab_size. Missing with a
    smaller vocab, the `model` module's copy fails (`unloaded_failure`); with the full vocab a
    d2t key is read by no module, harmlessly."""
    small = sim(write(tmp_path / "a", midlayer_keys(d2t=False), flat()), TRT)
    assert small.crashed and "loading model fails" in codes(small)["STARTUP_CRASH"].title
    full_cfg = flat(draft_vocab_size=64)
    full = sim(
        write(tmp_path / "b", {**midlayer_keys(), "lm_head.weight": (64, 32)}, full_cfg), TRT
    )
    assert full.loads_cleanly and full.outcome("d2t").outcome == "ignored"
    assert "model.d2t" not in {p.name for p in full.params}


def test_no_lm_head_takes_the_targets(tmp_path):
    """SPEC:307-313: without an lm_head key the head is skipped, then SPEC:322-323 uses the
    target's; with one, the draft keeps its own."""
    keys = {k: s for k, s in midlayer_keys().items() if k != "lm_head.weight"}
    report = sim(write(tmp_path / "d", keys, flat()), TRT)
    assert report.loads_cleanly
    assert report.param("lm_head.weight").state == "from_target"
    own = sim(write(tmp_path / "e", midlayer_keys(), flat()), TRT)
    assert own.param("lm_head.weight").state == "loaded"


def test_wider_target_needs_the_drafts_own_embedding(tmp_path):
    """SPEC:188-206: with target_hidden_size != hidden_size the draft builds embed_tokens (and fc
    takes 3 × target width, SPEC:164-169); a checkpoint without one fails the load."""
    cfg = flat(target_hidden_size=64)
    keys = {**midlayer_keys(), "fc.weight": (32, 192)}
    missing = sim(write(tmp_path / "a", keys, cfg), TRT)
    assert missing.crashed and "model.embed_tokens" in codes(missing)["STARTUP_CRASH"].title
    own = sim(write(tmp_path / "b", {**keys, "embed_tokens.weight": (64, 32)}, cfg), TRT)
    assert own.loads_cleanly and own.param("model.embed_tokens.weight").state == "loaded"


def test_fc_width_is_three_target_states_whatever_the_draft_says(tmp_path):
    """`config.NUM_CAPTURE_LAYERS`: fc is sized by the speculative config's capture count (3
    by default), not by the draft's ids: a draft trained on 4 states does not fit."""
    cfg = flat(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 8, 16, 28]})
    folder = write(tmp_path / "d", {**midlayer_keys(), "fc.weight": (32, 128)}, cfg)
    report = sim(folder, TRT)
    assert report.outcome("fc.weight").outcome == "error"
    assert config.num_aux(parse_draft_config(cfg), parse_engine(TRT)) == 3


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"draft_vocab_size": None}, "has no attribute 'draft_vocab_size'"),
        ({"target_hidden_size": None}, "NoneType"),
        ({"tie_word_embeddings": True}, "tied lm_head"),
    ],
)
def test_constructor_failures(tmp_path, changes, message):
    """`constructor_failure`: SPEC:265 reads draft_vocab_size as an attribute; SPEC:159-169
    tests `hasattr(config, 'target_hidden_size')`, so a JSON null sizes fc from None; a tied
    head needs an embedding the draft leaves None (SPEC:205-206)."""
    cfg = flat(**changes)
    if changes.get("draft_vocab_size", 16) is None:
        del cfg["draft_vocab_size"]
    report = sim(write(tmp_path / "d", midlayer_keys(), cfg), TRT)
    assert report.crashed and message in codes(report)["STARTUP_CRASH"].title


def test_norm_flags_are_not_honoured(tmp_path):
    """`config.honours` (SPEC:143-206 reads no norm flag): a draft trained with norm_before_fc
    runs without it, and its input_norm.weight is read by no module: a trained module skipped,
    a root cause."""
    cfg = flat(eagle_config={"norm_before_fc": True})
    folder = write(tmp_path / "d", {**midlayer_keys(), "input_norm.weight": (96,)}, cfg)
    report = sim(folder, TRT)
    assert report.outcome("input_norm.weight").outcome == "dropped_silently"
    skipped = codes(report)["TRAINED_MODULE_SKIPPED"]
    assert skipped.root_cause and skipped.data["modules"] == {
        "norm_before_fc": ["input_norm.weight"]
    }


def test_model_prefixed_keys_are_not_read(tmp_path):
    """SPEC:301-309 prefixes every key again: `model.fc.weight` becomes `model.model.fc.weight`,
    which no module asks for (`load.WALK`), and fc gets no tensor."""
    keys = {"model." + k if k != "lm_head.weight" else k: s for k, s in midlayer_keys().items()}
    report = sim(write(tmp_path / "d", keys, flat()), TRT)
    assert report.outcome("model.fc.weight").outcome == "dropped_silently" and report.crashed


def test_param_names_follow_the_module_tree():
    """`engine_params`: names and shapes of the module tree (SPEC:143-206, :256-271)."""
    cfg = parse_draft_config(flat(num_hidden_layers=2))
    names = {p.name: p for p in engine_params(cfg, TRT)}
    assert names["model.midlayer.0.self_attn.qkv_proj.weight"].shape == (64, 64)
    assert names["model.midlayer.1.input_layernorm.weight"].shape == (32,)
    assert names["model.fc.weight"].shape == (32, 96) and names["model.d2t"].shape == (16,)
    assert params.layer_prefixes(parse_draft_config(flat()), parse_engine(TRT)) == [
        "model.midlayer."
    ]


def test_releases_read_and_refused():
    """Only the release read is modelled: 1.2.0rc2 (a published pre-release) parses; the final
    1.2.0 was not read and is outside the range."""
    assert str(parse_engine(TRT).version) == "1.2.0rc2"
    with pytest.raises(KitError, match="outside the supported range"):
        parse_engine("tensorrt_llm==1.2.0")


def test_stop_counting_counts_past_the_stop():
    """`acceptance.STOP_COUNTING`: MTPSampler.update_requests (the one-model default) stops
    adding tokens at the stop criteria but sets py_num_accepted_draft_tokens = num_new_tokens - 1."""
    row = pick(acceptance.STOP_COUNTING, parse_engine(TRT))
    assert row.value is True and "num_new_tokens - 1" in row.source


def test_rows_cite_the_release_read():
    """Every row names the file it reproduces and the release (or the stored copy) it was read in."""
    rows = [config.SPECULATORS_CONFIG[0], params.MIDLAYER_LIST, load.WALK, load.MISSING_TENSOR]
    assert all("tensorrt_llm/" in r.source for r in rows)
    assert "1.2.0rc2" in config.SPECULATORS_CONFIG[0].source
