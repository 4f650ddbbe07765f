"""`fix`: rename plans verified on the simulator, and the streaming, verified, atomic rewrite."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import kit.load.rewrite as rewrite
from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.errors import KitError
from kit.load.header_fix import HeaderState, UndoRecord, complete, fix_in_place, state_of, undo
from kit.load.rewrite import plan_fix, verify_output, write_fixed

LAYOUTS = Path(__file__).resolve().parent.parent / "data" / "layouts"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kit", "fix", *args], capture_output=True, text=True, timeout=120
    )


def fix(folder: Path, engine: str, **kw):
    ck = open_checkpoint(folder)
    plan = plan_fix(ck, load_draft_config(folder), engine)
    return ck, plan, (write_fixed(ck, plan, **kw) if kw else None)


def test_sample_fixed_for_0_5_10_loads_every_tensor(sample_dir, tmp_path):
    """The 0.5.10 fix renames `layers.0.` → `midlayer.` and flattens the speculators config;
    replaying 0.5.10 on the output drops nothing, and every tensor's bytes are the source's."""
    before = sha(sample_dir / "model.safetensors")
    _, plan, out = fix(sample_dir, "sglang==0.5.10", out=tmp_path / "fixed")
    assert plan.renames["layers.0.self_attn.q_proj.weight"] == "midlayer.self_attn.q_proj.weight"
    assert len(plan.renames) == 10
    report = verify_output(out, "sglang==0.5.10")
    assert not report.with_outcome("dropped_silently") and not report.crashed
    assert report.refusal is None
    assert all(p.state != "left_at_init" for p in report.params)
    src, dst = load_file(sample_dir / "model.safetensors"), load_file(out / "model.safetensors")
    assert set(dst) == {plan.renames.get(k, k) for k in src}
    for name, tensor in src.items():
        assert torch.equal(dst[plan.renames.get(name, name)], tensor)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle3"]
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [1, 15, 28]
    assert config["draft_vocab_size"] == 16 and config["hidden_size"] == 32
    assert sha(sample_dir / "model.safetensors") == before


def test_sample_for_0_5_12_changes_only_the_config(sample_dir):
    _, plan, _ = fix(sample_dir, "sglang==0.5.12")
    assert plan.renames == {} and plan.config is not None
    assert plan.after.refusal is None and plan.before.refusal is not None


def data_section(path: Path) -> bytes:
    """Everything after the header: the tensor bytes."""
    blob = path.read_bytes()
    return blob[8 + struct.unpack("<Q", blob[:8])[0] :]


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: sha(p) for p in sorted(folder.iterdir())}


def test_same_length_renames_in_place_rewrite_only_the_header(sample_dir, tmp_path):
    """`layers.0.` → `midlayer.` keeps every key's length: the header is patched where it is,
    the tensor bytes are the very same, and the undo record (not a copy) is what is kept."""
    folder = copy(sample_dir, tmp_path / "ck")
    before = snapshot(folder)
    data = data_section(folder / "model.safetensors")
    ck, plan, _ = fix(folder, "sglang==0.5.10", in_place=True)
    assert plan.renames and all(len(a) == len(b) for a, b in plan.renames.items())
    record = folder / "model.safetensors.fix-undo.json"
    assert sorted(p.name for p in folder.iterdir()) == sorted([*before, record.name])
    fixed = folder / "model.safetensors"
    assert fixed.stat().st_size == ck.files[0].stat().st_size
    assert data_section(fixed) == data and sha(fixed) != before["model.safetensors"]
    assert set(load_file(fixed)) == {plan.renames.get(k, k) for k in ck.tensors}
    report = verify_output(folder, "sglang==0.5.10")
    assert not report.with_outcome("dropped_silently") and report.refusal is None
    assert record.stat().st_size < len(data) // 4  # headers and config, no tensor bytes


def test_undo_restores_the_folder_byte_for_byte(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    before = snapshot(folder)
    fix(folder, "sglang==0.5.10", in_place=True)
    assert snapshot(folder) != before
    assert undo(folder) == ["model.safetensors", "config.json"]
    assert snapshot(folder) == before
    with pytest.raises(KitError, match="no undo record"):
        undo(folder)


def test_renames_that_change_length_stream_and_keep_orig(tmp_path):
    """ModelOpt `midlayer.1.` → `layers.1.` is two bytes shorter: streamed, originals kept."""
    folder = copy(LAYOUTS / "modelopt-midlayer", tmp_path / "ck")
    original = sha(folder / "model.safetensors")
    _, plan, _ = fix(folder, "vllm==0.14.0", in_place=True)
    assert any(len(a) != len(b) for a, b in plan.renames.items())
    assert sha(folder / "model.safetensors.orig") == original
    assert (folder / "config.json.orig").exists()
    assert not list(folder.glob("*.fix-undo.json"))
    assert not verify_output(folder, "vllm==0.14.0").with_outcome("dropped_silently")
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(KitError, match=r"model\.safetensors\.orig.*move them back"):
        undo(folder)


def test_a_file_with_other_names_is_streamed_not_patched(sample_dir, tmp_path):
    """A hard-linked copy (`cp -al`, a shared cache blob) must not change with the fixed one."""
    folder = copy(sample_dir, tmp_path / "ck")
    other = tmp_path / "other.safetensors"
    os.link(folder / "model.safetensors", other)
    before = sha(other)
    fix(folder, "sglang==0.5.10", in_place=True)
    assert sha(other) == before
    assert not list(folder.glob("*.fix-undo.json")) and (folder / "model.safetensors.orig").exists()
    assert not verify_output(folder, "sglang==0.5.10").with_outcome("dropped_silently")


def torn(folder: Path, keep_fixed_until: int) -> bytes:
    """Write the header an interrupted patch leaves: fixed bytes up to `keep_fixed_until`
    (e.g. the first page of a longer header, or the sectors a power loss let through),
    the original's after it."""
    record = UndoRecord.read(folder / "model.safetensors.fix-undo.json")
    (edit,) = record.edits
    mixed = edit.fixed[:keep_fixed_until] + edit.original[keep_fixed_until:]
    assert mixed not in (edit.fixed, edit.original)
    with open(folder / "model.safetensors", "r+b") as f:
        f.seek(8)
        f.write(mixed)
    return mixed


def differing_middle(folder: Path) -> int:
    """A cut between the first and the last byte the fix changes."""
    (edit,) = UndoRecord.read(folder / "model.safetensors.fix-undo.json").edits
    changed = [i for i, (a, b) in enumerate(zip(edit.original, edit.fixed, strict=True)) if a != b]
    return (changed[0] + changed[-1]) // 2 + 1


def test_torn_header_is_completed_by_a_rerun_and_restored_by_undo(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    before = snapshot(folder)
    fix(folder, "sglang==0.5.10", in_place=True)
    after = snapshot(folder)
    cut = differing_middle(folder)
    torn(folder, cut)
    (edit,) = UndoRecord.read(folder / "model.safetensors.fix-undo.json").edits
    assert state_of(folder, edit) is HeaderState.TORN
    out = run_cli(str(folder), "--for", "sglang==0.5.10", "--in-place", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["plan"]["notes"][0].startswith("completed the header fix")
    assert snapshot(folder) == after
    torn(folder, cut)
    out = run_cli(str(folder), "--undo")
    assert out.returncode == 0, out.stderr
    assert snapshot(folder) == before


def test_a_torn_header_is_refused_by_every_reader_with_the_way_out(sample_dir, tmp_path):
    """A header torn inside a key name still parses (`midlrs.0.…`): opening it is refused,
    naming the undo and the re-run, instead of reporting keys no trainer wrote."""
    folder = copy(sample_dir, tmp_path / "ck")
    fix(folder, "sglang==0.5.10", in_place=True)
    torn(folder, differing_middle(folder))
    json.loads(data_header(folder / "model.safetensors"))  # still valid JSON
    for args in (("inspect", str(folder)), ("fix", str(folder), "--for", "sglang==0.5.10")):
        out = subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True,
                             text=True, timeout=120)  # fmt: skip
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert "half the original, half the fixed one" in out.stderr
        assert "--undo` restores the original" in out.stderr


def data_header(path: Path) -> bytes:
    blob = path.read_bytes()
    return blob[8 : 8 + struct.unpack("<Q", blob[:8])[0]]


def test_an_undo_record_aiming_outside_its_folder_is_refused(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    fix(folder, "sglang==0.5.10", in_place=True)
    victim = tmp_path / "victim.safetensors"
    shutil.copy(folder / "model.safetensors", victim)
    record = folder / "model.safetensors.fix-undo.json"
    body = json.loads(record.read_text())
    body["files"][0]["name"] = "../victim.safetensors"
    record.write_text(json.dumps(body))
    kept = sha(victim)
    with pytest.raises(KitError, match="not a readable undo record"):
        undo(folder)
    assert sha(victim) == kept


def test_undo_refuses_a_file_saved_again_since(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    fix(folder, "sglang==0.5.10", in_place=True)
    resaved = {k: v.clone() for k, v in load_file(folder / "model.safetensors").items()}
    save_file(resaved, folder / "model.safetensors")
    kept = sha(folder / "model.safetensors")
    with pytest.raises(KitError, match="changed since the in-place fix"):
        undo(folder)
    assert sha(folder / "model.safetensors") == kept


def test_a_record_written_before_any_header_is_dropped_on_rerun(sample_dir, tmp_path):
    """Killed between the record's fsync and the first header write: nothing else changed,
    so the next run drops the record and fixes from scratch."""
    folder = copy(sample_dir, tmp_path / "ck")
    before = snapshot(folder)
    fix(folder, "sglang==0.5.10", in_place=True)
    fixed = snapshot(folder)
    record = UndoRecord.read(folder / "model.safetensors.fix-undo.json")
    undo(folder)
    record.write()  # as the killed run left it: the record, every file still the original
    note = complete(folder)
    assert note and note.startswith("removed model.safetensors.fix-undo.json")
    assert snapshot(folder) == before
    fix(folder, "sglang==0.5.10", in_place=True)
    assert snapshot(folder) == fixed


def test_a_rerun_removes_the_temporaries_a_killed_run_left_and_nothing_else(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    fix(folder, "sglang==0.5.10", in_place=True)
    fixed = snapshot(folder)
    for name in (".config.json.k1.tmp", ".model.safetensors.fix-undo.json.k2.tmp"):
        (folder / name).write_text("{")  # cut short by the kill
    (folder / "notes.tmp").write_text("the user's")
    assert complete(folder) is None  # the headers were done: nothing else to finish
    assert snapshot(folder) == {**fixed, "notes.tmp": sha(folder / "notes.tmp")}


def test_a_second_rename_on_a_header_fixed_checkpoint_is_refused(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    fix(folder, "sglang==0.5.10", in_place=True)
    fixed = snapshot(folder)
    again = open_checkpoint(folder)
    with pytest.raises(KitError, match="--undo` first"):
        fix_in_place(again, {"fc.weight": "fc.weighs"}, None, None)
    assert snapshot(folder) == fixed
    # a config-only fix for another release is allowed: the record already holds the original
    fix(folder, "vllm==0.9.2", in_place=True)
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    undo(folder)
    assert sha(folder / "config.json") == sha(sample_dir / "config.json")


def test_refuses_when_a_tensor_is_missing(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    tensors = load_file(folder / "model.safetensors")
    del tensors["layers.0.mlp.down_proj.weight"]
    save_file(tensors, folder / "model.safetensors")
    with pytest.raises(KitError, match=r"no tensor for model\.midlayer\.mlp\.down_proj\.weight"):
        fix(folder, "sglang==0.5.10")


def test_refuses_without_d2t(sample_dir, tmp_path):
    folder = copy(sample_dir, tmp_path / "ck")
    tensors = load_file(folder / "model.safetensors")
    del tensors["d2t"]
    save_file(tensors, folder / "model.safetensors")
    with pytest.raises(KitError, match="cannot create d2t"):
        fix(folder, "vllm==0.11.0")


def test_modelopt_midlayer_indexed_to_layers(tmp_path):
    """ModelOpt `midlayer.{i}.` becomes `layers.{i}.` for vLLM 0.14 and SGLang 0.5.12."""
    for engine in ("vllm==0.14.0", "sglang==0.5.12"):
        _, plan, out = fix(LAYOUTS / "modelopt-midlayer", engine, out=tmp_path / engine)
        assert plan.renames["midlayer.1.mlp.up_proj.weight"] == "layers.1.mlp.up_proj.weight"
        report = verify_output(out, engine)
        assert not report.crashed and not report.with_outcome("dropped_silently")
    # vLLM gives layer 1 an input_layernorm that ModelOpt never ships: left at ones, noted
    assert (
        "model.layers.1.input_layernorm.weight stays ones in vllm==0.14.0: the checkpoint has no tensor for it"
        in fix(LAYOUTS / "modelopt-midlayer", "vllm==0.14.0")[1].notes
    )


def test_specforge_for_vllm_0_10_rewrites_the_architecture(tmp_path):
    """0.10.1.1 registers no `LlamaForCausalLMEagle3`: the EAGLE spelling every release reads is
    written. 0.10.2 registers it: nothing to change (models/registry.py:283)."""
    _, plan, out = fix(LAYOUTS / "specforge", "vllm==0.10.1.1", out=tmp_path / "o")
    assert plan.renames == {}
    assert json.loads((out / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    assert verify_output(out, "vllm==0.10.1.1").refusal is None
    _, plan, _ = fix(LAYOUTS / "specforge", "vllm==0.10.2")
    assert not plan.changes_anything


def test_specforge_ids_for_vllm_0_24_become_after_k_layers(tmp_path):
    """vLLM reads aux ids verbatim as "after k layers"; SpecForge's are "output of layer k"."""
    _, plan, _ = fix(LAYOUTS / "specforge", "vllm==0.24.0")
    assert plan.config["eagle_aux_hidden_state_layer_ids"] == [2, 16, 29]


def test_sharded_rewrite(sample_dir, tmp_path):
    src = load_file(sample_dir / "model.safetensors")
    folder = tmp_path / "sharded"
    folder.mkdir()
    names = sorted(src)
    halves = {"a.safetensors": names[::2], "b.safetensors": names[1::2]}
    weight_map = {}
    for shard, keys in halves.items():
        save_file({k: src[k] for k in keys}, folder / shard)
        weight_map |= dict.fromkeys(keys, shard)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    shutil.copy(sample_dir / "config.json", folder / "config.json")
    _, _, out = fix(folder, "sglang==0.5.10", out=tmp_path / "out")
    index = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
    assert (
        index["midlayer.self_attn.q_proj.weight"] == weight_map["layers.0.self_attn.q_proj.weight"]
    )
    assert not verify_output(out, "sglang==0.5.10").with_outcome("dropped_silently")
    before = snapshot(folder)
    fix(folder, "sglang==0.5.10", in_place=True)
    assert (folder / "model.safetensors.index.json.fix-undo.json").is_file()
    assert not list(folder.glob("*.orig"))  # header-only: both shards patched where they are
    assert not verify_output(folder, "sglang==0.5.10").with_outcome("dropped_silently")
    undo(folder / "model.safetensors.index.json")
    assert snapshot(folder) == before


def test_corrupt_copy_is_caught_and_nothing_lands(sample_dir, tmp_path, monkeypatch):
    """A copy that writes wrong bytes fails verification; no destination, no temp files."""
    real = rewrite._copy_range

    def corrupting(src_fd, dst_fd, src_at, dst_at, length):
        real(src_fd, dst_fd, src_at, dst_at, length)
        if length > 100:  # flip one bit of the last byte copied
            last = os.pread(dst_fd, 1, dst_at + length - 1)[0]
            os.pwrite(dst_fd, bytes([last ^ 1]), dst_at + length - 1)

    monkeypatch.setattr(rewrite, "_copy_range", corrupting)
    with pytest.raises(KitError, match="verification failed"):
        fix(sample_dir, "sglang==0.5.10", out=tmp_path / "o")
    assert list(tmp_path.iterdir()) == []


def test_out_must_not_exist(sample_dir, tmp_path):
    (tmp_path / "o").mkdir()
    with pytest.raises(KitError, match="already exists"):
        fix(sample_dir, "sglang==0.5.10", out=tmp_path / "o")


def test_cli_fix_json(sample_dir, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "kit", "fix", str(sample_dir), "--for", "sglang==0.5.10",
         "--out", str(tmp_path / "o"), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["after"] == {"crashed": False, "loads_cleanly": True, "problems": []}
    # the refused config, then the 10 decoder-layer keys it would drop once rewritten
    before = data["plan"]["problems_before"]
    assert before[0].startswith("config.json refused") and len(before) == 11
    assert data["plan"]["problems_after"] == []


def test_pickle_config_only_fix_copies_the_bin_verified(tmp_path):
    """EAGLE official `.bin` without `draft_vocab_size`: SGLang reads the attribute when it
    builds lm_head, so the fix adds it (the head's rows) and copies the .bin unchanged."""
    folder = copy(LAYOUTS / "eagle-official", tmp_path / "eo")
    config = json.loads((folder / "config.json").read_text())
    del config["draft_vocab_size"]
    (folder / "config.json").write_text(json.dumps(config))
    ck, plan, out = fix(folder, "sglang==0.5.10", out=tmp_path / "o")
    assert plan.before.crashed and not plan.renames
    assert json.loads((out / "config.json").read_text())["draft_vocab_size"] == 16
    assert sha(out / "pytorch_model.bin") == sha(ck.files[0])
    assert not verify_output(out, "sglang==0.5.10").crashed


def test_pickle_needing_renames_is_refused(sample_dir, tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    torch.save(load_file(sample_dir / "model.safetensors"), folder / "pytorch_model.bin")
    shutil.copy(sample_dir / "config.json", folder / "config.json")
    with pytest.raises(KitError, match="convert it to safetensors first"):
        fix(folder, "sglang==0.5.10", out=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_fix_takes_engine_like_every_command_and_keeps_for(sample_dir, tmp_path):
    """One name per concept: `--engine ENGINE==X` as in simulate, trace and doctor; `--for`,
    the older spelling, still works for scripts that use it."""
    for flag in ("--engine", "--for"):
        out = run_cli(str(sample_dir), flag, "sglang==0.5.12", "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["plan"]["engine"] == "sglang==0.5.12"
