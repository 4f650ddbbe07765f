"""doctor as a differential diagnosis, on inputs shaped like what a team holds (issue: a verdict
from what the user holds, not from being told the answer).

The incident's own inputs (the draft checkpoint their trainer wrote, the target's config, the
launch line, the logs in the order they were written), with no release and no fault given, must
name the key drop as a root cause and the data path as the leading remaining suspect, with the
command that settles it; each other cause is confirmed, ruled out or unverified by the evidence
that decides it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit.differential import LogPoint, Seen, Status
from kit.differential import diagnose as differential
from kit.findings import Finding, Severity, with_inputs
from kit.verdict import diagnose
from tests.conftest import DATA, PAIR, ROOT

INCIDENT = DATA / "incident"
KIMI = INCIDENT / "kimi-k2.5"
LOGS = [INCIDENT / "logs" / f"{n}.log" for n in ("before", "after-rename", "after-both-fixes")]
LAUNCH = INCIDENT / "launch.sh"


@pytest.fixture(scope="module")
def incident():
    """doctor on exactly what the team held: nothing names the release or the fault."""
    return diagnose(KIMI / "draft", target_config=KIMI / "target", logs=LOGS, launch=LAUNCH)


def _status(report, key: str) -> Status:
    diff = report.differential
    return next(a.status for a in diff.assessments if a.cause.key == key)


def test_the_release_comes_from_the_logs_and_the_launch_line(incident):
    choice = incident.release
    assert incident.engine == "sglang==0.5.10"
    assert choice.basis == "evidence" and choice.fitting == ("0.5.9", "0.5.10")
    assert any("0.4.4.post2 … 0.5.23" in e for e in choice.evidence)  # the launch line
    assert any(">=0.5.9,<0.5.11" in e and "accept_len / D" in e for e in choice.evidence)
    # judged under the chosen release, the launch line and the logs disagree with nothing
    codes = {f.code for f in incident.findings}
    assert not codes & {"ENGINE_FORMAT_CONFLICT", "LAUNCH_RELEASE_ASSUMED"}


def test_the_key_drop_is_found_in_the_checkpoint(incident):
    assert _status(incident, "decoder") is Status.CONFIRMED
    assert "KEYS_SILENTLY_DROPPED" in {f.code for f in incident.root_causes}


def test_the_data_path_is_the_leading_remaining_suspect_with_what_settles_it(incident):
    diff = incident.differential
    lead = diff.leading
    assert lead is not None and lead.cause.key == "data_path"
    assert lead.status is Status.UNVERIFIED
    assert "sglang==0.5.10 refuses the config.json given" in lead.evidence[0]
    assert "python -m kit watch -- sh" in lead.settle and str(LAUNCH) in lead.settle
    assert "--draft-config" in lead.settle
    # 0.5.9, which the logs also allow, has no capture hook for this target class: a server
    # that ran there ran with capture off (sglang 0.5.9 has KimiK25 but no set_eagle3_layers_to_capture)
    (elsewhere,) = lead.evidence[1:]
    assert elsewhere.startswith("on sglang==0.5.9, which the evidence also allows, AttributeError")
    assert elsewhere.endswith(
        "a server that ran there ran with aux capture off, so fc was bypassed"
    )


def test_what_the_inputs_show_is_ruled_out(incident):
    for key in ("vocab_map", "head", "untrained", "algorithm", "target_states"):
        assert _status(incident, key) is Status.RULED_OUT, key


def test_the_logs_are_read_as_a_sequence(incident):
    before, after_rename, after_both = incident.differential.sequence
    assert before.startswith("before.log: accept len 1.00, at the floor")
    assert "still at the floor" in after_rename and "did not lift acceptance" in after_rename
    assert "another fault still holds acceptance at the floor" in after_rename
    assert "leading remaining suspect is aux capture off, fc bypassed" in after_rename
    assert "off the floor" in after_both


def test_fc_applied_is_never_claimed_for_a_config_the_server_did_not_read(incident):
    assert incident.facts["fc_applied"].startswith("unverified: sglang==0.5.10 refuses")
    verdict = incident.verdict
    assert not verdict.healthy
    assert verdict.headline == (
        "acceptance at the floor; 1 confirmed cause: the decoder layer not loaded; "
        "leading remaining suspect: aux capture off, fc bypassed (unverified)"
    )
    assert any(u.startswith("whether fc runs as served") for u in verdict.unchecked)


def test_the_cli_states_the_release_and_the_verdict_first():
    out = subprocess.run(
        [sys.executable, "-m", "kit", "doctor", "--draft", str(KIMI / "draft"),
         "--target-config", str(KIMI / "target"), "--launch", str(LAUNCH),
         *(f"--log={p}" for p in LOGS)],
        capture_output=True, text=True, cwd=ROOT, env={"COLUMNS": "120", "PATH": ""},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("doctor: judged as sglang==0.5.10, the newest of 0.5.9 … 0.5.10")
    head = lines[: next(i for i, line in enumerate(lines) if line.startswith("Symptom"))]
    assert any(line.startswith("verdict: acceptance at the floor") for line in head)
    text = out.stdout
    assert text.index("Causes that hold acceptance at the floor") < text.index("Findings")
    # the fix is a command on the user's own path
    assert f"python -m kit fix {KIMI / 'draft'} --engine sglang==0.5.10 --out" in " ".join(
        text.split()
    )
    assert "CKPT" not in text


def test_json_carries_the_release_the_verdict_and_the_differential(incident):
    d = json.loads(json.dumps(incident.to_dict(), default=str))
    assert d["release"]["release"] == "sglang==0.5.10" and d["release"]["basis"] == "evidence"
    assert d["differential"]["leading_suspect"] == "data_path"
    statuses = {c["cause"]: c["status"] for c in d["differential"]["causes"]}
    assert statuses["decoder"] == "confirmed" and statuses["data_path"] == "unverified"


def test_a_served_config_with_capture_switched_off_confirms_the_data_path(tmp_path):
    """SpecForge's own layout (loads as saved on 0.5.10) with `use_aux_hidden_state: false`:
    the config given is the one served, so the data path is confirmed, not a suspect."""
    draft = tmp_path / "draft"
    shutil.copytree(DATA / "layouts" / "specforge", draft)
    cfg = json.loads((draft / "config.json").read_text())
    cfg["eagle_config"]["use_aux_hidden_state"] = False
    (draft / "config.json").write_text(json.dumps(cfg))
    target = tmp_path / "target"
    target.mkdir()
    tcfg = json.loads((PAIR / "target" / "config.json").read_text())
    tcfg.update(hidden_size=32, num_hidden_layers=32, vocab_size=64)  # the layout's dimensions
    (target / "config.json").write_text(json.dumps(tcfg))
    report = diagnose(draft, target_config=target, engine="sglang==0.5.10", logs=[LOGS[0]])
    assert _status(report, "data_path") is Status.CONFIRMED
    assert _status(report, "decoder") is Status.RULED_OUT  # midlayer.* loads on 0.5.10
    fc = next(f for f in report.findings if f.code == "FC_BYPASSED")
    assert fc.fix == "set eagle_config.use_aux_hidden_state to true (or remove it)"


def test_aux_capture_given_off_is_assumed_not_confirmed(sample_dir):
    report = diagnose(
        sample_dir,
        target_config=KIMI / "target",
        draft_config=KIMI / "draft",
        engine="sglang==0.5.10",
        logs=[LOGS[0]],
        aux_capture=False,
    )
    assert _status(report, "data_path") is Status.ASSUMED
    assert report.facts["fc_applied"] is False  # as given, not a prediction about the server


def test_without_a_checkpoint_the_key_drop_is_unverified_with_what_settles_it(kimi_config_only):
    report = diagnose(kimi_config_only, target_config=KIMI / "target", logs=LOGS, launch=LAUNCH)
    decoder = next(a for a in report.differential.assessments if a.cause.key == "decoder")
    assert decoder.status is Status.UNVERIFIED
    assert decoder.evidence == ("not seen: the draft checkpoint",)
    assert "--draft" in decoder.settle
    # nothing confirmed: the sequence says the floor survived, without claiming a fix was made
    assert "If it fixed" not in report.differential.sequence[1]


def test_capture_off_cannot_be_silent_when_the_widths_differ():
    """With the target wider than the draft, capture off crashes the first batch; a server
    that ran rules it out."""
    floor = Finding("ZERO_ACCEPTANCE", Severity.CRITICAL, "floor", root_cause=False)
    seen = Seen(target=True, widths_equal=False, server_ran=True)
    diff = differential([floor], seen, [LogPoint("a.log", 1.0, True)])
    data_path = next(a for a in diff.assessments if a.cause.key == "data_path")
    assert data_path.status is Status.RULED_OUT and "would crash" in data_path.evidence[0]


def test_two_confirmed_causes_explain_a_floor_that_survived_one_fix():
    drop = Finding("KEYS_SILENTLY_DROPPED", Severity.CRITICAL, "dropped", root_cause=True)
    fc = Finding("FC_BYPASSED", Severity.CRITICAL, "bypassed", root_cause=True)
    logs = [LogPoint("a.log", 1.0, True), LogPoint("b.log", 1.0, True)]
    diff = differential([drop, fc], Seen(weights=True, target=True), logs)
    assert [a.status for a in diff.assessments[:2]] == [Status.CONFIRMED, Status.CONFIRMED]
    assert "2 confirmed causes" in diff.sequence[1] and "a fix of one alone" in diff.sequence[1]


def test_no_differential_without_a_symptom(sample_dir):
    assert diagnose(sample_dir, engine="sglang==0.5.12").differential is None


@pytest.mark.slow
def test_a_healthy_deployment_gets_a_positive_verdict():
    """The bundled pair as vLLM 0.32.0 serves it (speculators format read as saved)."""
    report = diagnose(PAIR / "draft", target=PAIR / "target", engine="vllm==0.32.0", num_prompts=40)
    verdict = report.verdict
    assert verdict.healthy, [f.code for f in report.findings if f.severity >= Severity.WARNING]
    assert verdict.headline.startswith("healthy: loads fully on vllm==0.32.0")
    held = " ".join(verdict.holds)
    assert "fc runs on 3 target states [2, 4, 5] (384 → 128 wide)" in held
    assert "aux ids match training (states [2, 4, 5])" in held
    assert "expected accept length" in held and "within the healthy interval" in held


def test_fix_placeholders_become_the_users_paths():
    f = Finding("X", Severity.INFO, "t", fix="python -m kit fix CKPT --engine sglang==X --out "
                "CKPT-fixed; offline --target TARGET --draft DRAFT; vllm==X stays")  # fmt: skip
    (out,) = with_inputs([f], {"draft": "my draft", "target": "t", "release": "sglang==0.5.10"})
    assert out.fix == (
        "python -m kit fix 'my draft' --engine sglang==0.5.10 --out 'my draft'-fixed; "
        "offline --target t --draft 'my draft'; vllm==X stays"
    )


def test_a_fix_says_which_releases_its_output_stops_loading_on(tmp_path):
    """SpecForge's `LlamaForCausalLMEagle3` rewritten to vLLM 0.10.1.1's `LlamaForCausalLM` (the
    SpecForge name is registered only from 0.10.2, models/registry.py:283): every SGLang release
    refuses the output, and fix says so before anything is written."""
    draft = DATA / "layouts" / "specforge"
    out = subprocess.run(
        [sys.executable, "-m", "kit", "fix", str(draft), "--engine", "vllm==0.10.1.1", "--json"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    lost = json.loads(out.stdout)["stops_loading_on"]
    assert lost["sglang"][0] == "0.4.4.post2" and lost["sglang"][-1] == "0.5.23"
    assert "vllm" not in lost
    text = subprocess.run(
        [sys.executable, "-m", "kit", "fix", str(draft), "--engine", "vllm==0.10.1.1"],
        capture_output=True, text=True, cwd=ROOT,
    ).stdout  # fmt: skip
    assert "the output stops loading on sglang 0.4.4.post2 … 0.5.23" in text


def test_a_fix_that_costs_nothing_elsewhere_says_nothing():
    out = subprocess.run(
        [sys.executable, "-m", "kit", "fix", str(DATA / "layouts" / "specforge"), "--engine",
         "sglang==0.5.10", "--json"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert json.loads(out.stdout)["stops_loading_on"] == {}


def test_the_aux_id_fix_names_the_ids_and_the_command(tmp_path):
    report = diagnose(
        DATA / "layouts" / "specforge", target_config=PAIR / "target", engine="vllm==0.32.0"
    )
    (offset,) = [f for f in report.findings if f.code == "AUX_LAYER_OFFSET"]
    assert "top-level eagle_aux_hidden_state_layer_ids [2, 16, 29]" in offset.fix
    assert offset.fix.endswith(
        f"python -m kit fix {DATA / 'layouts' / 'specforge'} --engine vllm==0.32.0 --out "
        f"{DATA / 'layouts' / 'specforge'}-fixed"
    )


def test_a_conflicting_release_names_every_formula_the_log_fits(tmp_path):
    """A 0.5.5-0.5.8 decode line (trailing ", ") at D = steps + 1 fits two formulas that print
    the same rate: the conflict says the log cannot tell them apart."""
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-01-01 00:00:00] Decode batch, #running-req: 1, #token: 300, token usage: 0.00, "
        "accept len: 2.00, accept rate: 0.40, cuda graph: True, gen throughput (token/s): 90.0, "
        "#queue-req: 0, \n"
    )
    report = diagnose(logs=[log], engine="sglang==0.5.23", num_draft_tokens=5)
    (conflict,) = [f for f in report.findings if f.code == "ENGINE_FORMAT_CONFLICT"]
    said = " ".join(conflict.evidence)
    assert "accept_len / (num_steps + 1)" in said and "accept_len / D" in said
    assert "the log alone cannot tell these releases apart" in said


def test_release_evidence_without_any_input_is_the_stated_default():
    from kit.release_choice import choose

    choice = choose(None)
    assert choice.basis == "default" and str(choice.release) == "sglang==0.5.10"
    assert choice.summary.startswith("sglang==0.5.10 (the default: no release given")
    assert choose("vllm").release.name == "vllm"


def test_a_log_that_no_launch_release_allows_is_a_stated_conflict(tmp_path: Path):
    from kit.acceptance import parse_files
    from kit.release_choice import choose

    (run,) = parse_files([LOGS[0]], engine="sglang")
    choice = choose(None, launch_engine="sglang", launch_fitting=("0.5.20", "0.5.23"), runs=[run])
    assert str(choice.release) == "sglang==0.5.23"
    assert choice.conflicts and "which no other evidence allows" in choice.conflicts[0]


def test_simulate_says_what_it_does_not_check_and_points_to_doctor():
    """A load replay with no findings is about the keys alone: SpecForge's ids are read by vLLM
    0.32.0 one layer early (doctor's AUX_LAYER_OFFSET), which simulate does not look at."""
    draft = DATA / "layouts" / "specforge"
    out = subprocess.run(
        [sys.executable, "-m", "kit", "simulate", str(draft), "--engine", "vllm==0.32.0"],
        capture_output=True, text=True, cwd=ROOT,
    ).stdout  # fmt: skip
    said = " ".join(out.split())
    assert "Findings for vllm==0.32.0: no findings" in said
    assert "it does not check the aux layer ids" in said
    assert f"python -m kit doctor --draft {draft} --engine vllm==0.32.0" in said
