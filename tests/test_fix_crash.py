"""SIGKILL `python -m kit fix` at many random points: the destination is absent or complete and
correct, and the source never changes (design principle 7: never lose a user's checkpoint)."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file

from kit.checkpoint import open_checkpoint

SAMPLE_CONFIG = (
    Path(__file__).resolve().parent.parent / "data/samples/speculators-0.9.0-tiny/config.json"
)
H, INTER, V = 1024, 2048, 4000
KILLS = 21


def make_checkpoint(folder: Path) -> None:
    """A speculators-layout draft of ~40 MB with random bf16 bytes (fix takes ~0.5 s on it)."""
    shapes = {
        "layers.0.self_attn.q_proj.weight": (H, 2 * H),
        "layers.0.self_attn.k_proj.weight": (H // 4, 2 * H),
        "layers.0.self_attn.v_proj.weight": (H // 4, 2 * H),
        "layers.0.self_attn.o_proj.weight": (H, H),
        "layers.0.mlp.gate_proj.weight": (INTER, H),
        "layers.0.mlp.up_proj.weight": (INTER, H),
        "layers.0.mlp.down_proj.weight": (H, INTER),
        "layers.0.input_layernorm.weight": (H,),
        "layers.0.hidden_norm.weight": (H,),
        "layers.0.post_attention_layernorm.weight": (H,),
        "fc.weight": (H, 3 * H),
        "norm.weight": (H,),
        "lm_head.weight": (V, H),
        "embed_tokens.weight": (V, H),
    }
    gen = torch.Generator().manual_seed(0)
    tensors = {
        k: torch.randint(-30000, 30000, s, dtype=torch.int16, generator=gen).view(torch.bfloat16)
        for k, s in shapes.items()
    }
    folder.mkdir()
    save_file(tensors, folder / "model.safetensors")
    cfg = json.loads(SAMPLE_CONFIG.read_text())
    cfg["draft_vocab_size"] = V
    cfg["transformer_layer_config"] |= {
        "hidden_size": H,
        "intermediate_size": INTER,
        "vocab_size": V,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
    }
    (folder / "config.json").write_text(json.dumps(cfg))


def tensor_digests(folder: Path) -> dict[tuple[str, tuple[int, ...]], str]:
    """(name without the layer prefix, shape) -> sha256 of the tensor's bytes."""
    ck = open_checkpoint(folder)
    out = {}
    for name, t in ck.tensors.items():
        with open(t.file, "rb") as f:
            f.seek(t.offsets[0])
            digest = hashlib.sha256(f.read(t.nbytes)).hexdigest()
        bare = name.removeprefix("layers.0.").removeprefix("midlayer.")
        out[(bare, t.shape)] = digest
    return out


def fix_cmd(src: Path, dest: Path) -> list[str]:
    return [sys.executable, "-m", "kit", "fix", str(src), "--for", "sglang==0.5.10",
            "--out", str(dest)]  # fmt: skip


def test_sigkill_never_corrupts(tmp_path):
    src = tmp_path / "src"
    make_checkpoint(src)
    src_file = src / "model.safetensors"
    src_hash = hashlib.sha256(src_file.read_bytes()).hexdigest()
    expected = tensor_digests(src)

    work = tmp_path / "work"
    work.mkdir()
    t0 = time.perf_counter()
    subprocess.run(fix_cmd(src, work / "full"), check=True, capture_output=True, timeout=60)
    full = time.perf_counter() - t0
    assert tensor_digests(work / "full") == expected
    shutil.rmtree(work / "full")

    rng = random.Random(20261130)
    landed = {"absent": 0, "complete": 0, "mid_write": 0}
    for i in range(KILLS):
        dest = work / f"out{i}"
        proc = subprocess.Popen(fix_cmd(src, dest), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(rng.uniform(0.0, full * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

        stale = [p for p in work.iterdir() if p.name.endswith(".tmp")]
        landed["mid_write"] += bool(stale)
        if dest.exists():
            landed["complete"] += 1
            assert tensor_digests(dest) == expected, f"kill {i}: destination differs"
            config = json.loads((dest / "config.json").read_text())
            assert config["architectures"] == ["LlamaForCausalLMEagle3"]
            shutil.rmtree(dest)
        else:
            landed["absent"] += 1
        for p in stale:  # a killed run's staging folder is not the destination
            shutil.rmtree(p)
        assert hashlib.sha256(src_file.read_bytes()).hexdigest() == src_hash, f"kill {i}"
    # the kills really landed in different phases, including in the middle of the write
    assert landed["absent"] and landed["mid_write"], landed
