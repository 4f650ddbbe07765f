"""The incident command where SGLang is not installed: the draft it serves is the incident's,
and without SGLang it says how to get it. The command on the real engine is
`tests_engine/test_sglang_incident.py` (make test-engine)."""

from __future__ import annotations

import json
import subprocess
import sys

from safetensors import safe_open

import kit
from kit.offline_acceptance.sglang_backend import INSTALL
from kit.offline_acceptance.sglang_incident import RELEASE, incident_draft


def test_the_served_draft_is_in_the_incidents_state(tmp_path):
    """A config SGLang reads, aux capture off in it, the decoder under `layers.0.*`: what
    0.5.10 drops without a word and serves with fc bypassed."""
    draft = incident_draft(tmp_path / "d")
    cfg = json.loads((draft / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLMEagle3"]
    assert cfg["eagle_config"]["use_aux_hidden_state"] is False
    with safe_open(draft / "model.safetensors", "pt") as f:
        names = list(f.keys())
    assert any(k.startswith("layers.0.") for k in names)
    report = kit.simulate(draft, RELEASE)
    dropped = {k.key for k in report.keys if k.outcome == "dropped_silently"}
    assert "layers.0.self_attn.q_proj.weight" in dropped


def test_without_sglang_it_says_how_to_install_it(tmp_path):
    cmd = [sys.executable, "-m", "kit.offline_acceptance.sglang_incident", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {INSTALL}"] and done.stdout == ""
