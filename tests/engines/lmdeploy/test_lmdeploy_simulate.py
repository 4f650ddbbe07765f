"""`python -m kit simulate --json` against LMDeploy, key by key, on every trainer format the kit
knows: the fates below are written out from `Eagle3LlamaForCausalLM.load_weights`
(lmdeploy/pytorch/models/llama_eagle3.py:277-317 in 0.11.0, :278-318 in 0.15.0 / 0.18.0), not
computed, so the CLI has to agree with them entry by entry.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tiny_layouts import DATA

LAYOUTS = DATA / "layouts"
SAMPLE = DATA / "samples" / "speculators-0.9.0-tiny"

# The one decoder layer's keys -> (LMDeploy parameter, shard), stacked as load_weights does.
MIDLAYER = {
    "self_attn.q_proj.weight": ("model.midlayer.self_attn.qkv_proj.weight", "q"),
    "self_attn.k_proj.weight": ("model.midlayer.self_attn.qkv_proj.weight", "k"),
    "self_attn.v_proj.weight": ("model.midlayer.self_attn.qkv_proj.weight", "v"),
    "self_attn.o_proj.weight": ("model.midlayer.self_attn.o_proj.weight", None),
    "mlp.gate_proj.weight": ("model.midlayer.mlp.gate_up_proj.weight", 0),
    "mlp.up_proj.weight": ("model.midlayer.mlp.gate_up_proj.weight", 1),
    "mlp.down_proj.weight": ("model.midlayer.mlp.down_proj.weight", None),
    "input_layernorm.weight": ("model.midlayer.input_layernorm.weight", None),
    "hidden_norm.weight": ("model.midlayer.hidden_norm.weight", None),
    "post_attention_layernorm.weight": ("model.midlayer.post_attention_layernorm.weight", None),
}
TOP = {
    "d2t": ("consumed", "draft_id_to_target_id", None),
    "t2d": ("ignored", None, None),
    "fc.weight": ("loaded", "model.fc.weight", None),
    "norm.weight": ("loaded", "model.norm.weight", None),
    "lm_head.weight": ("loaded", "lm_head.weight", None),
    "embed_tokens.weight": ("loaded", "model.embed_tokens.weight", None),
}
LOADED_MIDLAYER = {"midlayer." + k: ("loaded", p, s) for k, (p, s) in MIDLAYER.items()}
# speculators' `layers.0.*`: no rename hook, so `params_dict[name]` raises on the name after
# stacking (q_proj -> qkv_proj happens before the lookup, llama_eagle3.py:308-312 in 0.11.0)
KEYERROR_LAYERS = {
    "layers.0." + k: ("error", f"KeyError: '{p.replace('.midlayer.', '.layers.0.')}'", None)
    for k, (p, _) in MIDLAYER.items()
}
# a server that fails at start-up loads no key: the others carry the first error it meets
# (sorted keys: layers.0.hidden_norm.weight is the first decoder-layer name looked up)
FIRST = "KeyError: 'model.layers.0.hidden_norm.weight'"
NOT_LOADED = f"not loaded: the server fails at start-up ({FIRST})"
CRASHED_TOP = {k: ("error", NOT_LOADED, None) for k in TOP}


def simulate(path, engine: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "kit", "simulate", str(path), "--engine", engine, "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def served_fates(data: dict) -> dict[str, tuple]:
    """Each key's fate as the release serves it: the rewritten config's when it refuses."""
    out = {}
    for k in data["keys"]:
        fate = k.get("if_config_rewritten") or k
        second = fate["message"] if fate["outcome"] == "error" else fate["param"]
        out[k["key"]] = (fate["outcome"], second, fate["shard"])
    return out


@pytest.mark.parametrize(
    ("path", "refused", "expected"),
    [
        (LAYOUTS / "eagle-official", None, {**TOP, **LOADED_MIDLAYER}),
        (LAYOUTS / "specforge", "RuntimeError: Can not found rewrite for architectures: "
         "['LlamaForCausalLMEagle3']", {**TOP, **LOADED_MIDLAYER}),
        (LAYOUTS / "speculators-trainer", "AttributeError", {**CRASHED_TOP, **KEYERROR_LAYERS}),
        (LAYOUTS / "speculators-converter", "AttributeError", {**CRASHED_TOP, **KEYERROR_LAYERS}),
        (SAMPLE, "AttributeError", {**CRASHED_TOP, **KEYERROR_LAYERS}),
        (DATA / "pair" / "draft", "AttributeError", {**CRASHED_TOP, **KEYERROR_LAYERS}),
    ],
    ids=["eagle-official", "specforge", "speculators-trainer", "speculators-converter",
         "sample", "pair"],
)  # fmt: skip
def test_simulate_json_agrees_key_by_key(path, refused, expected):
    """lmdeploy==0.18.0: the refusal as saved (the speculators format: configurations/
    default.py:18; other names: models/patch.py:196), then every key as load_weights treats it."""
    data = simulate(path, "lmdeploy==0.18.0")
    if refused is None:
        assert data["config_refused"] is None and data["loads_cleanly"]
    else:
        assert data["config_refused"].startswith(refused)
        assert {k["outcome"] for k in data["keys"]} == {"error"}
    fates = served_fates(data)
    assert fates == {k: v for k, v in expected.items() if k in fates}
    assert set(fates) <= set(expected)


@pytest.mark.parametrize("folder", ["modelopt-midlayer", "modelopt-layers"])
def test_simulate_json_two_layer_modelopt_fails_before_any_key(folder):
    """ModelOpt's two decoder layers: every key is the constructor's ValueError
    (llama_eagle3.py:172-173 in 0.15.0), whichever layout names them."""
    data = simulate(LAYOUTS / folder, "lmdeploy==0.15.0")
    messages = {m for _, m, _ in served_fates(data).values()}
    assert messages == {"ValueError: eagle3 only supports 1 decode layer"}


def test_matrix_over_lmdeploy_releases():
    """`--engine lmdeploy` groups the releases read by outcome: 0.11.0 refuses the speculators
    sample with AutoConfig's ValueError (pytorch/config.py:325), 0.15.0 … 0.18.0 with the
    PretrainedConfig fallback's AttributeError; rewritten, all crash on `layers.0.*`."""
    rows = simulate(SAMPLE, "lmdeploy")["matrix"]
    assert [(r["first"], r["last"], r["outcome"]) for r in rows] == [
        ("0.11.0", "0.11.0", "refuses config.json"),
        ("0.15.0", "0.18.0", "refuses config.json"),
    ]
    assert all("KeyError" in r["if_config_rewritten"] for r in rows)


def test_unread_release_is_assumed_and_outside_range_is_exit_2():
    """0.12.0 was not read: 0.11.0's behaviour is assumed and said; 0.10.2 predates EAGLE-3."""
    data = simulate(LAYOUTS / "eagle-official", "lmdeploy==0.12.0")
    assert data["findings"][0]["code"] == "RELEASE_ASSUMED"
    out = subprocess.run(
        [sys.executable, "-m", "kit", "simulate", str(SAMPLE), "--engine", "lmdeploy==0.10.2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and "0.11.0 … 0.18.0" in out.stderr
    assert "Traceback" not in out.stderr
