"""What users expect of a command line: one line per command in --help, the exit codes written
down, plain text off a terminal or under NO_COLOR, --quiet printing findings only, a missing extra
named in one line (exit 2), and the package's own entry points."""

from __future__ import annotations

import os
import subprocess
import sys

from kit.cli import COMMANDS, SUMMARY, build_parser
from tests.conftest import DATA, DRAFT, ROOT

BEFORE = DATA / "incident" / "logs" / "before.log"
ESC = "\x1b["


def _kit(*args: str, env: dict | None = None, code: str | None = None):
    """The CLI in a fresh interpreter, stdout a pipe (not a terminal), run outside the checkout."""
    argv = ["-c", code, *args] if code else ["-m", "kit", *args]
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd="/",
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def test_help_lists_every_command_on_one_line_and_the_exit_codes():
    text = build_parser().format_help()
    lines = text.splitlines()
    for name in COMMANDS:
        [line] = [x for x in lines if x.strip().startswith(name + " ")]
        assert SUMMARY[name] in line and len(line) <= 80
    assert set(SUMMARY) == set(COMMANDS)
    for code in ("0  clean", "1  a --fail-on", "2  bad input"):
        assert code in text


def test_piped_output_is_plain_text():
    out = _kit("acceptance", str(BEFORE))
    assert out.returncode == 0 and "ZERO_ACCEPTANCE" in out.stdout
    assert ESC not in out.stdout


def test_no_color_is_plain_even_on_a_terminal():
    forced = _kit("acceptance", str(BEFORE), env={"FORCE_COLOR": "1"})
    assert ESC in forced.stdout  # the check can fail: colour does reach a "terminal"
    plain = _kit("acceptance", str(BEFORE), env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert ESC not in plain.stdout and "ZERO_ACCEPTANCE" in plain.stdout


def test_quiet_prints_only_findings_at_or_above_the_threshold():
    full = _kit("acceptance", str(BEFORE)).stdout
    quiet = _kit("acceptance", str(BEFORE), "--quiet").stdout
    critical = _kit("acceptance", str(BEFORE), "--min-severity", "critical").stdout
    assert "Runs" in full and "Runs" not in quiet  # the table is not a finding
    assert quiet.startswith("critical ZERO_ACCEPTANCE")
    heads = [x.split()[0] for x in quiet.splitlines() if x and not x.startswith(" ")]
    assert "info" not in heads and heads.count("critical") >= 1
    assert critical.startswith("critical ZERO_ACCEPTANCE") and len(critical) <= len(quiet)
    assert "warning" not in [x.split()[0] for x in critical.splitlines() if x.strip()]


def test_quiet_leaves_json_whole():
    import json

    a = json.loads(_kit("doctor", "--draft", str(DRAFT), "--log", str(BEFORE), "--json").stdout)
    b = json.loads(
        _kit("doctor", "--draft", str(DRAFT), "--log", str(BEFORE), "--json", "-q").stdout
    )
    assert a == b


def test_a_missing_extra_is_one_line_naming_it():
    """torch made unimportable (as on the core install): offline stops with the pip line."""
    hide = "import sys; sys.modules['torch'] = None; from kit.cli import main; sys.exit(main())"
    out = _kit(
        "offline", "--target", str(DATA / "pair" / "target"), "--draft", str(DRAFT), code=hide
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        "error: this needs torch, which comes with the 'offline' extra: "
        "pip install 'eagle3-debug-kit[offline]'\n"
    )
    assert out.stdout == ""


def test_run_names_the_notebooks_extra_before_starting_anything(tmp_path):
    hide = "import sys; sys.modules['papermill'] = None; from kit.cli import main; sys.exit(main())"
    out = _kit("run", "--out", str(tmp_path / "run"), code=hide)
    assert out.returncode == 2
    assert "pip install 'eagle3-debug-kit[notebooks]'" in out.stderr
    assert len(out.stderr.splitlines()) == 1 and out.stdout == ""
    assert not (tmp_path / "run").exists()


def test_a_closed_pipe_is_no_traceback():
    head = subprocess.run(
        f"{sys.executable} -m kit inspect {DRAFT} --json | head -c 10",
        shell=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert head.stdout == '{\n  "repor' and "Traceback" not in head.stderr


def test_deployment_without_transformers_checks_the_rest_and_says_what_it_skipped():
    """The bundled draft keeps 256 of 512 ids (a d2t) and its target has a tokenizer: the
    unreachable-tokens rule would load it. Without transformers (the core install) that rule is
    skipped with the extra named, and every other check still runs: exit 0."""
    import json

    hide = (
        "import sys; sys.modules['transformers'] = None; from kit.cli import main; sys.exit(main())"
    )
    pair = ["--draft", str(DRAFT), "--target-config", str(DATA / "pair" / "target"), "--json"]
    out = _kit("deployment", *pair, code=hide)
    assert out.returncode == 0, out.stderr
    skipped = json.loads(out.stdout)["skipped"]
    assert "pip install 'eagle3-debug-kit[offline]'" in skipped["unreachable tokens"]
    full = json.loads(_kit("deployment", *pair).stdout)
    assert "unreachable tokens" not in full["skipped"] and "served_tokenizer" in full["facts"]


def test_a_public_call_names_the_extra_too():
    """kit.offline without torch: a KitError (also an ImportError) with the pip line."""
    code = (
        "import sys; sys.modules['torch'] = None; import kit\n"
        "try:\n"
        f"    kit.offline({str(DATA / 'pair' / 'target')!r}, {str(DRAFT)!r}, 'vllm==0.11.2')\n"
        "except kit.KitError as e:\n"
        "    print(type(e).__name__, isinstance(e, ImportError), e)\n"
    )
    out = _kit(code=code)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "MissingExtra True this needs torch, which comes with the 'offline' extra: "
        "pip install 'eagle3-debug-kit[offline]'\n"
    )
