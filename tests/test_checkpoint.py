"""Opening every checkpoint shape header-only, streamed statistics and the untrained-weight tests."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from kit.checkpoint.files import (
    checkpoint_stats,
    looks_untrained,
    open_checkpoint,
    read_safetensors_header,
    tensor_stats,
)
from kit.errors import KitError

ROOT = Path(__file__).resolve().parent.parent
LAYOUTS = ROOT / "data" / "layouts"


def test_single_file_is_header_only(sample_dir):
    ck = open_checkpoint(sample_dir / "model.safetensors")
    info = ck.tensors["layers.0.self_attn.q_proj.weight"]
    assert (info.dtype, info.shape, info.nbytes) == ("BF16", (32, 64), 32 * 64 * 2)
    begin, end = info.offsets
    assert end - begin == info.nbytes
    # the recorded byte range really holds this tensor's bytes
    raw = (sample_dir / "model.safetensors").read_bytes()[begin:end]
    expected = ck.read_tensor(info.name).contiguous().view(torch.uint8).numpy().tobytes()
    assert raw == expected
    assert ck.config_path == sample_dir / "config.json"


def write_shards(folder: Path, n: int) -> dict[str, torch.Tensor]:
    tensors = {f"layers.{i}.w": torch.full((4,), float(i)) for i in range(n)}
    weight_map = {}
    for i, (name, t) in enumerate(tensors.items()):
        shard = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        save_file({name: t}, str(folder / shard))
        weight_map[name] = shard
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return tensors


def test_sharded_index_and_folder(tmp_path):
    tensors = write_shards(tmp_path, 3)
    for path in (tmp_path, tmp_path / "model.safetensors.index.json"):
        ck = open_checkpoint(path)
        assert ck.kind == "sharded" and len(ck.files) == 3
        assert sorted(ck.tensors) == sorted(tensors)
        assert ck.tensors["layers.2.w"].file.name == "model-00003-of-00003.safetensors"
        assert torch.equal(ck.read_tensor("layers.1.w"), tensors["layers.1.w"])


def test_index_that_misplaces_a_tensor_is_refused(tmp_path):
    write_shards(tmp_path, 2)
    index = tmp_path / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["weight_map"]["layers.0.w"] = "model-00002-of-00002.safetensors"
    index.write_text(json.dumps(data))
    with pytest.raises(KitError, match="does not hold it"):
        open_checkpoint(tmp_path)


def test_several_safetensors_without_index_is_refused(tmp_path):
    write_shards(tmp_path, 2)
    (tmp_path / "model.safetensors.index.json").unlink()
    with pytest.raises(KitError, match=r"no model\.safetensors\.index\.json"):
        open_checkpoint(tmp_path)


def test_pickle_opens_with_weights_only(tmp_path):
    state = {"fc.weight": torch.arange(6, dtype=torch.float16).reshape(2, 3), "d2t": torch.zeros(2)}
    torch.save(state, tmp_path / "pytorch_model.bin")
    ck = open_checkpoint(tmp_path)
    assert ck.kind == "pickle"
    assert ck.tensors["fc.weight"].dtype == "F16" and ck.tensors["fc.weight"].shape == (2, 3)
    assert torch.equal(ck.read_tensor("fc.weight"), state["fc.weight"])


def test_hf_cache_entry_by_repo_id(tmp_path):
    """A repo id resolves offline through a local HF cache (HF_HUB_CACHE), never the network."""
    cache = tmp_path / "hub"
    repo = cache / "models--acme--tiny-eagle3"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    sample = ROOT / "data" / "samples" / "speculators-0.9.0-tiny"
    for name in ("model.safetensors", "config.json"):
        (snap / name).write_bytes((sample / name).read_bytes())
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    code = (
        "from kit.checkpoint.files import open_checkpoint;"
        "ck = open_checkpoint('acme/tiny-eagle3');"
        "print(ck.folder.name, len(ck.tensors), ck.config_path.name)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [commit, "16", "config.json"]
    missing = subprocess.run(
        [sys.executable, "-m", "kit", "inspect", "acme/not-cached"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert missing.returncode == 2 and "local cache" in missing.stderr


def _hand_written(tmp_path: Path, entries: dict, data_len: int) -> Path:
    body = json.dumps(entries).encode()
    path = tmp_path / "x.safetensors"
    path.write_bytes(len(body).to_bytes(8, "little") + body + bytes(data_len))
    return path


def _e(begin: int, end: int) -> dict:
    return {"dtype": "U8", "shape": [end - begin], "data_offsets": [begin, end]}


def test_overlap_found_even_between_non_neighbours(tmp_path):
    # 'a' contains 'b' and also overlaps 'c' (which starts after 'b' ends)
    entries = {"a": _e(0, 10), "b": _e(2, 4), "c": _e(6, 12)}
    with pytest.raises(KitError, match="overlap"):
        read_safetensors_header(_hand_written(tmp_path, entries, 12))


def test_identical_ranges_overlap(tmp_path):
    with pytest.raises(KitError, match="'a' and 'b' overlap"):
        read_safetensors_header(_hand_written(tmp_path, {"a": _e(0, 4), "b": _e(0, 4)}, 4))


def test_adjacent_and_empty_tensors_are_fine(tmp_path):
    entries = {"a": _e(0, 4), "empty": _e(4, 4), "b": _e(4, 8)}
    tensors, _ = read_safetensors_header(_hand_written(tmp_path, entries, 8))
    assert tensors["b"].offsets[1] - tensors["b"].offsets[0] == 4


@pytest.mark.parametrize(
    ("entries", "data_len", "problem"),
    [
        ({"a": _e(0, 4), "b": _e(6, 8)}, 8, "gap of 2 bytes"),
        ({"a": _e(0, 4)}, 6, "cover bytes"),
        ({"a": _e(2, 4)}, 4, "cover bytes"),
    ],
)
def test_holes_safetensors_would_refuse(tmp_path, entries, data_len, problem):
    from safetensors.torch import load_file

    path = _hand_written(tmp_path, entries, data_len)
    with pytest.raises(Exception, match=r"offset|incomplete|not fully covered"):
        load_file(path)  # the library refuses it ...
    with pytest.raises(KitError, match=problem):  # ... and so do we, before reading bytes
        read_safetensors_header(path)


def test_streamed_stats_match_torch(tmp_path):
    g = torch.Generator().manual_seed(1)
    t = (torch.randn(300, 70, generator=g) * 3 + 0.5).to(torch.bfloat16)
    t[0, 0], t[1, 1], t[2, 2] = float("nan"), float("inf"), float("-inf")
    save_file({"w": t}, str(tmp_path / "m.safetensors"))
    ck = open_checkpoint(tmp_path / "m.safetensors")
    s = tensor_stats(ck, "w", chunk_bytes=1000)  # ~42 chunks
    ref = t.double().flatten()
    finite = ref[torch.isfinite(ref)]
    assert (s.nan, s.inf, s.numel) == (1, 2, t.numel())
    assert s.min == finite.min().item() and s.max == finite.max().item()
    assert math.isclose(s.mean, finite.mean().item(), rel_tol=1e-9)
    assert math.isclose(s.std, finite.std().item(), rel_tol=1e-9)
    whole = tensor_stats(ck, "w")  # one chunk gives the same answer
    assert math.isclose(whole.std, s.std, rel_tol=1e-12)


def test_pickle_stats_match_safetensors_stats(tmp_path):
    g = torch.Generator().manual_seed(2)
    state = {"w": torch.randn(40, 50, generator=g), "n": torch.ones(7)}
    torch.save(state, tmp_path / "pytorch_model.bin")
    save_file(state, str(tmp_path / "model.safetensors"))
    a = checkpoint_stats(open_checkpoint(tmp_path / "pytorch_model.bin"))
    b = checkpoint_stats(open_checkpoint(tmp_path / "model.safetensors"))
    assert a.keys() == b.keys() == {"w", "n"}
    assert math.isclose(a["w"].std, b["w"].std, rel_tol=1e-12)
    assert a["n"].min == a["n"].max == 1.0


def _verdict(tmp_path: Path, name: str, t: torch.Tensor, initializer_range: float = 0.02):
    save_file({name: t.contiguous()}, str(tmp_path / f"{name}.safetensors"))
    ck = open_checkpoint(tmp_path / f"{name}.safetensors")
    return looks_untrained(ck.tensors[name], tensor_stats(ck, name), initializer_range)


def test_untrained_norm_of_ones(tmp_path):
    assert "RMSNorm" in _verdict(tmp_path, "norm.weight", torch.ones(64, dtype=torch.bfloat16))


def test_untrained_repeated_value(tmp_path):
    assert "one repeated value" in _verdict(tmp_path, "fc.weight", torch.full((8, 8), 0.25))


def test_untrained_fresh_normal_init(tmp_path):
    g = torch.Generator().manual_seed(3)
    w = torch.empty(128, 96).normal_(0, 0.02, generator=g).to(torch.bfloat16)
    assert "fresh normal init" in _verdict(tmp_path, "fc.weight", w)
    # the same weights against another initializer_range are not "fresh"
    assert _verdict(tmp_path, "fc.weight", w, initializer_range=0.006) is None


def test_untrained_fresh_kaiming_uniform(tmp_path):
    torch.manual_seed(4)
    lin = torch.nn.Linear(96, 128, bias=False)  # torch's own default init
    assert "kaiming-uniform" in _verdict(tmp_path, "fc.weight", lin.weight.detach())


def test_uninitialised_garbage(tmp_path):
    w = torch.zeros(16, 16)
    w[3, 4] = 3e30
    assert "uninitialised memory" in _verdict(tmp_path, "fc.weight", w)
    w[3, 4] = float("nan")
    assert "NaN" in _verdict(tmp_path, "fc.weight", w)


@pytest.mark.parametrize("layout", ["speculators-trainer", "specforge", "eagle-official"])
def test_trained_looking_weights_pass(layout):
    ck = open_checkpoint(LAYOUTS / layout)
    stats = checkpoint_stats(ck)
    assert {n: looks_untrained(ck.tensors[n], s) for n, s in stats.items()} == dict.fromkeys(stats)


def test_sample_is_an_untrained_save(sample_dir):
    """The bundled speculators sample was saved right after init: its norms are all ones and
    every linear weight has std ≈ 0.02, so all 12 weight tensors are flagged; the embedding and
    lm_head (copied from a verifier) and d2t/t2d are not."""
    ck = open_checkpoint(sample_dir)
    stats = checkpoint_stats(ck)
    flagged = {n for n, s in stats.items() if looks_untrained(ck.tensors[n], s)}
    assert flagged == set(ck.tensors) - {"embed_tokens.weight", "lm_head.weight", "d2t", "t2d"}


def sparse_checkpoint(path: Path, names: list[str]) -> int:
    """16 GiB BF16 tensors per name, a hole on disk, not GiBs of writes; the header's size."""
    n = 8 << 30  # BF16 elements per tensor
    header = {
        name: {
            "dtype": "BF16",
            "shape": [n // 4096, 4096],
            "data_offsets": [i * 2 * n, (i + 1) * 2 * n],
        }
        for i, name in enumerate(names)
    }
    body = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(body).to_bytes(8, "little") + body)
        f.truncate(8 + len(body) + len(names) * 2 * n)
    return 8 + len(body)


def count_reads(monkeypatch) -> list[int]:
    """Every read() through kit.checkpoint.files's open(), by size."""
    import kit.checkpoint.files

    read: list[int] = []

    class Counting:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def close(self):
            self.f.close()

        def seek(self, *args):
            return self.f.seek(*args)

        def read(self, size=-1):
            data = self.f.read(size)
            read.append(len(data))
            return data

    def counting_open(p, mode):
        return Counting(open(p, mode))  # closed by Counting.__exit__ or close()

    monkeypatch.setattr(kit.checkpoint.files, "open", counting_open, raising=False)
    return read


def test_inspection_reads_only_the_header(tmp_path, monkeypatch):
    """A 64 GiB checkpoint (sparse on disk) is inspected header-only by reading its 8 + header
    bytes, and by default too when it is no draft (a target's layers)."""
    from kit.checkpoint.inspection import StatsRead, inspect_checkpoint

    path = tmp_path / "model.safetensors"
    head = sparse_checkpoint(path, [f"layers.{i}.mlp.up_proj.weight" for i in range(4)])
    for mode in (StatsRead.NONE, StatsRead.SAMPLED):
        read = count_reads(monkeypatch)
        report = inspect_checkpoint(path, stats=mode)
        assert sum(t["nbytes"] for t in report.to_dict()["tensors"]) == 64 << 30
        assert sum(read) == head and report.stats_read is StatsRead.NONE


def test_sampled_inspection_of_a_draft_reads_a_bounded_sample(tmp_path, monkeypatch):
    """The same 64 GiB as a draft (it has an fc): the default read takes SAMPLE_BYTES of each
    tensor, and a weight that is all zeros (never written) is named from that sample."""
    from kit.checkpoint.files import SAMPLE_BYTES
    from kit.checkpoint.inspection import StatsRead, inspect_checkpoint

    path = tmp_path / "model.safetensors"
    head = sparse_checkpoint(path, ["fc.weight", "layers.0.mlp.up_proj.weight"])
    read = count_reads(monkeypatch)
    report = inspect_checkpoint(path)
    assert report.stats_read is StatsRead.SAMPLED
    assert sum(read) == head + 2 * SAMPLE_BYTES  # the header, then one sample per tensor
    (f,) = [f for f in report.findings if f.code == "LOOKS_UNTRAINED"]
    assert "fc.weight: every value is 0: one repeated value" in f.evidence
    assert "from a sample" in f.evidence[0]
    assert report.stats["fc.weight"].values_read == SAMPLE_BYTES // 2


def test_a_sample_spans_the_tensor_from_its_first_value_to_its_last(tmp_path):
    """Garbage in the last row only (a partly written export) is in the sample; so is a first
    row of NaN. Both are found reading 64 KiB of a 4 MiB tensor."""
    w = torch.randn(1024, 1024, generator=torch.Generator().manual_seed(5)) * 0.05
    for row, value in ((-1, 3e30), (0, float("nan"))):
        bad = w.clone()
        bad[row] = value
        save_file({"fc.weight": bad}, str(tmp_path / "m.safetensors"))
        ck = open_checkpoint(tmp_path / "m.safetensors")
        s = tensor_stats(ck, "fc.weight", sample_bytes=64 << 10)
        assert s.sampled and s.values_read == 16 << 10 and s.numel == 1 << 20
        assert looks_untrained(ck.tensors["fc.weight"], s) is not None


@pytest.mark.parametrize(
    ("make", "verdict"),
    [
        (lambda g: torch.empty(768, 512).normal_(0, 0.02, generator=g), "fresh normal init"),
        (lambda g: torch.empty(768, 512).uniform_(-(512**-0.5), 512**-0.5, generator=g),
         "kaiming-uniform"),
        (lambda g: torch.ones(300_000), "one repeated value"),
        # trained-looking: heavier tails and a std the init never had
        (lambda g: torch.distributions.StudentT(3.0).sample((768, 512)) * 0.011, None),
    ],
)  # fmt: skip
def test_sampled_verdicts_are_the_full_reads(tmp_path, make, verdict):
    """64 KiB of a 1.5 MiB weight (bf16) judges as the whole weight does."""
    torch.manual_seed(6)
    w = make(torch.Generator().manual_seed(6)).to(torch.bfloat16)
    save_file({"fc.weight": w}, str(tmp_path / "m.safetensors"))
    ck = open_checkpoint(tmp_path / "m.safetensors")
    info = ck.tensors["fc.weight"]
    sampled = looks_untrained(info, tensor_stats(ck, "fc.weight", sample_bytes=64 << 10))
    full = looks_untrained(info, tensor_stats(ck, "fc.weight"))
    assert (sampled is None) == (full is None) == (verdict is None)
    if verdict:
        assert verdict in sampled and verdict in full


def test_pickle_and_safetensors_sample_the_same_values(tmp_path):
    g = torch.Generator().manual_seed(7)
    state = {"w": torch.randn(300, 500, generator=g)}
    torch.save(state, tmp_path / "pytorch_model.bin")
    save_file(state, str(tmp_path / "model.safetensors"))
    a = checkpoint_stats(open_checkpoint(tmp_path / "pytorch_model.bin"), sample_bytes=40_000)
    b = checkpoint_stats(open_checkpoint(tmp_path / "model.safetensors"), sample_bytes=40_000)
    assert a["w"].values_read == b["w"].values_read < 300 * 500
    assert (a["w"].min, a["w"].max) == (b["w"].min, b["w"].max)
    assert math.isclose(a["w"].std, b["w"].std, rel_tol=1e-12)


def test_one_shard_listed_by_an_index_is_refused_naming_the_index(tmp_path):
    """A shard alone lacks the other shards' tensors: the error leads to the whole checkpoint."""
    write_shards(tmp_path, 2)
    shard = tmp_path / "model-00001-of-00002.safetensors"
    with pytest.raises(KitError, match=r"model\.safetensors\.index\.json beside it lists"):
        open_checkpoint(shard)
    assert len(open_checkpoint(tmp_path).tensors) == 2  # where the message leads
    (tmp_path / "model.safetensors.index.json").unlink()
    with pytest.raises(KitError, match="shard 1 of 2 by its name"):
        open_checkpoint(shard)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(KitError, match="shard 1 of 2 by its name"):
        open_checkpoint(tmp_path)  # a folder holding one shard of two


def test_a_file_named_one_of_one_is_the_whole_checkpoint(tmp_path):
    write_shards(tmp_path, 1)
    (tmp_path / "model.safetensors.index.json").unlink()
    assert open_checkpoint(tmp_path / "model-00001-of-00001.safetensors").tensors


def test_simulate_on_one_shard_names_the_index_not_a_missing_head(tmp_path, sample_dir):
    """The first-hour report: `simulate model-00001-of-00002.safetensors` said LM_HEAD_MISSING."""
    from safetensors.torch import load_file

    state = load_file(sample_dir / "model.safetensors")
    names = sorted(state)
    weight_map = {}
    for i, part in enumerate((names[:8], names[8:])):
        shard = f"model-{i + 1:05d}-of-00002.safetensors"
        save_file({k: state[k] for k in part}, str(tmp_path / shard))
        weight_map |= dict.fromkeys(part, shard)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (tmp_path / "config.json").write_bytes((sample_dir / "config.json").read_bytes())
    cmd = [sys.executable, "-m", "kit", "simulate", "--engine", "sglang==0.5.12"]
    out = subprocess.run([*cmd, str(tmp_path / "model-00001-of-00002.safetensors")],
                         capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert out.returncode == 2 and "LM_HEAD_MISSING" not in out.stdout + out.stderr
    assert "index.json beside it lists" in out.stderr and "Traceback" not in out.stderr
    whole = subprocess.run([*cmd, str(tmp_path), "--json"], capture_output=True, text=True,
                           cwd=ROOT)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    assert "LM_HEAD_MISSING" not in whole.stdout


def test_a_config_file_leads_to_its_checkpoint_folder(sample_dir):
    with pytest.raises(KitError, match=f"pass {sample_dir}") as e:
        open_checkpoint(sample_dir / "config.json")
    assert open_checkpoint(e.value.problem.rsplit("pass ", 1)[1]).tensors  # the advice works


def test_a_config_alone_leads_to_the_commands_that_take_one(tmp_path):
    """A folder with only config.json is a config: both ways in name `trace --draft`, and that
    command really takes it (no advice that loops back to "pass its folder")."""
    kimi = ROOT / "data" / "incident" / "kimi-k2.5"
    folder = tmp_path / "draft"
    folder.mkdir()
    (folder / "config.json").write_bytes((kimi / "draft" / "config.json").read_bytes())
    for path in (folder, folder / "config.json"):
        with pytest.raises(KitError, match=r"`trace --draft PATH") as e:
            open_checkpoint(path)
        assert "pass its folder" not in str(e.value)
    out = subprocess.run(
        [sys.executable, "-m", "kit", "trace", "--draft", str(folder), "--target-config",
         str(kimi / "target"), "--engine", "sglang==0.5.10", "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
