import subprocess
import sys

from kit.checkpoint import open_checkpoint
from kit.config import AFTER_K_LAYERS, load_draft_config


def test_sample_opens_header_only(sample_dir):
    ck = open_checkpoint(sample_dir)
    assert ck.tensors["fc.weight"].shape == (32, 96)
    assert ck.tensors["layers.0.self_attn.q_proj.weight"].dtype == "BF16"


def test_sample_config_normalised(sample_dir):
    cfg = load_draft_config(sample_dir)
    assert (cfg.hidden_size, cfg.vocab_size, cfg.draft_vocab_size) == (32, 64, 16)
    assert cfg.aux_layer_ids == [2, 16, 29] and cfg.aux_layer_convention == AFTER_K_LAYERS


def test_cli_help_runs():
    out = subprocess.run([sys.executable, "-m", "kit", "--help"], capture_output=True, text=True)
    assert (out.returncode == 0 and "inspect" in out.stdout) or "COMMAND" in out.stdout
