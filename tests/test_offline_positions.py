"""Offline acceptance with each SGLang release's draft positions, against the real engine's counts.

sglang 0.5.10 runs every draft step after the first one RoPE position late
(speculative/eagle_worker.py:527 positions = seq_lens, :675 add_(1) before the forward); 0.5.12
runs them where trained (sglang PR #25015). sglang 0.5.10 itself, serving the bundled pair on a
CPU (300 prompts, greedy, float32, topk 1, the draft as `kit fix --engine sglang==0.5.10` writes
it), counted 704 verify steps at 4 steps / 5 draft tokens and 683 at 5 / 6; patched to run the
steps where trained, 678 and 647, the healthy wiring's counts. The reference module runs the
shifted positions through its own RoPE (`kit.tracing.draft.chain_positions`).
"""

from __future__ import annotations

import json

import pytest

import kit
from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.cli import main
from kit.findings import Severity
from kit.load.rewrite import plan_fix, write_fixed
from kit.offline_acceptance import as_deployed, evaluate, healthy
from tests.conftest import DRAFT, TARGET

LATE, FIXED = "sglang==0.5.10", "sglang==0.5.12"
CODE = "DRAFT_POSITIONS_LATE"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The draft as the team served it on 0.5.10: `kit fix --engine sglang==0.5.10`."""
    ck = open_checkpoint(DRAFT)
    plan = plan_fix(ck, load_draft_config(DRAFT), LATE)
    return write_fixed(ck, plan, tmp_path_factory.mktemp("served") / "draft")


def _codes(findings) -> dict:
    return {f.code: f for f in findings}


@pytest.mark.parametrize(("k", "engine_steps", "trained_steps"), [(4, 704, 678), (5, 683, 647)])
def test_0_5_10_as_deployed_takes_the_engines_verify_steps(
    served, target, prompts, k, engine_steps, trained_steps
):
    """All 300 prompts: the kit's count for 0.5.10 is the engine's own, and with every step
    where trained it is the healthy wiring's; the difference is a warning, not a wiring fault."""
    common = {"prompts": prompts, "target": target, "progress": False, "k": k}
    ref = healthy(TARGET, served, count_as=LATE, **common)
    row = as_deployed(TARGET, served, LATE, against=ref, **common)
    assert row.result.verify_steps == engine_steps
    assert row.result.trained_positions.verify_steps == trained_steps == ref.result.verify_steps
    assert row.result.wiring.late_positions == 1
    codes = _codes(row.findings)
    late = codes[CODE]
    assert late.severity == Severity.WARNING and not late.root_cause
    said = f"offline accept len {row.result.accept_len:.2f} here, {ref.result.accept_len:.2f}"
    assert said in late.title and "sglang==0.5.12 runs them" in late.title
    assert late.data["beyond_noise"] and late.data["difference"] < 0
    assert late.fix.startswith("upgrade to sglang==0.5.12")
    assert "eagle_worker.py:675 add_(1) before" in late.source and "#25015" in late.source
    assert "OFFLINE_BELOW_HEALTHY" not in codes  # the wiring itself is healthy
    assert row.vs_healthy.difference < 0  # what the row shows is what 0.5.10 reaches

    fixed = as_deployed(TARGET, served, FIXED, count_as=LATE, against=ref, **common)
    assert fixed.result.verify_steps == trained_steps and fixed.result.trained_positions is None
    assert CODE not in _codes(fixed.findings) and fixed.result.wiring.late_positions == 0


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_the_steps_where_trained_are_what_a_fixed_release_measures(
    served, target, prompts, temperature
):
    """The second figure is the fixed release's own, draw for draw: the same text, target pass
    and accept draws (0.5.12 counted as 0.5.10 counts, so only the positions differ)."""
    common = {"prompts": prompts[:40], "target": target, "progress": False,
              "temperature": temperature, "count_as": LATE}  # fmt: skip
    late = evaluate(TARGET, served, LATE, **common).result
    fixed = evaluate(TARGET, served, FIXED, **common).result
    assert late.trained_positions.figures() == fixed.figures()
    assert late.figures() != fixed.figures()


def test_a_wiring_fault_on_a_late_release_is_still_judged_against_healthy(served, target, prompts):
    """Aux capture off on 0.5.10 (fc bypassed) stays below healthy beyond the noise with its
    steps where trained too: OFFLINE_BELOW_HEALTHY, beside what the positions cost."""
    common = {"prompts": prompts[:60], "target": target, "progress": False}
    ref = healthy(TARGET, served, count_as=LATE, **common)
    row = as_deployed(TARGET, served, LATE, aux_capture=False, against=ref, **common)
    codes = _codes(row.findings)
    assert "OFFLINE_BELOW_HEALTHY" in codes and CODE in codes


def test_offline_cli_shows_the_finding_on_a_late_release_only(served, capsys):
    for release, expected in ((LATE, True), (FIXED, False)):
        args = ["offline", "--target", str(TARGET), "--draft", str(served), "--engine", release,
                "--num-prompts", "40", "--json"]  # fmt: skip
        assert main(args) == 0
        deployed = json.loads(capsys.readouterr().out)["rows"][1]
        assert (CODE in {f["code"] for f in deployed["findings"]}) == expected
        trained = deployed["result"]["trained_positions"]
        assert (trained is not None) == expected
        assert deployed["wiring"]["late_positions"] == int(expected)
    args = ["offline", "--target", str(TARGET), "--draft", str(served), "--engine", LATE,
            "--num-prompts", "40"]  # fmt: skip
    assert main(args) == 0
    assert (
        "with the draft steps where trained (see DRAFT_POSITIONS_LATE)" in capsys.readouterr().out
    )


def test_doctor_with_a_target_measures_the_cost_and_stays_quiet_on_a_fixed_release(served, capsys):
    base = ["doctor", "--draft", str(served), "--target", str(TARGET), "--num-prompts", "40",
            "--json"]  # fmt: skip
    assert main([*base, "--engine", LATE]) == 0
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "unmeasured" not in found[CODE]["title"] and "here" in found[CODE]["title"]
    assert main([*base, "--engine", FIXED]) == 0
    assert CODE not in {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}


def test_the_python_api_carries_it(served, prompts):
    few = {"prompts": prompts[:40], "progress": False}
    row = kit.offline(TARGET, served, LATE, **few)
    assert CODE in _codes(row.findings) and row.result.trained_positions is not None
    assert CODE not in _codes(kit.offline(TARGET, served, FIXED, **few).findings)
    unmeasured = _codes(kit.doctor(served, engine=LATE).findings)[CODE]
    assert "unmeasured" in unmeasured.title
    assert CODE not in _codes(kit.doctor(served, engine=FIXED).findings)
