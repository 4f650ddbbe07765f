"""Every trainer's config.json normalises to the same DraftConfig fields.

The layouts are described in docs/conventions.md#trainers-checkpoint-layouts.
"""

import json
from pathlib import Path

import pytest

from kit.checkpoint.config import (
    AFTER_K_LAYERS,
    OUTPUT_OF_LAYER,
    load_draft_config,
    load_target_config,
    parse_draft_config,
    parse_target_config,
)
from kit.errors import KitError

ROOT = Path(__file__).resolve().parent.parent
LAYOUTS = ROOT / "data" / "layouts"

# layout -> (source, arch, layers, draft vocab, aux ids, convention, location, dtype, dtype key)
EXPECTED = {
    "speculators-trainer": (
        "speculators",
        "Eagle3DraftModel",
        1,
        16,
        [2, 16, 29],
        AFTER_K_LAYERS,
        "top_level",
        "bfloat16",
    ),
    "speculators-converter": (
        "speculators",
        "Eagle3Speculator",
        1,
        16,
        None,
        None,
        None,
        "bfloat16",
    ),
    "specforge": (
        "flat",
        "LlamaForCausalLMEagle3",
        1,
        16,
        [1, 15, 28],
        OUTPUT_OF_LAYER,
        "eagle_config",
        "bfloat16",
    ),
    "eagle-official": ("flat", "LlamaForCausalLM", 1, 16, None, None, None, "float16"),
    "modelopt-midlayer": (
        "flat",
        "LlamaForCausalLMEagle3",
        2,
        16,
        [1, 15, 28],
        OUTPUT_OF_LAYER,
        "eagle_config",
        "bfloat16",
    ),
    "modelopt-layers": (
        "flat",
        "LlamaForCausalLMEagle3",
        2,
        16,
        [1, 15, 28],
        OUTPUT_OF_LAYER,
        "eagle_config",
        "bfloat16",
    ),
}


@pytest.mark.parametrize("layout", sorted(EXPECTED))
def test_every_layout_normalises(layout):
    cfg = load_draft_config(LAYOUTS / layout)
    source, arch, layers, dv, ids, conv, loc, dtype = EXPECTED[layout]
    assert cfg.source == source and cfg.architectures == [arch]
    assert (cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads) == (32, 4, 2)
    assert (cfg.head_dim, cfg.intermediate_size, cfg.vocab_size) == (8, 64, 64)
    assert cfg.num_hidden_layers == layers and cfg.draft_vocab_size == dv
    assert cfg.aux_layer_ids == ids and cfg.aux_layer_convention == conv
    assert cfg.aux_ids_location == loc
    assert cfg.dtype == dtype
    assert cfg.rope_theta == 500000.0  # rope_theta (tf4) and rope_parameters (tf5) agree
    assert cfg.target_width == 32 and cfg.num_aux == 3


def test_sample_config(sample_dir):
    cfg = load_draft_config(sample_dir)
    assert cfg.norm_before_residual and not cfg.norm_before_fc
    assert cfg.num_speculative_tokens == 3
    assert cfg.verifier == "meta-llama/Llama-3.1-8B-Instruct"
    assert cfg.provenance["rope_theta"] == "transformer_layer_config.rope_parameters.rope_theta"
    assert cfg.provenance["hidden_size"] == "transformer_layer_config.hidden_size"
    assert cfg.provenance["aux_layer_ids"] == "eagle_aux_hidden_state_layer_ids"


def test_transformers_4_and_5_spellings_agree():
    base = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "hidden_size": 64,
        "num_attention_heads": 8,
        "intermediate_size": 128,
        "vocab_size": 1000,
        "draft_vocab_size": 100,
    }
    tf4 = parse_draft_config({**base, "rope_theta": 1e6, "torch_dtype": "float16"})
    tf5 = parse_draft_config(
        {**base, "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}, "dtype": "float16"}
    )
    assert (tf4.rope_theta, tf4.dtype) == (tf5.rope_theta, tf5.dtype) == (1e6, "float16")
    assert tf4.provenance["rope_theta"] == "rope_theta"
    assert tf5.provenance["rope_theta"] == "rope_parameters.rope_theta"
    assert (tf4.provenance["dtype"], tf5.provenance["dtype"]) == ("torch_dtype", "dtype")
    per_type = parse_draft_config(
        {
            **base,
            "rope_parameters": {
                "sliding_attention": {"rope_theta": 1e4},
                "full_attention": {"rope_theta": 1e6},
            },
        }
    )
    assert per_type.rope_theta == 1e6
    assert per_type.provenance["rope_theta"] == "rope_parameters.full_attention.rope_theta"
    assert parse_draft_config(base).head_dim == 8  # derived hidden / heads when absent


def test_modelopt_eagle_config_fields_are_kept():
    cfg = load_draft_config(LAYOUTS / "modelopt-midlayer")
    assert cfg.eagle_config["use_input_layernorm_in_first_layer"] is True
    assert cfg.eagle_config["parallel_draft_step"] == 1
    assert cfg.use_aux_hidden_state is True
    assert cfg.provenance["aux_layer_ids"] == "eagle_config.eagle_aux_hidden_state_layer_ids"


def test_flat_without_eagle_config_has_no_ids():
    cfg = load_draft_config(LAYOUTS / "eagle-official")
    assert cfg.eagle_config == {} and cfg.aux_layer_ids is None and cfg.num_aux == 3
    assert "aux_layer_ids" not in cfg.provenance


def test_null_and_absent_draft_vocab_differ():
    layer = {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 50}
    null = parse_draft_config({"transformer_layer_config": layer, "draft_vocab_size": None})
    absent = parse_draft_config({"transformer_layer_config": layer})
    assert null.draft_vocab_size is None and absent.draft_vocab_size is None
    assert null.draft_vocab_size_key and not absent.draft_vocab_size_key
    assert null.effective_draft_vocab == 50


def test_target_hidden_size_sets_fc_width():
    cfg = parse_draft_config(
        {
            "hidden_size": 16,
            "num_attention_heads": 2,
            "intermediate_size": 32,
            "vocab_size": 10,
            "target_hidden_size": 48,
            "eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4],
        }
    )
    assert cfg.target_width == 48 and cfg.num_aux == 4


def test_incomplete_config_names_the_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 8, "num_attention_heads": 2}))
    with pytest.raises(KitError, match="'intermediate_size'") as e:
        load_draft_config(tmp_path)
    assert e.value.path == str(path)


def test_kimi_k25_target_reads_text_config():
    t = load_target_config(LAYOUTS / "targets" / "kimi-k2.5-config.json")
    assert t.architecture == "KimiK25ForConditionalGeneration"
    assert (t.num_hidden_layers, t.hidden_size, t.vocab_size) == (61, 7168, 163840)
    assert t.text_config_key == "text_config"


def test_flat_target_config():
    t = parse_target_config(
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "num_hidden_layers": 32,
            "hidden_size": 4096,
            "vocab_size": 128256,
        }
    )
    assert (t.num_hidden_layers, t.hidden_size, t.text_config_key) == (32, 4096, None)
    with pytest.raises(KitError, match="lacks 'num_hidden_layers'"):
        parse_target_config({"architectures": ["X"], "hidden_size": 3})


def _paths(d: dict, prefix: tuple = ()):
    for k, v in d.items():
        yield (*prefix, k)
        if isinstance(v, dict):
            yield from _paths(v, (*prefix, k))


def test_wrong_types_anywhere_give_kit_errors(sample_dir):
    """Seeded mutations put odd JSON values into every field of every bundled config: parsing
    either succeeds or raises KitError; nothing else escapes."""
    import random

    rng = random.Random(0)
    odd = [None, [], {}, "x", -1, 0, 1.5, [1, 2, 3], True, [[1]], {"a": 1}, ["a"], [None]]
    configs = [sample_dir / "config.json", LAYOUTS / "targets" / "kimi-k2.5-config.json"]
    configs += [p / "config.json" for p in LAYOUTS.iterdir() if p.name != "targets"]
    refused = 0
    for config in configs:
        base = json.loads(config.read_text())
        paths = list(_paths(base))
        for _ in range(150):
            cfg = json.loads(json.dumps(base))
            *parents, key = rng.choice(paths)
            node = cfg
            for k in parents:
                node = node[k]
            node[key] = rng.choice(odd)
            for parse in (parse_draft_config, parse_target_config):
                try:
                    parse(cfg, config)
                except KitError as e:
                    refused += 1
                    assert e.path == str(config)
    assert refused > 0
