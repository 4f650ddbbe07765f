"""A healthy deployment comes out quiet, on every engine and release, and each fault injected
into it is named first: the bundled healthy pair (data/pair), served as each release needs
it (`fix --for` where the release does not read the speculators config or keys as saved)."""

from __future__ import annotations

import pytest
from tiny_layouts import DATA

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.findings import Severity
from kit.load.rewrite import plan_fix, write_fixed
from kit.verdict import diagnose

DRAFT, TARGET = DATA / "pair" / "draft", DATA / "pair" / "target"
RELEASES = ["sglang==0.5.10", "sglang==0.5.12", "sglang==0.5.23",
            "vllm==0.11.2", "vllm==0.18.0", "vllm==0.33.0"]  # fmt: skip


def served_draft(release: str, tmp_path):
    """The draft as a team would serve it on `release`: fixed for it when it needs that."""
    ck = open_checkpoint(DRAFT)
    plan = plan_fix(ck, load_draft_config(DRAFT), release)
    return write_fixed(ck, plan, tmp_path / "served") if plan.changes_anything else DRAFT


@pytest.mark.parametrize("release", RELEASES)
def test_healthy_pair_is_quiet(release, tmp_path):
    report = diagnose(served_draft(release, tmp_path), target_config=TARGET, engine=release)
    assert report.root_causes == []
    assert all(f.severity < Severity.ERROR for f in report.findings), [
        (f.code, f.title) for f in report.findings
    ]
    assert report.facts["fc_applied"] is True


@pytest.mark.parametrize("release", RELEASES)
def test_aux_capture_off_is_named_first(release, tmp_path):
    """The fault the incident had, injected: SGLang's width gate bypasses fc (FC_BYPASSED);
    vLLM always runs fc, so the single hidden state crashes it at start-up (AUX_WIDTH_MISMATCH).
    Either way it is the first root cause, and it says the capture was given off."""
    report = diagnose(
        served_draft(release, tmp_path), target_config=TARGET, engine=release, aux_capture=False
    )
    first = report.root_causes[0]
    assert first.code == ("FC_BYPASSED" if release.startswith("sglang") else "AUX_WIDTH_MISMATCH")
    assert any("given" in e for e in first.evidence)


@pytest.mark.parametrize("release", ["sglang==0.5.10", "vllm==0.11.2"])
def test_unfixed_draft_names_what_the_release_does(release):
    """Served as saved: SGLang refuses the speculators config (first root cause); vLLM reads it
    and loads every tensor, so it stays quiet."""
    report = diagnose(DRAFT, target_config=TARGET, engine=release)
    if release.startswith("sglang"):
        assert report.root_causes[0].code == "UNSUPPORTED_CONFIG"
    else:
        assert report.root_causes == []
