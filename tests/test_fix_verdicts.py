"""A fix is judged by the verdicts after it: applied for a release, it makes every tensor load
there, never makes `simulate` or `trace` say anything worse, and clears the finding that
suggested it."""

from __future__ import annotations

import pytest

from kit.checkpoint.config import load_draft_config, parse_target_config
from kit.checkpoint.files import open_checkpoint
from kit.errors import KitError
from kit.load.replay import simulate_load
from kit.load.rewrite import plan_fix, write_fixed
from kit.tracing.shapes import trace_draft

RELEASES = [
    "sglang==0.4.8", "sglang==0.5.10", "sglang==0.5.12", "sglang==0.5.23",
    "vllm==0.9.2", "vllm==0.10.2", "vllm==0.11.0", "vllm==0.11.2", "vllm==0.18.0", "vllm==0.33.0",
]  # fmt: skip

# a Llama target of the sample's width whose default aux layers are the sample's [2, 16, 29]
TARGET = parse_target_config(
    {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 32,
        "vocab_size": 64,
    }
)


def _worst(findings) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f.code] = max(out.get(f.code, 0), int(f.severity))
    return out


def _fixed(sample_dir, tmp_path, release):
    ck = open_checkpoint(sample_dir)
    plan = plan_fix(ck, load_draft_config(sample_dir), release)
    return write_fixed(ck, plan, tmp_path / "fixed") if plan.changes_anything else sample_dir


@pytest.mark.parametrize("release", RELEASES)
def test_a_fix_never_makes_the_verdict_worse(sample_dir, tmp_path, release):
    before_cfg = load_draft_config(sample_dir)
    out = _fixed(sample_dir, tmp_path, release)
    after_cfg = load_draft_config(out)
    load = simulate_load(open_checkpoint(out), after_cfg, release)
    assert load.loads_cleanly, [f.title for f in load.findings]
    before = _worst(trace_draft(TARGET, before_cfg, release).findings)
    after = _worst(trace_draft(TARGET, after_cfg, release).findings)
    before.pop("TRACED_AS_REWRITTEN", None)  # the fix wrote the config the trace assumed
    assert all(after[c] <= before.get(c, -1) for c in after), (before, after)


def test_the_fix_a_drop_finding_suggests_clears_it(sample_dir, tmp_path):
    """sglang==0.5.10 (config rewritten) drops the decoder layer and suggests two fixes: the
    kit's rename for 0.5.10, or the config alone for 0.5.12 and up. Each, applied, clears it."""
    report = simulate_load(
        open_checkpoint(sample_dir), load_draft_config(sample_dir), "sglang==0.5.10"
    )
    drop = next(f for f in report.findings if f.code == "KEYS_SILENTLY_DROPPED")
    assert "fix CKPT --engine sglang==0.5.10" in drop.fix and "sglang ≥ 0.5.12" in drop.fix
    for release in ("sglang==0.5.10", "sglang==0.5.12"):
        out = _fixed(sample_dir, tmp_path / release, release)
        after = simulate_load(open_checkpoint(out), load_draft_config(out), release)
        assert after.loads_cleanly
        assert not {"KEYS_SILENTLY_DROPPED", "UNSUPPORTED_CONFIG"} & {
            f.code for f in after.findings
        }


def test_the_refusal_fix_clears_the_refusal(sample_dir, tmp_path):
    """UNSUPPORTED_CONFIG's fix is `fix --for` that release: the config it writes is read."""
    for release in ("sglang==0.5.23", "vllm==0.9.2"):
        report = simulate_load(open_checkpoint(sample_dir), load_draft_config(sample_dir), release)
        assert report.findings[0].code == "UNSUPPORTED_CONFIG"
        assert "python -m kit fix CKPT --engine" in report.findings[0].fix
        out = _fixed(sample_dir, tmp_path / release, release)
        assert simulate_load(open_checkpoint(out), load_draft_config(out), release).refusal is None


def test_a_fix_says_what_no_rename_changes(sample_dir, tmp_path):
    """sglang ≤0.4.8 builds fc with a bias (0.4.6.post1 models/llama_eagle3.py:108-111) that no
    trainer saves: after the fix every tensor loads, and the plan still says the bias stays
    random rather than reporting nothing to fix."""
    out = _fixed(sample_dir, tmp_path, "sglang==0.4.8")
    again = plan_fix(open_checkpoint(out), load_draft_config(out), "sglang==0.4.8")
    assert not again.changes_anything
    assert any("model.fc.bias stays random" in n for n in again.notes)


def test_an_impossible_fix_says_why(tmp_path):
    """A draft without d2t on a reduced vocabulary: no rename can create the map."""
    from tiny_layouts import FLAT, LAYER, write

    keys = {"midlayer." + k: s for k, s in LAYER.items()}
    keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    folder = write(tmp_path / "nod2t", keys, FLAT)
    with pytest.raises(KitError, match="cannot create d2t"):
        plan_fix(open_checkpoint(folder), load_draft_config(folder), "sglang==0.5.10")
