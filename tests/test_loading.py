"""The replay's report shape, JSON and the `simulate` command (single release and matrix)."""

from __future__ import annotations

import json
import subprocess
import sys

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.engines import ENGINES, all_releases
from kit.engines.vocab import Outcome
from kit.load.replay import engine_params, simulate_load


def run_kit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kit", *args], capture_output=True, text=True, timeout=120
    )


def test_json_has_the_issue_fields(sample_dir):
    out = run_kit("simulate", str(sample_dir), "--engine", "sglang==0.5.10", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["engine"] == "sglang==0.5.10" and data["config_refused"]
    assert {"key", "outcome", "param", "shard", "message"} <= set(data["keys"][0])
    # as saved: the release refuses the config, nothing loads
    assert {k["outcome"] for k in data["keys"]} == {"error"} and data["params"] == []
    # if config.json is rewritten: the decoder layer is dropped, key by key
    rewritten = data["if_config_rewritten"]
    assert rewritten["config_changes"] and not rewritten["loads_cleanly"]
    assert {"name", "shape", "state", "init"} <= set(rewritten["params"][0])
    dropped = sorted(
        k["key"] for k in data["keys"] if k["if_config_rewritten"]["outcome"] == "dropped_silently"
    )
    assert len(dropped) == 10 and all(k.startswith("layers.0.") for k in dropped)
    codes = [f["code"] for f in data["findings"]]
    assert codes[0] == "UNSUPPORTED_CONFIG" and "KEYS_SILENTLY_DROPPED" in codes
    assert all(f["engine"] == "sglang==0.5.10" and f["source"] for f in data["findings"])


def test_every_outcome_and_state_is_in_the_vocabulary(sample_dir):
    ck, cfg = open_checkpoint(sample_dir), load_draft_config(sample_dir)
    for engine in ("sglang", "vllm"):
        for rel in all_releases(engine):
            report = simulate_load(ck, cfg, rel)
            assert {k.outcome for k in report.keys} <= set(Outcome)
            assert {p.state for p in report.params} <= {"loaded", "from_target", "left_at_init"}
            assert {p.init for p in report.params} <= {"uninitialized", "ones", "random", "zeros"}
            served = report.as_served
            assert {p.name for p in served.params} == {p.name for p in engine_params(cfg, rel)} or (
                served is not report  # the rewritten config builds its own parameter list
            )
            for k in served.keys:  # a loaded key names a parameter the release builds
                if k.outcome == "loaded":
                    assert k.param in {p.name for p in served.params}


def test_matrix_groups_releases(sample_dir):
    """Every SGLang release refuses the speculators config as saved; once it is rewritten,
    0.4.4.post2-0.4.8 crash, 0.4.9-0.5.11 drop the decoder layer, 0.5.12-0.5.23 load."""
    out = run_kit("simulate", str(sample_dir), "--engine", "sglang", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["matrix"]
    got = [(r["first"], r["last"], r["outcome"], r["if_config_rewritten"].split(" — ")[0])
           for r in rows]  # fmt: skip
    assert got == [
        ("0.4.4.post2", "0.4.8", "refuses config.json", "crashes"),
        ("0.4.9", "0.5.11", "refuses config.json", "drops 10 keys"),
        ("0.5.12", "0.5.23", "refuses config.json", "loads fully"),
    ]
    assert "KeyError" in rows[0]["if_config_rewritten"]
    text = run_kit("simulate", str(sample_dir), "--engine", "sglang")
    assert "0.4.9 … 0.5.11" in text.stdout and "drops 10 keys" in text.stdout


def test_matrix_over_every_engine(sample_dir):
    """`--engine all`: which engines and releases load this draft as trained (vLLM from 0.10.1.1,
    whose transformers_utils/configs/speculators/ reads the config as saved)."""
    out = run_kit("simulate", str(sample_dir), "--engine", "all", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["matrix"]
    assert {r["engine"] for r in rows} == set(ENGINES)
    clean = [r for r in rows if r["engine"] == "vllm" and r["outcome"] == "loads fully"]
    assert clean and clean[0]["first"] == "0.10.1.1"


def test_text_report_names_outcomes(sample_dir):
    out = run_kit("simulate", str(sample_dir), "--engine", "sglang==0.4.8")
    assert out.returncode == 0, out.stderr
    assert "KeyError" in out.stdout and "STARTUP_CRASH" in out.stdout


def test_bad_input_exit_2(sample_dir, tmp_path):
    out = run_kit("simulate", str(sample_dir), "--engine", "vllm==0.5.0")
    assert out.returncode == 2 and "0.9.2 … 0.33.0" in out.stderr
    assert "Traceback" not in out.stderr
    out = run_kit("simulate", str(tmp_path / "nope"), "--engine", "sglang==0.5.10")
    assert out.returncode == 2 and out.stderr.startswith("error: ")


def test_simulate_load_accepts_a_string_release(sample_dir):
    ck, cfg = open_checkpoint(sample_dir), load_draft_config(sample_dir)
    report = simulate_load(ck, cfg, "vllm==0.11.2")
    assert report.to_dict()["engine"] == "vllm==0.11.2" and report.loads_cleanly


def _qwen3_speculators_with_fc_norm(folder):
    """A speculators-trainer Qwen3 draft trained with fc_norm: its fc_norm.* keys are names
    vllm 0.9.2's hand loop has no parameter for (`params_dict[name]`, a KeyError)."""
    import torch
    from safetensors.torch import load_file, save_file

    from tests.tiny_layouts import speculators_multilayer

    folder = speculators_multilayer(folder, layers=1, aux_ids=(2, 16, 29))
    raw = json.loads((folder / "config.json").read_text())
    raw["fc_norm"] = True
    raw["transformer_layer_config"]["model_type"] = "qwen3"
    raw["speculators_config"]["verifier"]["architectures"] = ["Qwen3ForCausalLM"]
    (folder / "config.json").write_text(json.dumps(raw))
    tensors = load_file(str(folder / "model.safetensors"))
    tensors |= {f"fc_norm.{j}.weight": torch.ones(32, dtype=torch.bfloat16) for j in range(3)}
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


def test_a_start_up_crash_fails_every_key_in_both_views(tmp_path):
    """The rewritten view's findings said STARTUP_CRASH (KeyError on model.fc_norm.0.weight)
    while every other key's if_config_rewritten said `loaded`: a server that does not start
    loads nothing, as saved and once config.json is rewritten."""
    draft = _qwen3_speculators_with_fc_norm(tmp_path / "draft")
    out = run_kit("simulate", str(draft), "--engine", "vllm==0.9.2", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    crash = [f for f in data["findings"] if f["code"] == "STARTUP_CRASH"]
    assert crash and "KeyError: 'model.fc_norm.0.weight'" in crash[0]["title"]
    assert data["config_refused"] and not data["if_config_rewritten"]["loads_cleanly"]
    assert {k["outcome"] for k in data["keys"]} == {"error"}
    rewritten = {k["key"]: k["if_config_rewritten"] for k in data["keys"]}
    assert {k["outcome"] for k in rewritten.values()} == {"error"}
    assert rewritten["fc_norm.0.weight"]["message"] == "KeyError: 'model.fc_norm.0.weight'"
    assert "KeyError: 'model.fc_norm.0.weight'" in rewritten["fc.weight"]["message"]


def test_a_crash_of_a_release_that_accepts_the_config_fails_every_key(tmp_path):
    """The same draft with config.json in vllm's own form: no refusal, one view, same rule."""
    from kit.engines import parse_engine

    draft = _qwen3_speculators_with_fc_norm(tmp_path / "draft")
    cfg = load_draft_config(draft)
    rel = parse_engine("vllm==0.9.2")
    raw, _ = ENGINES["vllm"].rewritten_config(cfg, rel)
    (draft / "config.json").write_text(json.dumps(raw))
    report = simulate_load(open_checkpoint(draft), load_draft_config(draft), rel)
    assert report.refusal is None and report.crashed
    assert {k.outcome for k in report.keys} == {Outcome.ERROR}
    assert "STARTUP_CRASH" in {f.code for f in report.findings}


def _flat_draft_with_fc_norm(folder):
    """A SpecForge-style flat draft (midlayer.*) trained with fc_norm: one RMSNorm per aux
    state, three `fc_norm.{j}.weight` tensors."""
    from tests.tiny_layouts import FLAT, LAYER, write

    keys = {f"midlayer.{k}": v for k, v in LAYER.items()}
    keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    keys |= {"d2t": (16,), "t2d": (64,)} | {f"fc_norm.{j}.weight": (32,) for j in range(3)}
    aux = {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}
    return write(folder, keys, FLAT | {"fc_norm": True, "eagle_config": aux})


def test_a_trained_module_the_release_skips_is_a_root_cause(tmp_path):
    """SGLang 0.5.10 builds no fc_norm and reads no flag for it: the fc_norm.* keys are dropped.
    That used to be two warnings (keys dropped, flag ignored) and no root cause."""
    draft = _flat_draft_with_fc_norm(tmp_path / "draft")
    report = simulate_load(open_checkpoint(draft), load_draft_config(draft), "sglang==0.5.10")
    [skipped] = [f for f in report.findings if f.code == "TRAINED_MODULE_SKIPPED"]
    assert skipped.root_cause and skipped.data["modules"] == {
        "fc_norm": ["fc_norm.0.weight", "fc_norm.1.weight", "fc_norm.2.weight"]
    }
    assert "kit offline" in skipped.fix
    assert "TRAINED_FLAG_IGNORED" not in {f.code for f in report.findings}  # said once
    # a release that builds fc_norm loads it: nothing skipped
    later = simulate_load(open_checkpoint(draft), load_draft_config(draft), "vllm==0.24.0")
    assert later.loads_cleanly and not [f for f in later.findings if f.root_cause]


def test_offline_runs_the_draft_with_the_module_healthy_and_without_it_as_deployed(tmp_path):
    """What the skipped module costs is measured offline: the healthy wiring borrows a release
    that builds fc_norm (vllm 0.11.2 would crash on the keys), SGLang 0.5.10's runs without."""
    from kit.checkpoint.config import parse_target_config
    from kit.load.replay import served_config
    from kit.offline_acceptance.wiring import Plan, plan_wiring
    from kit.tracing.draft import build_draft

    draft = _flat_draft_with_fc_norm(tmp_path / "draft")
    ck, cfg = open_checkpoint(draft), load_draft_config(draft)
    target = parse_target_config(
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
         "num_hidden_layers": 32, "num_attention_heads": 4, "vocab_size": 64}
    )  # fmt: skip
    healthy: Plan = plan_wiring(ck, cfg, target)
    deployed: Plan = plan_wiring(ck, cfg, target, "sglang==0.5.10")
    assert healthy.crash is None and deployed.crash is None
    assert healthy.wiring.release.version >= parse_version("0.24.0")
    for plan, has in ((healthy, True), (deployed, False)):
        rel = plan.wiring.release
        module = build_draft(served_config(cfg, rel)[0], rel.name, rel)
        assert hasattr(module.model, "fc_norm") is has
        assert ("model.fc_norm.0.weight" in {p.name for p in plan.load.as_served.params}) is has


def parse_version(v: str):
    from packaging.version import Version

    return Version(v)
