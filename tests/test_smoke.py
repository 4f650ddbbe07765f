import json
import subprocess
import sys

from kit.checkpoint.config import AFTER_K_LAYERS, load_draft_config
from kit.checkpoint.files import open_checkpoint


def test_sample_opens_header_only(sample_dir):
    ck = open_checkpoint(sample_dir)
    assert ck.tensors["fc.weight"].shape == (32, 96)
    assert ck.tensors["layers.0.self_attn.q_proj.weight"].dtype == "BF16"


def test_sample_config_normalised(sample_dir):
    cfg = load_draft_config(sample_dir)
    assert (cfg.hidden_size, cfg.vocab_size, cfg.draft_vocab_size) == (32, 64, 16)
    assert cfg.aux_layer_ids == [2, 16, 29] and cfg.aux_layer_convention == AFTER_K_LAYERS


def test_cli_help_lists_every_command():
    from kit.cli import COMMANDS

    out = subprocess.run([sys.executable, "-m", "kit", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert all(name in out.stdout for name in COMMANDS)


def test_cli_version():
    from kit import __version__

    out = subprocess.run([sys.executable, "-m", "kit", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"python -m kit {__version__}"


def test_json_errors_reach_stdout(tmp_path):
    """A program reading `--json` output gets the error as JSON with the exit code."""
    out = subprocess.run(
        [sys.executable, "-m", "kit", "inspect", str(tmp_path / "nope"), "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 2
    data = json.loads(out.stdout)
    assert data["exit_code"] == 2 and "nope" in data["error"]
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
