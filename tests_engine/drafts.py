"""The faulty drafts the real engine is given, written at test time from the bundled draft.

Each builder copies the bundled draft into `out` with one change a user's draft can have, and
returns the folder. Tensors are rewritten with safetensors, configs with json: nothing here is
a stand-in, vLLM loads these folders as it loads any draft.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file

DATA = Path(__file__).resolve().parent.parent / "data" / "pair"
TARGET, DRAFT, PROMPTS = DATA / "target", DATA / "draft", DATA / "prompts.jsonl"
SAMPLES = DATA.parent / "samples"
TRAINED_IDS = [2, 4, 5]  # eagle_aux_hidden_state_layer_ids of the bundled draft
SHIFTED_IDS = [1, 3, 4]  # each state one layer early: an off-by-one export
UNKNOWN_KEY = "verifier_lm_head.weight"  # a trainer's extra tensor; vLLM has no such module


def _copy(out: Path) -> Path:
    shutil.copytree(DRAFT, out)
    return out


def _config(out: Path) -> dict:
    return json.loads((out / "config.json").read_text())


def _write_config(out: Path, cfg: dict) -> Path:
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    return out


def _rewrite_tensors(out: Path, change) -> Path:
    path = out / "model.safetensors"
    tensors = load_file(path)
    save_file(change(dict(tensors)), path, metadata={"format": "pt"})
    return out


def healthy(out: Path) -> Path:
    return _copy(out)


def aux_off_speculators(out: Path) -> Path:
    """Aux capture turned off where a speculators config keeps it: in transformer_layer_config."""
    cfg = _config(_copy(out))
    cfg["transformer_layer_config"]["eagle_config"] = {"use_aux_hidden_state": False}
    return _write_config(out, cfg)


def flat_config(aux_capture: bool) -> dict:
    """The bundled draft's config in the flat form (EAGLE / SpecForge style): the layer config at
    the top, the EAGLE-3 settings beside it, aux capture in `eagle_config`."""
    cfg = _config(DRAFT)
    flat = dict(cfg["transformer_layer_config"])
    flat.update(
        architectures=["LlamaForCausalLMEagle3"],
        draft_vocab_size=cfg["draft_vocab_size"],
        norm_before_residual=cfg["norm_before_residual"],
        eagle_config={
            "eagle_aux_hidden_state_layer_ids": TRAINED_IDS,
            "use_aux_hidden_state": aux_capture,
        },
    )
    return flat


def aux_off_flat(out: Path) -> Path:
    """Aux capture turned off at the top of a flat config."""
    return _write_config(_copy(out), flat_config(aux_capture=False))


def aux_shifted(out: Path) -> Path:
    cfg = _config(_copy(out))
    cfg["eagle_aux_hidden_state_layer_ids"] = SHIFTED_IDS
    return _write_config(out, cfg)


def layer_skipped(out: Path) -> Path:
    """The decoder layer's keys absent: the loader writes nothing into that layer, silently."""
    return _rewrite_tensors(
        _copy(out), lambda t: {k: v for k, v in t.items() if not k.startswith("layers.0.")}
    )


def unknown_key(out: Path) -> Path:
    """An extra tensor naming a module the engine's draft model does not have."""

    def add(t: dict) -> dict:
        t[UNKNOWN_KEY] = t["lm_head.weight"].clone()
        return t

    return _rewrite_tensors(_copy(out), add)


def no_d2t(out: Path) -> Path:
    return _rewrite_tensors(_copy(out), lambda t: {k: v for k, v in t.items() if k != "d2t"})


def export(name: str, out: Path) -> Path:
    """A trainer's export from data/samples/ as the trainer wrote it (its `target/` note and
    PROVENANCE.md left behind: a draft folder holds the checkpoint and its config)."""
    shutil.copytree(SAMPLES / name, out, ignore=shutil.ignore_patterns("target", "*.md"))
    return out


def cut_target(out: Path, layers: int) -> Path:
    """The bundled target cut to its first `layers` decoder layers, as ModelOpt's full-vocabulary
    sample was trained on it (data/samples/modelopt-0.47.0-fullvocab/PROVENANCE.md)."""
    shutil.copytree(TARGET, out)
    kept = {k: v for k, v in load_file(out / "model.safetensors").items()
            if not k.startswith("model.layers.") or int(k.split(".")[2]) < layers}  # fmt: skip
    save_file(kept, out / "model.safetensors", metadata={"format": "pt"})
    cfg = json.loads((out / "config.json").read_text()) | {"num_hidden_layers": layers}
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    return out


def named(arch: str):
    """The bundled draft in the flat form under another architecture name."""

    def build(out: Path) -> Path:
        cfg = flat_config(aux_capture=True) | {"architectures": [arch]}
        return _write_config(_copy(out), cfg)

    build.__name__ = f"named_{arch}"
    return build


def tied_over_trained_head(out: Path) -> Path:
    """The flat draft saying `tie_word_embeddings: true` over its own trained, reduced head."""
    cfg = flat_config(aux_capture=True) | {"tie_word_embeddings": True}
    return _write_config(_copy(out), cfg)
