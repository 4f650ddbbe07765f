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
