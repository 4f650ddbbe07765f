"""Offline acceptance as deployed, across releases: a healthy pair is quiet, a fault is a finding.

The bundled draft is the speculators 0.9.0 layout. vLLM from 0.11.2 loads it as it is (top-level
aux ids read verbatim: 0.11.2 v1/worker/gpu_model_runner.py load_model). SGLang needs its own
flat config (no Eagle3DraftModel class in any release's models/registry.py) and, before 0.5.12,
`midlayer.*` keys (0.5.10 llama_eagle3.py:243-256 drops `layers.0.*`): the kit's own fix writes
both, so the SGLang rows use the draft as `python -m kit fix --for` leaves it.
"""

from __future__ import annotations

import json

import pytest
import torch

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.cli import main
from kit.findings import Severity
from kit.load.rewrite import plan_fix, write_fixed
from kit.offline_acceptance import as_deployed, fault_matrix, healthy, load_prompts
from tests.conftest import DRAFT, PROMPTS, TARGET

torch.set_num_threads(1)

RELEASES = ["sglang==0.5.10", "sglang==0.5.23", "vllm==0.11.2", "vllm==0.33.0"]
FEW = "20"


@pytest.fixture(scope="module")
def common(target):
    return {"prompts": load_prompts(PROMPTS)[: int(FEW)], "target": target, "progress": False}


@pytest.fixture(scope="module")
def drafts(tmp_path_factory):
    """The draft each release loads without a fault: the kit's fix for SGLang, as is for vLLM."""
    out = {}
    for release in RELEASES:
        if release.startswith("vllm"):
            out[release] = DRAFT
            continue
        ck = open_checkpoint(DRAFT)
        plan = plan_fix(ck, load_draft_config(DRAFT), release)
        out[release] = write_fixed(ck, plan, tmp_path_factory.mktemp("fixed") / release)
    return out


def _loud(findings) -> list[str]:
    return [f.code for f in findings if f.root_cause or f.severity >= Severity.ERROR]


@pytest.mark.parametrize("release", RELEASES)
def test_a_healthy_deployment_is_quiet_on_every_release(release, drafts, common):
    """The release's own capture for a Llama target is on and feeds the trained states [2, 4, 5]
    through fc: the deployment measures what the healthy wiring measures, to the count, with its
    draft steps where trained. sglang 0.5.10 runs the steps after the first one position late
    (speculative/eagle_worker.py:527,675): a warning at most, never an error."""
    ref = healthy(TARGET, drafts[release], count_as=release, **common)
    row = as_deployed(TARGET, drafts[release], release, against=ref, **common)
    assert row.crash is None and row.label == f"as deployed: {release}, aux capture on"
    assert _loud(row.findings) == []
    assert row.result.wiring.fc_applied is True and row.result.wiring.layers == (2, 4, 5)
    late = release == "sglang==0.5.10"
    wired = row.result.trained_positions if late else row.result
    assert wired.figures()["counts"] == ref.result.figures()["counts"]
    assert late == ("DRAFT_POSITIONS_LATE" in {f.code for f in row.findings})
    assert late or not row.vs_healthy.beyond_noise
    said = row.result.wiring.describe()[0]  # the verdict says what was detected, what given
    assert (
        said == f"loaded as {release}; aux capture on (the release's own rule for LlamaForCausalLM)"
    )


@pytest.mark.parametrize("release", RELEASES)
def test_doctor_and_offline_pass_a_ci_gate_on_a_healthy_pair(release, drafts, capsys):
    """`doctor --target … --fail-on error` and `offline --engine … --fail-on error` exit 0; the
    doctor's verdict has no root cause and nothing at error level."""
    args = ["--draft", str(drafts[release]), "--target", str(TARGET), "--engine", release,
            "--num-prompts", FEW, "--fail-on", "error", "--json"]  # fmt: skip
    assert main(["doctor", *args, "--target-config", str(TARGET)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"load", "capture", "offline"} <= set(report["checks_run"])
    loud = [f["code"] for f in report["findings"] if f["root_cause"] or f["severity"] in
            ("error", "critical")]  # fmt: skip
    assert loud == []
    facts = report["facts"]
    lo, hi = facts["offline_accept_len_healthy_ci"]
    assert lo <= facts["offline_accept_len_as_deployed"] <= hi
    assert main(["offline", *args]) == 0


@pytest.mark.parametrize("release", RELEASES)
def test_no_aux_capture_is_a_finding_never_a_failed_step(release, drafts, common, capsys):
    """SGLang hands the draft its final post-norm state and its width gate skips fc
    (0.5.10 models/llama_eagle3.py:176, 0.5.23 :238): measured, FC_BYPASSED. vLLM always runs
    fc (0.9.2 v1/spec_decode/eagle.py:100-104, 0.33.0 llm_base_proposer.py:549), which cannot
    take a 128-wide state: the row is that start-up crash, and the healthy row still runs."""
    draft = drafts[release]
    ref = healthy(TARGET, draft, count_as=release, **common)
    row = as_deployed(TARGET, draft, release, aux_capture=False, against=ref, **common)
    assert row.wiring.describe()[0].endswith("aux capture off (as given for the deployment)")
    if release.startswith("sglang"):
        assert row.result is not None and row.result.wiring.fc_applied is False
        assert {"FC_BYPASSED", "OFFLINE_BELOW_HEALTHY"} <= {f.code for f in row.findings}
        assert row.vs_healthy.beyond_noise
    else:
        assert row.result is None and row.crash.code == "AUX_WIDTH_MISMATCH"
        assert "fc would crash" in row.crash.title and row.crash in row.findings
    args = ["offline", "--draft", str(draft), "--target", str(TARGET), "--engine", release,
            "--no-aux-capture", "--num-prompts", FEW, "--json"]  # fmt: skip
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["result"]["prompts"] == int(FEW)
    assert (rows[1]["crash"] is None) == release.startswith("sglang")
    assert main([*args, "--fail-on", "critical"]) == 1


def test_the_what_if_matrix_runs_every_row_past_a_crash(common):
    """On vLLM the incident's aux-capture-off row cannot start; the rows after it still run,
    and there is no fix row: vLLM loads the draft as it is."""
    rows = fault_matrix(TARGET, DRAFT, "vllm==0.33.0", **common)
    assert [r.label for r in rows] == [
        "healthy",
        "vllm==0.33.0, aux capture off",
        "vllm==0.33.0, aux capture on",
    ]
    assert rows[1].result is None and rows[1].crash.code == "AUX_WIDTH_MISMATCH"
    assert rows[2].result.figures()["counts"] == rows[0].result.figures()["counts"]


def test_a_release_that_cannot_load_the_draft_is_a_crash_row(common):
    """SGLang 0.4.8 fails at start-up on this draft (STARTUP_CRASH from the load replay): both
    of its rows carry that finding, healthy is still measured."""
    rows = fault_matrix(TARGET, DRAFT, "sglang==0.4.8", **common)
    assert rows[0].result is not None
    assert [r.crash.code for r in rows[1:3]] == ["STARTUP_CRASH", "STARTUP_CRASH"]
    assert all(r.result is None for r in rows[1:3])


def test_as_loaded_by_is_an_alias_of_engine(capsys):
    args = ["offline", "--draft", str(DRAFT), "--target", str(TARGET), "--num-prompts", "5",
            "--json"]  # fmt: skip

    def rows() -> list[dict]:
        out = json.loads(capsys.readouterr().out)["rows"]
        return [r["label"] for r in out] + [r["result"]["counts"] for r in out]

    assert main([*args, "--as-loaded-by", "sglang==0.5.10"]) == 0
    aliased = rows()
    assert main([*args, "--engine", "sglang==0.5.10"]) == 0
    assert rows() == aliased and aliased[1] == "as deployed: sglang==0.5.10, aux capture on"


def test_a_target_class_the_release_cannot_capture_for_is_its_crash(common):
    """Kimi-K2.5 is an SGLang architecture from 0.5.9 but implements
    set_eagle3_layers_to_capture only from 0.5.10 (models/kimi_k25.py:841-850): on 0.5.9 the
    server does not start, which is the row's crash, not the decoder layer 0.5.9 also drops."""
    row = as_deployed(TARGET, DRAFT, "sglang==0.5.9",
                      target_class="KimiK25ForConditionalGeneration", **common)  # fmt: skip
    assert row.result is None and row.crash.code == "AUX_CAPTURE_UNSUPPORTED"
    assert "KEYS_SILENTLY_DROPPED" in {f.code for f in row.findings}
    later = as_deployed(TARGET, DRAFT, "sglang==0.5.10",
                        target_class="KimiK25ForConditionalGeneration", **common)  # fmt: skip
    assert later.crash is None and later.result.wiring.layers == (2, 4, 5)


def test_the_row_after_kit_fix_is_what_the_fix_buys(common):
    """The bundled speculators draft on sglang==0.5.10 needs a rename and a config: the row
    after `kit fix` says so and reaches the healthy figure; vllm==0.32.0 loads the draft as it
    is, so there is no such row."""
    from kit.offline_acceptance import as_fixed

    ref = healthy(TARGET, DRAFT, **common, count_as="sglang==0.5.10")
    row = as_fixed(TARGET, DRAFT, "sglang==0.5.10", against=ref, **common)
    assert row is not None and row.label.startswith(
        "as deployed after kit fix (rename, config.json)"
    )
    assert row.vs_healthy is not None and not row.vs_healthy.beyond_noise
    assert as_fixed(TARGET, DRAFT, "vllm==0.32.0", **common) is None
