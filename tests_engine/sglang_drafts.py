"""The drafts real SGLang is given, written at test time from the bundled one.

SGLang refuses the bundled draft as it ships (a speculators config has no `model_type`): the
healthy draft is what `kit fix --engine sglang==X` writes for the release (a flat config, the
decoder named `midlayer.*`, aux ids in SGLang's convention). Each fault is that draft with one
change a user's draft can have (the incident, two of them at once, is
`kit.offline_acceptance.sglang_incident`'s). Tensors are rewritten with
safetensors, configs with json: SGLang loads these folders as it loads any draft.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from drafts import DRAFT
from safetensors.torch import load_file, save_file


def fixed(out: Path, release: str = "sglang==0.5.10") -> Path:
    """What `kit fix` writes for `release`: the draft as that SGLang should be served it."""
    import kit

    plan, written = kit.fix(DRAFT, release, out=out)
    assert written == out, plan
    return out


def as_shipped(out: Path) -> Path:
    """The bundled draft unchanged: a config SGLang refuses."""
    shutil.copytree(DRAFT, out)
    return out


def _config(out: Path, change) -> Path:
    cfg = json.loads((out / "config.json").read_text())
    change(cfg)
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    return out


def _tensors(out: Path, change) -> Path:
    path = out / "model.safetensors"
    save_file(change(dict(load_file(path))), path, metadata={"format": "pt"})
    return out


def keys_as_layers0(out: Path) -> Path:
    """The decoder layer under the speculators name `layers.0.*` (the incident's first fault)."""
    rename = {"midlayer.": "layers.0."}

    def change(t: dict) -> dict:
        return {_renamed(k, rename): v for k, v in t.items()}

    return _tensors(fixed(out), change)


def _renamed(key: str, rename: dict[str, str]) -> str:
    for old, new in rename.items():
        if key.startswith(old):
            return new + key.removeprefix(old)
    return key


def aux_off(out: Path) -> Path:
    """Aux capture turned off in the served config (the incident's second fault)."""

    def change(cfg: dict) -> None:
        cfg.setdefault("eagle_config", {})["use_aux_hidden_state"] = False

    return _config(fixed(out), change)


def aux_shifted(out: Path) -> Path:
    """Each captured state one layer early: an off-by-one export of the ids."""

    def change(cfg: dict) -> None:
        ids = cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
        cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [i - 1 for i in ids]

    return _config(fixed(out), change)


def no_d2t(out: Path) -> Path:
    return _tensors(fixed(out), lambda t: {k: v for k, v in t.items() if k != "d2t"})


def fc_too_narrow(out: Path) -> Path:
    """fc written for two captured states where the config names three: the loader's shape
    check refuses it at start-up."""

    def change(t: dict) -> dict:
        t["fc.weight"] = t["fc.weight"][:, : t["fc.weight"].shape[1] * 2 // 3].contiguous()
        return t

    return _tensors(fixed(out), change)
