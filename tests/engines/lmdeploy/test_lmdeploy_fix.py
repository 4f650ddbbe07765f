"""`python -m kit fix --for lmdeploy==X`: the form LMDeploy reads, written and replayed, and the
drafts no rewrite can make it load, refused with the reason.

LMDeploy reads a flat LlamaConfig named `LlamaForCausalLM` (configurations/llama.py:11,21) with
`draft_vocab_size` (llama_eagle3.py:177-181 in 0.11.0) and `midlayer.*` keys only (load_weights
:277-317, no rename hook); it builds one decoder layer (:171-172), an fc of 3 target states
(:96-102) and no fc_norm / input_norm parameter.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from tiny_layouts import DATA, speculators_multilayer, write

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.errors import KitError
from kit.load.rewrite import plan_fix, verify_output, write_fixed

READ = ("lmdeploy==0.11.0", "lmdeploy==0.15.0", "lmdeploy==0.18.0")
SAMPLE = DATA / "samples" / "speculators-0.9.0-tiny"


def fixed(folder, engine: str, out):
    ck = open_checkpoint(folder)
    plan = plan_fix(ck, load_draft_config(folder), engine)
    return plan, write_fixed(ck, plan, out=out)


@pytest.mark.parametrize("engine", READ)
def test_speculators_sample_becomes_loadable(tmp_path, engine):
    """Refused as saved in every release; the fix renames `layers.0.` -> `midlayer.` and writes
    the flat LlamaForCausalLM config, draft_vocab_size kept; the release's replay of the written
    folder loads every tensor, byte for byte the source's."""
    plan, out = fixed(SAMPLE, engine, tmp_path / "fixed")
    assert plan.before.refusal is not None
    assert plan.renames["layers.0.mlp.gate_proj.weight"] == "midlayer.mlp.gate_proj.weight"
    assert len(plan.renames) == 10
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["model_type"] == "llama"
    assert config["draft_vocab_size"] == 16 and "transformer_layer_config" not in config
    assert "target_hidden_size" not in config  # null in the sample: would size fc from None
    report = verify_output(out, engine)
    assert report.loads_cleanly
    assert report.param("model.embed_tokens.weight").state == "loaded"
    src, dst = load_file(SAMPLE / "model.safetensors"), load_file(out / "model.safetensors")
    assert all(torch.equal(dst[plan.renames.get(k, k)], t) for k, t in src.items())


@pytest.mark.parametrize(
    "folder", [DATA / "layouts" / "speculators-trainer", DATA / "layouts" / "speculators-converter",
               DATA / "pair" / "draft"],
)  # fmt: skip
def test_every_speculators_export_is_fixable_and_then_quiet(tmp_path, folder):
    """Trainer, converter and the bundled draft: once fixed, lmdeploy==0.18.0 says nothing beyond the
    one behaviour it does not implement when the draft was trained with it."""
    _, out = fixed(folder, "lmdeploy==0.18.0", tmp_path / "f")
    report = verify_output(out, "lmdeploy==0.18.0")
    assert report.loads_cleanly
    assert {f.code for f in report.findings} <= {"TRAINED_FLAG_IGNORED"}
    if not load_draft_config(folder).norm_before_residual:
        assert report.findings == []


def test_specforge_needs_only_the_architecture(tmp_path):
    """SpecForge keys are already `midlayer.*`: only `architectures` changes."""
    plan, out = fixed(DATA / "layouts" / "specforge", "lmdeploy==0.11.0", tmp_path / "sf")
    assert plan.renames == {} and plan.config_changes[0].startswith(
        "architectures ['LlamaForCausalLMEagle3'] -> [LlamaForCausalLM]"
    )
    assert verify_output(out, "lmdeploy==0.11.0").findings == []


def test_eagle_official_needs_nothing():
    plan = plan_fix(open_checkpoint(DATA / "layouts" / "eagle-official"),
                    load_draft_config(DATA / "layouts" / "eagle-official"), "lmdeploy==0.15.0")  # fmt: skip
    assert not plan.changes_anything


def _sample_plus(tmp_path, extra: dict, **top):
    keys = {k: t.shape for k, t in open_checkpoint(SAMPLE).tensors.items()} | extra
    config = json.loads((SAMPLE / "config.json").read_text()) | top
    return write(tmp_path / "x", keys, config)


@pytest.mark.parametrize(
    ("extra", "top", "why"),
    [
        ({"fc_norm.0.weight": (32,), "fc_norm.1.weight": (32,), "fc_norm.2.weight": (32,)},
         {"fc_norm": True}, "KeyError: 'model.fc_norm.0.weight'"),
        ({"input_norm.weight": (96,)}, {"norm_before_fc": True},
         "KeyError: 'model.input_norm.weight'"),
        ({"fc.weight": (32, 128)}, {"eagle_aux_hidden_state_layer_ids": [2, 8, 16, 29]},
         "AssertionError: Attempted to load weight (torch.Size([32, 128]))"),
    ],
    ids=["fc_norm", "input_norm", "four_aux"],
)  # fmt: skip
def test_no_rewrite_can_add_what_lmdeploy_lacks(tmp_path, extra, top, why):
    """Trained norms LMDeploy has no parameter for, and an fc over 4 states (fc is 3 states
    wide), cannot be renamed into place: the fix refuses and names the exception."""
    folder = _sample_plus(tmp_path, extra, **top)
    with pytest.raises(KitError, match="no rename makes every tensor load") as err:
        plan_fix(open_checkpoint(folder), load_draft_config(folder), "lmdeploy==0.18.0")
    assert why in str(err.value)


def test_multi_layer_draft_is_refused_with_the_constructor_error(tmp_path):
    """Two decoder layers: the constructor's ValueError, said once, not per key."""
    folder = speculators_multilayer(tmp_path / "two", aux_ids=(2, 16, 29))
    with pytest.raises(KitError) as err:
        plan_fix(open_checkpoint(folder), load_draft_config(folder), "lmdeploy==0.15.0")
    assert str(err.value).count("eagle3 only supports 1 decode layer") == 1


def test_cli_refusal_is_one_line_exit_2(tmp_path):
    folder = speculators_multilayer(tmp_path / "two", aux_ids=(2, 16, 29))
    out = subprocess.run(
        [sys.executable, "-m", "kit", "fix", str(folder), "--for", "lmdeploy==0.18.0",
         "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and out.stderr.startswith("error: ")
    assert "eagle3 only supports 1 decode layer" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "o").exists()
