"""Every `--json` output, from a real run of its command on the bundled data, matches its schema
in docs/schemas/ and carries the schema_version that schema pins and the package's kit_version."""

from __future__ import annotations

import json
import shutil

import pytest
from engine_servers import SGLang, serve
from package.schemas import SCHEMAS, problems, schema_for

import kit
from kit.cli import main
from kit.schema import SCHEMA_VERSIONS
from tests.conftest import DATA, DRAFT, SAMPLE, TARGET

INCIDENT = DATA / "incident"
LOGS = INCIDENT / "logs"
KIMI = INCIDENT / "kimi-k2.5"

COMMANDS = {
    "inspect": ["inspect", str(DRAFT)],
    "simulate": ["simulate", str(SAMPLE), "--engine", "sglang==0.5.10"],
    "matrix": ["simulate", str(SAMPLE), "--engine", "all"],
    "fix": ["fix", str(SAMPLE), "--engine", "sglang==0.5.10"],
    "trace": ["trace", "--draft", str(KIMI / "draft"), "--target-config", str(KIMI / "target"),
              "--engine", "sglang==0.5.10"],
    "acceptance": ["acceptance", str(LOGS / "before.log"), str(LOGS / "after-rename.log"),
                   "--compare"],
    "deployment": ["deployment", "--launch", str(INCIDENT / "launch.sh")],
    "doctor": ["doctor", "--draft", str(DRAFT), "--log", str(LOGS / "before.log")],
    "offline": ["offline", "--target", str(TARGET), "--draft", str(DRAFT), "--engine",
                "sglang==0.5.10", "--num-prompts", "2", "--max-new-tokens", "6"],
    "error": ["inspect", str(DATA / "no-such-checkpoint")],
}  # fmt: skip


def _json_of(argv: list[str], capsys) -> tuple[int, dict]:
    rc = main([*argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def _check(out: dict, report: str) -> None:
    assert out["report"] == report
    assert out["schema_version"] == SCHEMA_VERSIONS[report]
    assert isinstance(out["schema_version"], int) and not isinstance(out["schema_version"], bool)
    assert out["kit_version"] == kit.__version__
    assert problems(out) == []


@pytest.mark.parametrize("report", sorted(COMMANDS))
def test_every_command_s_json_matches_its_schema(report, capsys):
    rc, out = _json_of(COMMANDS[report], capsys)
    assert rc == (2 if report == "error" else 0)
    _check(out, report)


def test_fix_that_writes_and_its_undo_match_their_schemas(tmp_path, capsys):
    work = tmp_path / "draft"
    shutil.copytree(SAMPLE, work)
    rc, out = _json_of(["fix", str(work), "--engine", "sglang==0.5.10", "--in-place"], capsys)
    _check(out, "fix")
    assert out["written"] and out["after"]["loads_cleanly"] and out["undo_record"]
    rc, out = _json_of(["fix", str(work), "--undo"], capsys)
    assert rc == 0
    _check(out, "undo")
    assert out["restored"]


def test_probe_json_matches_its_schema(capsys):
    with serve(SGLang(accepted=0.0).routes()) as url:
        rc, out = _json_of(["probe", url, "--requests", "1"], capsys)
    assert rc == 0
    _check(out, "probe")


def test_a_missing_field_is_caught():
    """The schemas are not vacuous: an output without a required field fails validation."""
    out = {"report": "doctor", "schema_version": 1, "kit_version": kit.__version__}
    assert any("engine" in p for p in problems(out))
    wrong_version = {**out, "schema_version": 2, "engine": "x", "checks_run": [],
                     "checks_skipped": {}, "facts": {}, "findings": []}  # fmt: skip
    assert any("schema_version" in p for p in problems(wrong_version))


def test_one_schema_per_report_and_its_version_is_the_code_s():
    files = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert files == set(SCHEMA_VERSIONS)
    for report, version in SCHEMA_VERSIONS.items():
        schema = schema_for(report)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["properties"]["schema_version"] == {"const": version}
        assert schema["properties"]["report"] == {"const": report}
