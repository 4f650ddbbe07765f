"""Target and draft configs the capture tests share (real config dicts, no files)."""

from __future__ import annotations

import json
from pathlib import Path

from kit.checkpoint.config import parse_draft_config, parse_target_config

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "speculators-0.9.0-tiny"
KIMI = ROOT / "data" / "incident" / "kimi-k2.5"


def target(n=32, hidden=4096, arch="LlamaForCausalLM", model_type="llama"):
    return parse_target_config(
        {
            "architectures": [arch],
            "model_type": model_type,
            "num_hidden_layers": n,
            "hidden_size": hidden,
            "vocab_size": 128256,
        }
    )


def flat_draft(hidden=4096, ids=None, use_aux=None, target_hidden=None, **extra):
    """A SpecForge / ModelOpt style flat config (ids in eagle_config: output-of-layer)."""
    raw = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "draft_vocab_size": 32000,
        "num_hidden_layers": 1,
        "target_hidden_size": target_hidden,
        **extra,
    }
    eagle = {}
    if ids is not None:
        eagle["eagle_aux_hidden_state_layer_ids"] = ids
    if use_aux is not None:
        eagle["use_aux_hidden_state"] = use_aux
    if eagle:
        raw["eagle_config"] = eagle
    return parse_draft_config(raw)


def sample_draft(ids=None):
    """The real speculators 0.9.0 config (H = 32), optionally with other top-level ids."""
    raw = json.loads((SAMPLE / "config.json").read_text())
    if ids is not None:
        raw["eagle_aux_hidden_state_layer_ids"] = ids
    return parse_draft_config(raw)


def codes(report):
    return {f.code: f for f in report.findings}
