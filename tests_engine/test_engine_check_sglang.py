"""`engine-check` on real SGLang on this CPU (the kit's stand-ins in place of its CUDA kernels):
0.5.10, which runs every draft step after the first one position late, beside 0.5.12, the first
release with sgl-project/sglang PR #25015.

Both serve the bundled draft as `kit fix` writes it for them (neither reads its speculators
config as shipped), greedy float32 on the first `PROMPTS` prompts, the release's defaults
otherwise (radix cache, overlap scheduling). 0.5.10 must count exactly what the kit predicts for
it as it runs the draft, and be named with the known defect, its source and its fixed release;
0.5.12 must draft as expected. The interpreters come from SGLANG_PYTHON (`make test-engine`).
"""

from __future__ import annotations

import pytest
from sglang_engine import python_for

import kit
from kit.engine_check.verdict import AS_EXPECTED, KNOWN_DEFECT

NEEDS_VLLM = False  # the suite's conftest lets this file run where vLLM is not installed
PROMPTS = 120
LATE, FIXED = "sglang==0.5.10", "sglang==0.5.12"


def check(release: str, tmp_path, **kw):
    python = python_for(release)
    if python is None:
        pytest.skip(f"no interpreter with {release} in SGLANG_PYTHON: run make test-engine")
    options = {"temperatures": (0.0,), **kw}
    return kit.engine_check(engine_python=python, num_prompts=PROMPTS, workdir=tmp_path, **options)


def test_0_5_10_drafts_late_and_is_named_beside_the_release_with_the_fix(tmp_path):
    late = check(LATE, tmp_path / "late")
    assert late.release == LATE
    (f,) = [f for f in late.findings if f.code == KNOWN_DEFECT]
    assert f.data["defect"] == "sglang-draft-positions-late" and f.data["start"] == 1
    assert f.data["fixed_in"] == "0.5.12" and f.fix == "upgrade to sglang==0.5.12 or later"
    assert "PR #25015" in f.source and "0.5.10 v1 speculative/eagle_worker.py:527" in f.source
    (run,) = late.runs
    assert run.against_release is not None and not run.against_release.beyond_noise
    assert run.measured.verify_steps == run.release.verify_steps  # exactly, as 0.5.10 runs it
    fixed = check(FIXED, tmp_path / "fixed")
    assert fixed.findings[0].code == AS_EXPECTED, [x.title for x in fixed.findings]
    (run,) = fixed.runs
    assert run.measured.accepted_per_position == run.ideal.accepted_per_position


def test_sampled_on_a_host_without_cuda(tmp_path):
    """Without CUDA, 0.5.10 verifies greedily whatever the temperature: its sampled run departs
    and is named as that fallback, its greedy run as its late positions. 0.5.12 raises in its
    sampled run on this CPU path (a CUDA-only renorm it names): that run is the engine's
    failure, the greedy one before it still compared."""
    c = check(LATE, tmp_path / "late", temperatures=(0.0, 0.7))
    keys = sorted(f.data["defect"] for f in c.findings if f.code == KNOWN_DEFECT)
    assert keys == ["sglang-draft-positions-late", "sglang-greedy-verify-without-cuda"], keys
    (f,) = [f for f in c.findings if f.data.get("defect") == "sglang-greedy-verify-without-cuda"]
    assert "spec_utils.py:49" in f.source and f.data["run"] == "temperature 0.7"
    fixed = check(FIXED, tmp_path / "fixed", temperatures=(0.0, 0.7))
    assert list(fixed.failed) == ["temperature 0.7"] and "top_k_renorm_prob" in fixed.verdict
    (greedy,) = fixed.runs
    assert not greedy.departs
