"""SIGKILL `python -m kit fix` at many random points: the destination is absent or complete and
correct, and the source never changes (design principle 7: never lose a user's checkpoint).
In place and header-only, the file loads as before or as after, and a re-run or `--undo`
finishes the job from whatever the kill left."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import save_file

from kit.checkpoint.files import open_checkpoint
from kit.cli import main

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


def kill_at(
    cmd: list[str], rng: random.Random, full: float, landmark: Callable[[], bool], window: float
) -> None:
    """Start `cmd`, SIGKILL it at a seeded time: anywhere in the run (`full` is how long a whole
    run took), or, on half the draws, within `window` seconds of `landmark` becoming true. A time
    alone can miss a phase when the machine is busier while `full` is measured than after."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if rng.random() < 0.5:
        while not landmark() and proc.poll() is None:
            pass
        time.sleep(rng.uniform(0.0, window))
    else:
        time.sleep(rng.uniform(0.0, full * 1.1))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


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

    def staging() -> bool:  # the run has started writing: its staging folder is there
        return any(p.name.endswith(".tmp") for p in work.iterdir())

    rng = random.Random(20261130)
    landed = {"absent": 0, "complete": 0, "mid_write": 0}
    for i in range(KILLS):
        dest = work / f"out{i}"
        kill_at(fix_cmd(src, dest), rng, full, staging, window=0.05)

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


HEADER_KILLS = 16


def in_place_cmd(folder: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kit", "fix", str(folder), *extra]


def files(folder: Path, temporaries: bool = True) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and (temporaries or not p.name.endswith(".tmp"))
    }


def split(blob: bytes) -> tuple[bytes, bytes]:
    """(header, tensor bytes) of a safetensors file."""
    (n,) = struct.unpack("<Q", blob[:8])
    return blob[: 8 + n], blob[8 + n :]


def test_sigkill_in_place_header_fix_loads_as_before_or_after(tmp_path):
    src = tmp_path / "src"
    make_checkpoint(src)
    before = files(src)
    ref = tmp_path / "ref"
    shutil.copytree(src, ref)
    fix = ["--for", "sglang==0.5.10", "--in-place"]
    t0 = time.perf_counter()
    subprocess.run(in_place_cmd(ref, *fix), check=True, capture_output=True, timeout=60)
    full = time.perf_counter() - t0
    after = files(ref)
    head_before, data = split(before["model.safetensors"])
    head_after, data_after = split(after["model.safetensors"])
    assert data_after == data and head_after != head_before  # header-only, really

    work = tmp_path / "work"
    shutil.copytree(src, work)
    rng = random.Random(20261201)
    record = work / "model.safetensors.fix-undo.json"  # lands just before the header is written
    landed = {"before": 0, "after": 0}
    for i in range(HEADER_KILLS):
        kill_at(in_place_cmd(work, *fix), rng, full, record.exists, window=0.003)
        now = files(work, temporaries=False)
        head, rest = split(now["model.safetensors"])
        assert rest == data, f"kill {i}: tensor bytes changed"
        assert head in (head_before, head_after), f"kill {i}: header neither before nor after"
        assert now["config.json"] in (before["config.json"], after["config.json"]), f"kill {i}"
        keys = set(open_checkpoint(work).tensors)  # loads, as one version or the other
        assert keys == set(open_checkpoint(src if head == head_before else ref).tensors)
        landed["before" if head == head_before else "after"] += 1
        # the recovery runs are not killed: in this process, as the same command line
        if i % 4 < 2:  # the way forward: the same fix again completes it, leaving no temporary
            assert main(["fix", str(work), *fix]) == 0
            assert files(work) == after, f"kill {i}: re-run did not complete the fix"
        if "model.safetensors.fix-undo.json" in now or i % 4 < 2:  # the way back
            assert main(["fix", str(work), "--undo"]) == 0
            assert files(work) == before, f"kill {i}: not restored byte for byte"
        else:  # killed before the record landed: nothing was changed
            assert files(work, temporaries=False) == before, f"kill {i}"
    assert landed["before"] and landed["after"], landed
