"""`kit watch`'s SGLang hooks against SGLang's own classes (sglang 0.5.10 from its wheel).

SGLang does not run on CPU end to end, so this builds its real `LlamaForCausalLMEagle3` on CPU
(gloo, one rank, `SGLANG_USE_CPU_ENGINE=1`), hands the real `load_weights` the bundled draft's
tensors and calls the real draft `LlamaModel.forward` on an empty batch (the idle-batch path, after
its fc gate). Needs an interpreter with sglang importable: SGLANG_PYTHON (see the README for how
the one used here was made); skipped without it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
TARGET, DRAFT = ROOT / "data/pair/target", ROOT / "data/pair/draft"
SGLANG_PYTHON = os.environ.get("SGLANG_PYTHON")

pytestmark = pytest.mark.skipif(
    not SGLANG_PYTHON or not Path(SGLANG_PYTHON).exists(),
    reason="no interpreter with sglang (set SGLANG_PYTHON)",
)

EXERCISE = """
import json, os, sys, types
from pathlib import Path
import torch

if __name__ == "__main__":
    from kit.watch import boot
    assert boot.install()
    draft, width, target = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    from sglang.srt.distributed import parallel_state as ps
    ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                    distributed_init_method="file://" + sys.argv[4])
    ps.initialize_model_parallel(1, 1)
    from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler
    set_global_server_args_for_scheduler(ServerArgs(model_path=target, device="cpu"))
    from transformers import LlamaConfig
    cfg = json.loads((draft / "config.json").read_text())
    layer = {k: v for k, v in cfg["transformer_layer_config"].items() if k != "model_type"}
    config = LlamaConfig(**layer)
    config.draft_vocab_size = cfg["draft_vocab_size"]
    from sglang.srt.models.llama_eagle3 import LlamaForCausalLMEagle3
    model = LlamaForCausalLMEagle3(config)
    from safetensors.torch import load_file
    model.load_weights(load_file(str(draft / "model.safetensors")).items())
    spec = types.SimpleNamespace(hidden_states=torch.zeros(0, width))
    empty = torch.zeros(0, dtype=torch.long)
    model.model(empty, empty, types.SimpleNamespace(spec_info=spec), input_embeds=torch.zeros(0, 128))
    print("exercised", type(model).__name__)
"""


def exercise(tmp_path: Path, draft: Path, width: int) -> dict:
    script = tmp_path / "exercise.py"
    script.write_text(EXERCISE)
    report = tmp_path / "kit-watch.json"
    env = {**os.environ, "SGLANG_USE_CPU_ENGINE": "1", "KIT_WATCH_REPORT": str(report)}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [SGLANG_PYTHON, str(script), str(draft), str(width), str(TARGET), str(tmp_path / "init")]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "exercised LlamaForCausalLMEagle3" in out.stdout, out.stderr[-3000:]
    return json.loads(report.read_text())


def midlayer_copy(dst: Path) -> Path:
    """The bundled draft with SGLang's module name for the decoder layer."""
    dst.mkdir()
    tensors = load_file(str(DRAFT / "model.safetensors"))
    renamed = {k.replace("layers.0.", "midlayer."): v for k, v in tensors.items()}
    save_file(renamed, str(dst / "model.safetensors"))
    (dst / "config.json").write_text((DRAFT / "config.json").read_text())
    return dst


def test_keys_sglang_drops_without_a_word_are_named(tmp_path):
    from kit.watch.analyze import watch_findings

    report = exercise(tmp_path, DRAFT, 384)
    assert report["engine"] == {"name": "sglang", "version": "0.5.10"}
    states = {p["name"]: p["state"] for p in report["load"]["params"]}
    assert states["model.midlayer.self_attn.qkv_proj.weight"] == "never_written"
    assert states["model.fc.weight"] == "written"
    found = watch_findings(report)
    assert found[0].code == "OBSERVED_PARAMS_UNWRITTEN"
    assert "layers.0.self_attn.q_proj.weight" in found[0].data["skipped_keys"]
    assert "d2t" not in found[0].data["skipped_keys"]  # consumed as hot_token_id


def test_midlayer_names_load_whole_and_fc_runs_at_three_states(tmp_path):
    report = exercise(tmp_path, midlayer_copy(tmp_path / "d"), 384)
    assert all(p["state"] == "written" for p in report["load"]["params"])
    assert (report["first_forward"]["width"], report["first_forward"]["fc_ran"]) == (384, True)


def test_one_state_wide_input_skips_fc_by_sglangs_shape_gate(tmp_path):
    report = exercise(tmp_path, midlayer_copy(tmp_path / "d"), 128)
    assert (report["first_forward"]["width"], report["first_forward"]["fc_ran"]) == (128, False)
