"""Trainer-format detection on every bundled layout, key layouts and rename plans."""

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.checkpoint.formats import (
    LAYERS,
    MIDLAYER,
    MIDLAYER_INDEXED,
    MODEL_PREFIXED,
    detect_format,
    detect_layout,
    rename_plan,
)
from kit.errors import KitError

ROOT = Path(__file__).resolve().parent.parent
LAYOUTS = ROOT / "data" / "layouts"

EXPECTED = {
    "speculators-trainer": LAYERS,
    "speculators-converter": LAYERS,
    "specforge": MIDLAYER,
    "eagle-official": MIDLAYER,
    "modelopt-midlayer": MIDLAYER_INDEXED,
    "modelopt-layers": LAYERS,
}


@pytest.mark.parametrize("layout", sorted(EXPECTED))
def test_detects_each_bundled_layout(layout):
    ck = open_checkpoint(LAYOUTS / layout)
    guess = detect_format(ck, load_draft_config(LAYOUTS / layout))
    assert (guess.name, guess.layout) == (layout, EXPECTED[layout])
    assert guess.candidates == (layout,)
    assert guess.confidence == 1.0
    assert not [e for e in guess.evidence if e.startswith("NOT:")]


def test_every_layout_folder_is_covered():
    folders = {p.name for p in LAYOUTS.iterdir() if p.is_dir() and p.name != "targets"}
    assert folders == set(EXPECTED)


def test_real_speculators_sample(sample_dir):
    guess = detect_format(open_checkpoint(sample_dir), load_draft_config(sample_dir))
    assert guess.name == "speculators-trainer" and guess.layout == LAYERS
    assert "embed_tokens present" in guess.evidence


def test_incident_rename_shows_as_failed_claim(tmp_path, sample_dir):
    """The incident's fix renamed layers.0. -> midlayer. in a speculators checkpoint: still the
    speculators trainer's output, but the layout claim no longer holds. Only the layout speaks
    for SpecForge; architecture, config and embed_tokens rule it out."""
    from safetensors.torch import load_file

    state = load_file(sample_dir / "model.safetensors")
    plan = rename_plan(state, MIDLAYER)
    save_file({plan.get(k, k): v for k, v in state.items()}, str(tmp_path / "model.safetensors"))
    ck = open_checkpoint(tmp_path / "model.safetensors")
    guess = detect_format(ck, load_draft_config(sample_dir))
    assert guess.name == "speculators-trainer" and guess.layout == MIDLAYER
    assert guess.candidates == ("speculators-trainer",)
    assert "NOT: decoder-layer keys in layout layers" in guess.evidence
    assert guess.confidence == pytest.approx(4 / 5)


def test_without_config_keys_still_decide(tmp_path):
    ck = open_checkpoint(LAYOUTS / "modelopt-midlayer")
    guess = detect_format(ck, None)
    assert guess.layout == MIDLAYER_INDEXED and guess.name == "modelopt-midlayer"
    assert (
        "UNKNOWN (no config.json): architectures = Eagle3DeepseekV2ForCausalLM | LlamaForCausalLMEagle3"
        in (guess.evidence)
    )


def test_unrelated_checkpoint_is_unknown(tmp_path):
    save_file({"encoder.w": torch.zeros(2)}, str(tmp_path / "model.safetensors"))
    guess = detect_format(open_checkpoint(tmp_path), None)
    assert guess.name == "unknown" and guess.layout is None


def test_detect_layout():
    assert detect_layout(["layers.0.mlp.up_proj.weight", "fc.weight"]) == LAYERS
    assert detect_layout(["midlayer.mlp.up_proj.weight"]) == MIDLAYER
    assert detect_layout(["midlayer.1.mlp.up_proj.weight"]) == MIDLAYER_INDEXED
    assert detect_layout(["model.layers.0.mlp.up_proj.weight", "lm_head.weight"]) == MODEL_PREFIXED
    assert detect_layout(["fc.weight", "lm_head.weight", "d2t"]) is None


def test_rename_plan_between_all_layouts():
    keys = [
        "layers.0.self_attn.q_proj.weight",
        "layers.1.mlp.down_proj.weight",
        "fc.weight",
        "lm_head.weight",
        "d2t",
    ]
    indexed = rename_plan(keys, MIDLAYER_INDEXED)
    assert indexed == {
        "layers.0.self_attn.q_proj.weight": "midlayer.0.self_attn.q_proj.weight",
        "layers.1.mlp.down_proj.weight": "midlayer.1.mlp.down_proj.weight",
    }
    prefixed = rename_plan(keys, MODEL_PREFIXED)
    assert prefixed["fc.weight"] == "model.fc.weight"
    assert prefixed["layers.1.mlp.down_proj.weight"] == "model.layers.1.mlp.down_proj.weight"
    assert "lm_head.weight" not in prefixed and "d2t" not in prefixed
    # round trips come back to the original names
    for layout in (MIDLAYER_INDEXED, MODEL_PREFIXED):
        there = [rename_plan(keys, layout).get(k, k) for k in keys]
        back = [rename_plan(there, LAYERS).get(k, k) for k in there]
        assert back == keys
    assert rename_plan(keys, LAYERS) == {}


def test_single_midlayer_cannot_hold_two_layers():
    with pytest.raises(KitError, match="cannot place layer 1"):
        rename_plan(["layers.0.a.weight", "layers.1.a.weight"], MIDLAYER)
    assert rename_plan(["midlayer.a.weight"], LAYERS) == {"midlayer.a.weight": "layers.0.a.weight"}


def test_rename_collision_is_refused():
    with pytest.raises(KitError, match="would both become"):
        rename_plan(["midlayer.a.weight", "layers.0.a.weight"], LAYERS)
    with pytest.raises(KitError, match="unknown layout"):
        rename_plan(["fc.weight"], "nested")


def eagle_as_safetensors(folder: Path, dtype: torch.dtype | None = None, arch: str | None = None):
    """The EAGLE reference checkpoint (`pytorch_model.bin`) converted to safetensors, the way a
    user or the Hub's conversion bot does it, with its config (architecture optionally edited)."""
    import json

    from kit.checkpoint.files import _load_pickle

    state = _load_pickle(LAYOUTS / "eagle-official" / "pytorch_model.bin")
    if dtype is not None:
        state = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"))
    config = json.loads((LAYOUTS / "eagle-official" / "config.json").read_text())
    if arch:
        config["architectures"] = [arch]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_eagle_reference_saved_as_safetensors_is_not_called_specforge(tmp_path):
    """Its LlamaForCausalLM config says EAGLE, its safetensors file says SpecForge: the two
    things that tell them apart disagree, so both are named, with what speaks for each."""
    folder = eagle_as_safetensors(tmp_path / "eagle")
    guess = detect_format(open_checkpoint(folder), load_draft_config(folder))
    assert guess.candidates == ("specforge", "eagle-official")
    assert guess.name == "specforge or eagle-official"
    (undecided,) = [e for e in guess.evidence if e.startswith("UNKNOWN: cannot tell")]
    assert "specforge: safetensors file" in undecided
    assert "eagle-official: architectures = LlamaForCausalLM" in undecided
    # without the config, the architecture that could tell is unknown: still both
    alone = detect_format(open_checkpoint(folder / "model.safetensors"), None)
    assert alone.candidates == ("specforge", "eagle-official")


def test_specforge_architecture_decides_for_specforge(tmp_path):
    """The same weights with SpecForge's architecture: both signatures agree on SpecForge."""
    folder = eagle_as_safetensors(tmp_path / "sf", torch.bfloat16, "LlamaForCausalLMEagle3")
    guess = detect_format(open_checkpoint(folder), load_draft_config(folder))
    assert guess.candidates == ("specforge",) and guess.name == "specforge"
    assert not [e for e in guess.evidence if e.startswith("UNKNOWN")]
