"""`inspect`: the JSON contract, each finding on a checkpoint that has (and one that lacks) the fault."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from kit.checkpoint.inspection import StatsRead, inspect_checkpoint
from kit.findings import Severity

ROOT = Path(__file__).resolve().parent.parent
LAYOUTS = ROOT / "data" / "layouts"
BASE = LAYOUTS / "speculators-trainer"


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "kit", "inspect", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def variant(tmp_path: Path, edit_state=None, edit_config=None, config: bool = True) -> Path:
    """A copy of the bundled speculators checkpoint with one fault put in."""
    state = load_file(BASE / "model.safetensors")
    cfg = json.loads((BASE / "config.json").read_text())
    if edit_state:
        edit_state(state)
    if edit_config:
        edit_config(cfg)
    save_file(state, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    if config:
        (tmp_path / "config.json").write_text(json.dumps(cfg))
    return tmp_path


def codes(path: Path, stats: StatsRead = StatsRead.NONE) -> set[str]:
    return {f.code for f in inspect_checkpoint(path, stats=stats).findings}


def test_json_contract(sample_dir):
    out = cli(str(sample_dir), "--json", "--header-only")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert list(report) == ["path", "format", "config", "tensors", "findings", "stats_read"]
    assert report["stats_read"] == "none"
    assert {"name", "evidence"} <= set(report["format"])
    assert report["format"]["name"] == "speculators-trainer"
    assert report["config"]["hidden_size"] == 32 and report["config"]["kind"] == "draft"
    assert len(report["tensors"]) == 16
    for t in report["tensors"]:
        assert list(t) == ["name", "dtype", "shape", "nbytes", "file"]
    fc = next(t for t in report["tensors"] if t["name"] == "fc.weight")
    assert fc == {
        "name": "fc.weight",
        "dtype": "BF16",
        "shape": [32, 96],
        "nbytes": 6144,
        "file": "model.safetensors",
    }
    assert report["findings"] == []  # header-only: no byte read, nothing to say about values


@pytest.mark.parametrize(("flags", "read"), [((), "sampled"), (("--stats",), "full")])
def test_the_untrained_sample_is_named_by_default(sample_dir, flags, read):
    """The bundled sample was saved right after init: named without --stats (its tensors are
    under the sample size, so the sampled read sees every value too)."""
    out = cli(str(sample_dir), "--json", *flags)
    report = json.loads(out.stdout)
    assert report["stats_read"] == read
    (finding,) = [f for f in report["findings"] if f["code"] == "LOOKS_UNTRAINED"]
    assert set(finding) >= {"code", "severity", "title", "evidence", "fix"}
    assert finding["severity"] == "warning"
    assert finding["evidence"][0] == "statistics from every value of every tensor"
    assert any(e.startswith("norm.weight: all ones") for e in finding["evidence"])
    assert report["stats"]["norm.weight"]["std"] == 0.0


def test_a_large_untrained_layer_is_named_from_a_sample(tmp_path):
    """A draft whose decoder layer was saved at its initial values (a 2 MiB q_proj, std =
    initializer_range): the default read names it, saying the figures come from a sample."""

    def fresh_layer(s):
        g = torch.Generator().manual_seed(8)
        s["layers.0.self_attn.q_proj.weight"] = (
            torch.empty(1024, 1024).normal_(0, 0.02, generator=g).to(torch.bfloat16)
        )

    path = variant(tmp_path, fresh_layer)
    report = inspect_checkpoint(path)
    assert report.stats_read is StatsRead.SAMPLED
    assert report.stats["layers.0.self_attn.q_proj.weight"].sampled
    (f,) = [f for f in report.findings if f.code == "LOOKS_UNTRAINED"]
    assert (
        "from a sample" in f.evidence[0] and "`inspect --stats` reads every byte" in f.evidence[0]
    )
    assert any(e.startswith("layers.0.self_attn.q_proj.weight: mean") for e in f.evidence)


HEALTHY = [
    *(LAYOUTS / p.name for p in sorted(LAYOUTS.iterdir()) if p.name != "targets"),
    ROOT / "data" / "pair" / "draft",
    ROOT / "data" / "samples" / "speculators-0.9.0-tiny",
]


@pytest.mark.parametrize("path", HEALTHY, ids=lambda p: p.name)
@pytest.mark.parametrize("stats", [StatsRead.SAMPLED, StatsRead.FULL])
def test_healthy_checkpoints_stay_quiet(path, stats):
    """No root cause and nothing at error level, whichever way the bytes are read; the layouts
    and the trained bundled draft say nothing about values at all."""
    findings = inspect_checkpoint(path, stats=stats).findings
    assert not [f for f in findings if f.root_cause or f.severity >= Severity.ERROR]
    found = {f.code for f in findings}
    if path.name == "speculators-0.9.0-tiny":
        assert found == {"LOOKS_UNTRAINED"}  # saved right after init, as its tests say
    elif path.name in ("speculators-trainer", "draft"):
        assert found == set()
    else:
        assert found == {"EMBED_TOKENS_MISSING"}


def test_d2t_missing(tmp_path):
    path = variant(tmp_path, edit_state=lambda s: s.pop("d2t"))
    report = inspect_checkpoint(path)
    (f,) = [f for f in report.findings if f.code == "D2T_MISSING"]
    assert "draft_vocab_size 16 < vocab_size 64" in f.evidence
    # with the full vocab, no map is needed
    full = tmp_path / "full"
    full.mkdir()

    def full_vocab(s):
        s.pop("d2t")
        s.pop("t2d")
        s["lm_head.weight"] = torch.zeros(64, 32, dtype=torch.bfloat16)

    variant(full, full_vocab, lambda c: c.update(draft_vocab_size=64))
    assert "D2T_MISSING" not in codes(full)


def test_lm_head_and_embed_missing(tmp_path):
    def drop(s):
        s.pop("lm_head.weight")
        s.pop("embed_tokens.weight")

    found = codes(variant(tmp_path, drop))
    assert {"LM_HEAD_MISSING", "EMBED_TOKENS_MISSING"} <= found
    report = inspect_checkpoint(tmp_path)
    sev = {f.code: f.severity.name for f in report.findings}
    assert sev["EMBED_TOKENS_MISSING"] == "INFO" and sev["LM_HEAD_MISSING"] == "ERROR"


def test_extra_verifier_keys(tmp_path):
    def add(s):
        s["verifier_lm_head.weight"] = torch.zeros(64, 32, dtype=torch.bfloat16)
        s["layers.0.self_attn.rotary_emb.inv_freq"] = torch.zeros(4, dtype=torch.bfloat16)

    report = inspect_checkpoint(variant(tmp_path, add))
    (f,) = [f for f in report.findings if f.code == "EXTRA_KEYS"]
    assert set(f.data["keys"]) == {
        "verifier_lm_head.weight",
        "layers.0.self_attn.rotary_emb.inv_freq",
    }
    assert any("verifier_*" in e for e in f.evidence)


def test_mixed_dtypes(tmp_path):
    def mix(s):
        s["fc.weight"] = s["fc.weight"].float()

    report = inspect_checkpoint(variant(tmp_path, mix))
    (f,) = [f for f in report.findings if f.code == "MIXED_DTYPES"]
    assert f.data["dtypes"] == {"BF16": 13, "F32": 1}  # 14 float tensors, fc cast


def test_fc_width_contradicts_aux_count(tmp_path):
    """A config naming 4 aux layers with an fc trained on 3: fc in-dim 96 ≠ 4 × 32."""
    path = variant(
        tmp_path, edit_config=lambda c: c.update(eagle_aux_hidden_state_layer_ids=[1, 2, 3, 4])
    )
    (f,) = [f for f in inspect_checkpoint(path).findings if f.code == "SHAPE_CONTRADICTS_CONFIG"]
    assert f.evidence == (
        "fc.weight: [32, 96], config implies [32, 128] [hidden, num_aux 4 × target width 32]",
    )


def test_q_proj_in_dim_must_be_twice_hidden(tmp_path):
    def narrow(s):
        for p in ("q", "k", "v"):
            w = s[f"layers.0.self_attn.{p}_proj.weight"]
            s[f"layers.0.self_attn.{p}_proj.weight"] = w[:, :32].contiguous()

    (f,) = [
        f
        for f in inspect_checkpoint(variant(tmp_path, narrow)).findings
        if f.code == "SHAPE_CONTRADICTS_CONFIG"
    ]
    assert len(f.evidence) == 3
    assert f.evidence[0].startswith("layers.0.self_attn.")
    assert "2 × hidden" in f.evidence[0]


def test_layer_count_contradicts_config(tmp_path):
    path = variant(
        tmp_path,
        edit_config=lambda c: c["transformer_layer_config"].update(num_hidden_layers=2),
    )
    (f,) = [f for f in inspect_checkpoint(path).findings if f.code == "SHAPE_CONTRADICTS_CONFIG"]
    assert f.evidence == ("1 decoder layer(s) in the checkpoint [0], num_hidden_layers = 2",)


def test_config_missing(tmp_path):
    report = inspect_checkpoint(variant(tmp_path, config=False))
    assert "CONFIG_MISSING" in {f.code for f in report.findings}
    assert report.config is None and report.to_dict()["config"] == {}


def test_target_checkpoint_gets_no_draft_findings(tmp_path):
    save_file(
        {"model.layers.0.mlp.up_proj.weight": torch.zeros(4, 2)}, str(tmp_path / "m.safetensors")
    )
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "num_hidden_layers": 1,
                "hidden_size": 2,
                "vocab_size": 10,
            }
        )
    )
    report = inspect_checkpoint(tmp_path)
    assert report.to_dict()["config"]["kind"] == "target"
    assert report.findings == []


def test_text_output_groups_by_module(sample_dir):
    out = cli(str(LAYOUTS / "modelopt-midlayer"))
    assert out.returncode == 0, out.stderr
    assert "format modelopt-midlayer" in out.stdout
    assert "midlayer.0 (10, BF16" in out.stdout and "midlayer.1 (8, BF16" in out.stdout
    assert "aux layer ids [1, 15, 28] (output_of_layer, from eagle_config)" in out.stdout
    assert "EMBED_TOKENS_MISSING" in out.stdout


def test_fail_on_gates_the_exit_code(tmp_path):
    path = variant(tmp_path, edit_state=lambda s: s.pop("lm_head.weight"))
    assert cli(str(path), "--fail-on", "error").returncode == 1
    assert cli(str(path), "--fail-on", "critical").returncode == 0
    assert cli(str(LAYOUTS / "specforge"), "--fail-on", "warning").returncode == 0


def test_make_layouts_is_reproducible(tmp_path):
    """Running the generator twice gives byte-identical files, equal to the committed ones."""
    sys.path.insert(0, str(ROOT / "data"))
    try:
        import make_layouts
    finally:
        sys.path.pop(0)
    first = make_layouts.write(tmp_path / "a")
    second = make_layouts.write(tmp_path / "b")
    assert len(first) == len(second) == 13
    for a, b in zip(first, second, strict=True):
        rel = a.relative_to(tmp_path / "a")
        assert a.read_bytes() == b.read_bytes(), rel
        assert a.read_bytes() == (LAYOUTS / rel).read_bytes(), rel


def d2t_finding(path: Path):
    """The D2T_INVALID finding of the default (sampled) inspection, or None."""
    found = [f for f in inspect_checkpoint(path).findings if f.code == "D2T_INVALID"]
    assert len(found) <= 1
    return found[0] if found else None


def test_d2t_with_absolute_ids_is_named_as_such(tmp_path):
    """verl-SpeCo PR #67: d2t holding the target ids themselves maps draft i to i + id(i); the
    ids are exactly the ones t2d marks. Named by default, without --stats."""

    def absolute(s):
        s["d2t"] = s["t2d"].nonzero().reshape(-1).to(torch.int64)  # ids instead of offsets

    path = variant(tmp_path, absolute)
    ids = load_file(BASE / "model.safetensors")["t2d"].nonzero().reshape(-1)
    outside = int((torch.arange(16) + ids >= 64).sum())
    assert outside > 0
    assert "D2T_INVALID" not in codes(path, StatsRead.NONE)
    f = d2t_finding(path)
    assert f.data["faults"] == ["ABSOLUTE_IDS", "OUT_OF_RANGE"]
    assert f.title.endswith("absolute token ids stored where offsets belong")
    assert "they are exactly the ids t2d marks" in f.evidence[0]
    assert f.evidence[1].startswith(f"{outside} draft ids map outside the target vocab [0, 64)")
    assert f.severity.name == "ERROR"


def test_d2t_arange_without_t2d_is_named_absolute(tmp_path):
    """The PR #67 default itself, `arange`, in a checkpoint with no t2d to compare with."""

    def arange(s):
        s["d2t"] = torch.arange(16, dtype=torch.int64)
        s.pop("t2d")

    f = d2t_finding(variant(tmp_path, arange))
    assert f.data["faults"] == ["ABSOLUTE_IDS"]
    assert "d2t[i] = i for every i" in f.evidence[0] and "draft 15 -> 30" in f.evidence[0]


def test_all_zero_d2t_on_a_reduced_vocab_is_the_identity_prefix(tmp_path):
    """verl-SpeCo PR #66: zeros map the 16 draft ids onto target ids 0..15, whatever t2d says."""

    def zeros(s):
        s["d2t"] = torch.zeros(16, dtype=torch.int64)

    f = d2t_finding(variant(tmp_path, zeros))
    assert f.data["faults"] == ["IDENTITY", "T2D_DISAGREES"]
    assert "only propose target ids 0..15" in f.evidence[0]
    # the same zeros where the draft keeps the whole vocabulary are the identity it should be
    full = tmp_path / "full"
    full.mkdir()

    def full_vocab(s):
        s["d2t"] = torch.zeros(64, dtype=torch.int64)
        s.pop("t2d")
        s["lm_head.weight"] = torch.zeros(64, 32, dtype=torch.bfloat16)

    assert d2t_finding(variant(full, full_vocab, lambda c: c.update(draft_vocab_size=64))) is None


def test_d2t_with_few_distinct_targets(tmp_path):
    """SafeAILab/EAGLE #248: a tiny training set fills the draft vocab with repeats."""

    def repeats(s):
        targets = torch.tensor([3, 5, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9])
        s["d2t"] = targets - torch.arange(16)
        s["t2d"] = torch.zeros(64, dtype=torch.bool)
        s["t2d"][targets] = True

    f = d2t_finding(variant(tmp_path, repeats))
    assert f.data["faults"][0] == "FEW_TARGETS"
    assert f.evidence[0].startswith("only 3 distinct target ids for 16 draft ids")


def test_d2t_targets_past_the_target_vocab(tmp_path):
    def past_the_end(s):
        s["d2t"][-1] += 40  # the last draft id maps to a target id >= 64

    f = d2t_finding(variant(tmp_path, past_the_end))
    assert f.data["faults"] == ["OUT_OF_RANGE"]
    assert f.evidence[0].startswith("1 draft ids map outside the target vocab [0, 64)")


def test_d2t_offsets_not_matching_t2d(tmp_path):
    def shifted(s):
        s["d2t"][1:] -= 1  # every target but the first one id earlier than t2d says

    f = d2t_finding(variant(tmp_path, shifted))
    assert f.data["faults"] == ["T2D_DISAGREES"]
    assert f.evidence[0].startswith("t2d marks 16 target ids, d2t maps to 16")


def test_fail_on_rejects_an_unknown_severity():
    out = cli(str(LAYOUTS / "specforge"), "--fail-on", "fatal")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "unknown severity 'fatal'" in out.stderr


def test_big_checkpoint_text_lists_modules_not_every_tensor(tmp_path):
    """A target-sized key set (here 61 layers × 5 tensors) prints one line per module."""
    state = {
        f"model.layers.{i}.{p}.weight": torch.zeros(2)
        for i in range(61)
        for p in ("q_proj", "k_proj", "v_proj", "o_proj", "input_layernorm")
    }
    save_file(state, str(tmp_path / "model.safetensors"))
    out = cli(str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "model.layers.60 (5, F32, 40 B)" in out.stdout
    assert "model.layers.60.q_proj.weight" not in out.stdout


def test_module_of_keeps_a_decoder_layer_whole_in_every_layout():
    """`inspect` and notebook 1 group keys by this one rule: a decoder layer is one module,
    whichever layout names it, so `midlayer.*` is not split into attention and MLP boxes."""
    from kit.checkpoint.inspection import module_of

    assert module_of("layers.0.mlp.up_proj.weight") == "layers.0"
    assert module_of("midlayer.self_attn.q_proj.weight") == "midlayer"
    assert module_of("midlayer.0.mlp.up_proj.weight") == "midlayer.0"
    assert module_of("model.layers.12.self_attn.q_proj.weight") == "model.layers.12"
    assert module_of("fc.weight") == "fc" and module_of("d2t") == "d2t"
