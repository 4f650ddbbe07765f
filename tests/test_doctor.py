"""`doctor`: every check without Jupyter, on the incident's inputs, root causes ranked first."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kit.findings import Severity
from kit.verdict import diagnose
from tests.conftest import DATA, PAIR, ROOT

KIMI = DATA / "incident" / "kimi-k2.5"
LOGS = DATA / "incident" / "logs"


def test_the_incident_gives_both_root_causes_first(sample_dir):
    """sglang==0.5.10 drops `layers.0.*` and, with aux capture off, bypasses fc."""
    report = diagnose(
        sample_dir,
        target_config=KIMI / "target",
        draft_config=KIMI / "draft",
        engine="sglang==0.5.10",
        logs=[LOGS / "before.log"],
        aux_capture=False,
    )
    codes = [f.code for f in report.findings]
    causes = [f.code for f in report.root_causes]
    assert {"KEYS_SILENTLY_DROPPED", "FC_BYPASSED"} <= set(causes)
    assert codes[: len(causes)] == causes  # every root cause ranks above every other finding
    assert "ZERO_ACCEPTANCE" in codes
    assert report.facts["fc_applied"] is False and report.facts["hidden_width"] == 7168
    assert report.facts["keys dropped silently"] > 0
    assert set(report.skipped) == {"offline"}


def test_a_release_that_loads_the_layout_and_captures_has_no_root_cause(sample_dir):
    report = diagnose(
        sample_dir,
        target_config=KIMI / "target",
        draft_config=KIMI / "draft",
        engine="sglang==0.5.12",
    )
    assert "KEYS_SILENTLY_DROPPED" not in {f.code for f in report.findings}
    assert not {"FC_BYPASSED", "AUX_WIDTH_MISMATCH"} & {f.code for f in report.findings}
    # the config given is refused as saved: fc is predicted to run once rewritten, never claimed
    assert (
        report.facts["hidden_width"] == f"{3 * 7168} if the server read the config kit fix writes"
    )
    assert report.facts["fc_applied"].startswith("unverified: sglang==0.5.12 refuses")


def test_checks_without_their_input_are_listed_as_skipped(sample_dir):
    report = diagnose(sample_dir)
    assert set(report.checks) == {"inspection", "load"}
    # a release named (given, or the one the evidence allows) that drafts late is judged too:
    # without a target its cost is unmeasured; the kit's default release alone says nothing
    named = diagnose(sample_dir, engine="sglang==0.5.10")
    (late,) = named.checks["release"]
    assert late.code == "DRAFT_POSITIONS_LATE" and "unmeasured" in late.title
    assert report.skipped == {
        "capture": "no target config given",
        "offline": "needs --target (a transformers target folder with weights)",
        "acceptance": "no server log given",
        "deployment": "needs --launch, or --target-config",
    }


def test_skip_reasons_name_exactly_what_is_missing(kimi_config_only):
    """Each skip names the input that is absent, not every input the check could use."""
    config_only = diagnose(kimi_config_only, target=PAIR / "target", target_config=KIMI / "target")
    assert config_only.skipped["offline"] == (
        "needs the draft's weights: the --draft folder holds only a config"
    )
    no_draft = diagnose(target_config=KIMI / "target", logs=[LOGS / "before.log"])
    assert no_draft.skipped["offline"] == (
        "needs --draft (a checkpoint) and --target (a transformers target folder)"
    )
    assert no_draft.skipped["deployment"] == "needs --launch, or --draft"


def test_a_config_only_draft_is_traced_not_inspected(kimi_config_only):
    report = diagnose(kimi_config_only, target_config=KIMI / "target", aux_capture=False)
    assert "inspection" in report.skipped and "load" in report.skipped
    assert "FC_BYPASSED" in {f.code for f in report.root_causes}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kit", "doctor", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_cli_json_for_programs(sample_dir):
    out = _cli(
        "--draft", str(sample_dir), "--target-config", str(KIMI / "target"),
        "--draft-config", str(KIMI / "draft"), "--no-aux-capture", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["engine"] == "sglang==0.5.10"
    assert data["findings"][0]["root_cause"] is True
    assert set(data["checks_skipped"]) == {"acceptance", "offline"}


def test_cli_missing_log_is_one_line_naming_the_file(sample_dir, tmp_path):
    missing = tmp_path / "missing.log"
    out = _cli("--draft", str(sample_dir), "--log", str(missing))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr
    assert "missing.log" in out.stderr and "no such file" in out.stderr


@pytest.mark.parametrize("flag", ["--draft", "--target-config", "--target", "--train-tokenizer"])
def test_a_mistyped_path_is_an_error_not_a_clean_bill(tmp_path, flag):
    """A path that does not exist used to be read as "nothing to check": no findings, exit 0."""
    missing = tmp_path / "nope"
    given = [] if flag == "--draft" else ["--draft", str(PAIR / "draft")]
    out = _cli(*given, flag, str(missing), "--engine", "sglang==0.5.10")
    assert out.returncode == 2, out.stdout
    assert out.stderr == f"error: {missing}: no such file or directory\n"


def test_offline_acceptance_sets_the_expectation_the_logs_are_judged_against():
    """The bundled pair: healthy offline accept len is what the served figure should reach.
    The incident's log (accept len 1.00) falls far below it; the fixed deployment's does not."""
    common = {"target": PAIR / "target", "num_prompts": 20, "aux_capture": False}
    before = diagnose(PAIR / "draft", logs=[LOGS / "before.log"], **common)
    healthy = before.facts["offline_accept_len_healthy"]
    assert healthy > 3.0 > 1.1 > before.facts["offline_accept_len_as_deployed"]
    below = [f for f in before.findings if f.code == "BELOW_EXPECTED_ACCEPT_LEN"]
    assert below and f"{healthy:.2f}" in below[0].title
    fixed = diagnose(PAIR / "draft", logs=[LOGS / "after-both-fixes.log"], **common)
    assert "BELOW_EXPECTED_ACCEPT_LEN" not in {f.code for f in fixed.findings}


def test_cli_fail_on_gates_the_exit_code(sample_dir):
    """A team shipping drafts gates CI on the verdict: critical root causes fail the job."""
    args = ("--draft", str(sample_dir), "--engine", "sglang==0.5.10", "--json")
    assert _cli(*args).returncode == 0
    assert _cli(*args, "--fail-on", "critical").returncode == 1
    # vLLM reads the speculators config as saved; SGLang needs it in its own form first
    healthy = ("--draft", str(sample_dir), "--engine", "vllm==0.11.2", "--fail-on", "critical")
    assert _cli(*healthy).returncode == 0
    refused = ("--draft", str(sample_dir), "--engine", "sglang==0.5.12", "--fail-on", "critical")
    assert _cli(*refused).returncode == 1
    bad = _cli(*args, "--fail-on", "fatal")
    assert bad.returncode == 2 and "unknown severity" in bad.stderr


def test_a_target_with_another_vocabulary_is_flagged(tmp_path):
    """The draft's ids are its training tokenizer's: a target config with another vocab size
    gets a warning; the target it was trained on does not."""
    raw = json.loads((PAIR / "target" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(raw | {"vocab_size": 300}))
    other = diagnose(PAIR / "draft", target_config=tmp_path, engine="sglang==0.5.12")
    [warning] = [f for f in other.findings if f.code == "VOCAB_MISMATCH"]
    assert warning.severity == Severity.WARNING and "the target 300" in warning.title
    own = diagnose(PAIR / "draft", target_config=PAIR / "target", engine="sglang==0.5.12")
    assert "VOCAB_MISMATCH" not in {f.code for f in own.findings}


def test_narrow_terminal_stacks_findings_with_the_fix_whole(sample_dir):
    """At 80 columns a findings table folds the fix into slivers; doctor stacks each finding
    instead, and the fix command reads in one piece."""
    import os

    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "kit", "doctor", "--draft", str(sample_dir), "--engine",
         "sglang==0.5.10"], capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "┃" not in out.stdout and "critical · root cause UNSUPPORTED_CONFIG" in out.stdout
    assert f"fix {sample_dir} --engine sglang==0.5.10" in " ".join(out.stdout.split())
    assert max(len(line) for line in out.stdout.splitlines()) <= 80


def test_doctor_on_a_log_alone(tmp_path):
    """Any subset of inputs: a server log alone is read and judged; the other checks say why
    they did not run."""
    report = diagnose(logs=[LOGS / "before.log"], engine="sglang==0.5.10")
    assert "ZERO_ACCEPTANCE" in {f.code for f in report.findings}
    assert {"inspection", "load", "capture", "offline"} <= set(report.skipped)
    out = _cli("--log", str(LOGS / "before.log"), "--json")
    # the log's release (0.5.9 … 0.5.10 fit, 0.5.10 judged) drafts late: its cost unmeasured here
    assert out.returncode == 0 and json.loads(out.stdout)["checks_run"] == ["release", "acceptance"]
    assert _cli().returncode == 2  # nothing to check is a usage error, in one line


def test_logs_reconcile_a_refused_config(sample_dir):
    """A log proves the server ran, so the refused speculators config is not the one served:
    the refusal becomes CONFIG_NOT_SERVED and the keys are judged as the release loads them."""
    without = diagnose(sample_dir, engine="sglang==0.5.10")
    assert without.root_causes[0].code == "UNSUPPORTED_CONFIG"
    served = diagnose(sample_dir, engine="sglang==0.5.10", logs=[LOGS / "before.log"])
    codes = {f.code: f for f in served.findings}
    assert "UNSUPPORTED_CONFIG" not in codes and "CONFIG_NOT_SERVED" in codes
    assert codes["KEYS_SILENTLY_DROPPED"].root_cause
    assert not codes["KEYS_SILENTLY_DROPPED"].title.startswith("if config.json")


def test_doctor_reads_each_input_once(sample_dir, monkeypatch):
    """The incident's inputs (draft checkpoint, draft and target configs, log, launch line): each
    file is opened once, where doctor used to read the configs and the log twice each and enter
    the checkpoint reader five times. The checkpoint's one file is read twice, by two readers:
    its header when opened, then every value read (the samples for LOOKS_UNTRAINED, d2t and t2d)
    through one handle, not one open per tensor."""
    import builtins
    import io
    from collections import Counter
    from pathlib import Path

    from kit.checkpoint import files

    opened: Counter[str] = Counter()
    real_open = io.open

    def counting(file, *args, **kwargs):
        if isinstance(file, str | Path) and Path(file).resolve().is_relative_to(DATA):
            opened[Path(file).resolve().relative_to(DATA).as_posix()] += 1
        return real_open(file, *args, **kwargs)

    headers: Counter[str] = Counter()
    real_header = files._read_header

    def counting_header(file):
        headers[Path(file).name] += 1
        return real_header(file)

    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(files, "_read_header", counting_header)
    report = diagnose(
        sample_dir,
        target_config=KIMI / "target",
        draft_config=KIMI / "draft",
        engine="sglang==0.5.10",
        logs=[LOGS / "before.log"],
        aux_capture=False,
        launch=DATA / "incident" / "launch.sh",
    )
    assert {"inspection", "load", "capture", "acceptance", "deployment"} <= set(report.checks)
    sample = sample_dir.resolve().relative_to(DATA).as_posix()
    assert opened == {
        f"{sample}/config.json": 1,
        # the header when opened, then one handle for every value read (samples, d2t, t2d)
        f"{sample}/model.safetensors": 2,
        "incident/kimi-k2.5/draft/config.json": 1,
        "incident/kimi-k2.5/target/config.json": 1,
        "incident/logs/before.log": 1,
        "incident/launch.sh": 1,
    }
    assert headers == {"model.safetensors": 1}


def test_doctor_with_a_target_opens_the_draft_once_for_every_offline_row(monkeypatch):
    """With a target, doctor measures several rows (healthy, as deployed, the aux-id shifts, the
    chat template): each takes the draft opened once, so its config.json and header are read
    once for the command, and each row's module reads every tensor through one handle (where
    every row re-read the config and opened the file once per tensor: 22 and 76 times). The
    target's config is read once by the kit (and by transformers building the model, unless it
    is loaded already; it was 8), and its tokenizer loaded once for the chat rows and the
    deployment check (it was 2)."""
    import builtins
    import io
    from collections import Counter
    from pathlib import Path

    import safetensors
    import safetensors.torch  # bound to the real safe_open now, not to the counting one below

    import kit.offline_acceptance.measure as measure
    import kit.offline_acceptance.target as target_module
    from kit.checkpoint import files, tokenizer

    opened: Counter[str] = Counter()
    real_open, real_safe_open, real_measure = io.open, safetensors.safe_open, measure.measure
    handles: Counter[str] = Counter()
    rows: list[str] = []

    def counting(file, *args, **kwargs):
        if isinstance(file, str | Path) and Path(file).resolve().is_relative_to(DATA):
            opened[Path(file).resolve().relative_to(DATA).as_posix()] += 1
        return real_open(file, *args, **kwargs)

    def counting_safe_open(file, *args, **kwargs):
        handles[Path(file).resolve().relative_to(DATA).as_posix()] += 1
        return real_safe_open(file, *args, **kwargs)

    def counting_measure(*args, **kwargs):
        rows.append(args[2].release)
        return real_measure(*args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(safetensors, "safe_open", counting_safe_open)
    monkeypatch.setattr(measure, "measure", counting_measure)
    built: list[Path] = []  # transformers reads config.json itself when it builds the model
    real_build = target_module._from_pretrained
    monkeypatch.setattr(
        target_module, "_from_pretrained", lambda p, *a: built.append(p) or real_build(p, *a)
    )
    tokenizer._load.cache_clear()  # an earlier test's command may have loaded it
    headers: Counter[str] = Counter()
    real_header = files._read_header
    monkeypatch.setattr(files, "_read_header", lambda f: headers.update([f.name]) or real_header(f))
    report = diagnose(
        PAIR / "draft", target=PAIR / "target", target_config=PAIR / "target",
        engine="vllm==0.32.0", num_prompts=20,
    )  # fmt: skip
    assert "offline" in report.checks and len(rows) >= 4
    assert opened["pair/draft/config.json"] == 1
    # the header, the inspection's sampled values, the deployment check's d2t: one handle each
    assert opened["pair/draft/model.safetensors"] == 3
    assert headers == {"model.safetensors": 1}
    assert handles["pair/draft/model.safetensors"] == len(rows)
    assert opened["pair/target/config.json"] == 1 + len(built)
    assert opened["pair/target/tokenizer.json"] == 1


# vLLM 0.32.0's own lines (a run of the real engine on the bundled draft with its ids shifted):
# the layers it captures, then one metrics window.
VLLM_AUX_LINE = "(MainProcess pid=23765) INFO 12-02 00:13:17 [gpu_model_runner.py:5243] Using auxiliary layers from speculative config: (1, 3, 4)"
VLLM_METRICS_LINE = "(MainProcess pid=23765) INFO 12-02 00:13:20 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 4.40, Accepted throughput: 1087.00 tokens/s, Drafted throughput: 1600.05 tokens/s, Accepted: 2320 tokens, Drafted: 3415 tokens, Per-position acceptance rate: 0.755, 0.713, 0.675, 0.652, 0.602, Avg Draft acceptance rate: 67.9%"


@pytest.mark.parametrize(
    ("logged", "disagrees"), [("(2, 4, 5)", False), ("(1, 3, 4)", True)], ids=["same", "other"]
)
def test_the_engines_logged_aux_layers_against_the_kits_prediction(tmp_path, logged, disagrees):
    """vLLM logs the aux layers it captures when the config names them. The bundled draft names
    [2, 4, 5]: a log saying so is a fact, quiet; a log saying other layers means the kit's
    capture table is wrong for that engine, and doctor says so, naming both."""
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_AUX_LINE.replace("(1, 3, 4)", logged) + "\n" + VLLM_METRICS_LINE + "\n")
    report = diagnose(
        PAIR / "draft", target_config=PAIR / "target", engine="vllm==0.32.0", logs=[log]
    )
    assert report.facts["aux_layers_logged"] == json.loads(
        logged.replace("(", "[").replace(")", "]")
    )
    found = [f for f in report.findings if f.code == "CAPTURE_MODEL_DISAGREES"]
    assert bool(found) is disagrees
    if disagrees:
        assert "[1, 3, 4]" in found[0].title and "[2, 4, 5]" in found[0].title


def test_the_aux_layers_line_is_read_not_left_unread(tmp_path):
    import kit

    log = tmp_path / "vllm.log"
    log.write_text(VLLM_AUX_LINE + "\n" + VLLM_METRICS_LINE + "\n")
    (run,) = kit.analyze_logs([log]).runs
    assert run.facts["aux_layers"] == [1, 3, 4] and run.window_count == 1
    assert run.unparsed_lines == 0
