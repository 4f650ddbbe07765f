"""A file that is no log or metrics, given where a log goes (`acceptance`, `doctor --log`,
`run --log`): one line naming the file and what it is, exit 2, never pages of unparsed lines.
A log in an unexpected wrapper (a Markdown issue quoting it, a stretch of garbage before it, a
server that ran without speculation) is still read."""

from __future__ import annotations

import gzip
import json
import pickle
import zipfile
from pathlib import Path

import pytest

from kit import cli
from tests.conftest import DRAFT, ROOT

SGLANG = (
    "[2026-03-02 10:00:03 TP0] Decode batch, #running-req: 6, #token: 271493, token usage: 0.23, "
    "accept len: 1.00, accept rate: 0.20, cuda graph: True, gen throughput (token/s): 25.00, "
    "#queue-req: 0"
)


def _zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"a": 1}))
    return path


NOT_LOGS = {
    "safetensors": (lambda d: DRAFT / "model.safetensors", "a safetensors file"),
    "readme": (lambda d: ROOT / "README.md", "a document with no acceptance figure"),
    "rst": (lambda d: _write(d / "notes.rst", "Title\n=====\n\nprose only\n"), "a document"),
    "config": (lambda d: DRAFT / "config.json", "JSON with no acceptance figure (a model config)"),
    "torch_zip": (lambda d: _zip(d / "pytorch_model.bin"), "a zip archive"),
    "pickle": (lambda d: _write(d / "w.pt", pickle.dumps([1.0] * 8, protocol=4)), "a pickle"),
    "gzip": (lambda d: _write(d / "server.log.gz", gzip.compress(SGLANG.encode())), "gzip"),
    "binary": (lambda d: _write(d / "blob.log", bytes(range(256)) * 64), "a binary file"),
}


def _write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _one_line(argv: list[str], capsys) -> str:
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and err.startswith("error: "), err
    assert "UNPARSED" not in captured.out
    return err


@pytest.mark.parametrize("case", sorted(NOT_LOGS))
def test_acceptance_refuses_what_is_no_log_in_one_line(tmp_path, capsys, case):
    make, what = NOT_LOGS[case]
    path = make(tmp_path)
    err = _one_line(["acceptance", str(path)], capsys)
    assert err.startswith(f"error: {path}: not a log or metrics: ") and what in err


@pytest.mark.parametrize("case", ["safetensors", "readme", "config"])
def test_doctor_and_run_refuse_it_before_any_check(tmp_path, capsys, case):
    path = NOT_LOGS[case][0](tmp_path)
    err = _one_line(["doctor", "--draft", str(DRAFT), "--log", str(path)], capsys)
    assert "not a log or metrics" in err
    out = tmp_path / "run"
    err = _one_line(["run", "--draft", str(DRAFT), "--log", str(path), "--out", str(out)], capsys)
    assert "not a log or metrics" in err and not out.exists()  # before any notebook ran


def test_a_markdown_report_quoting_a_log_is_read(tmp_path, capsys):
    report = _write(
        tmp_path / "issue.md",
        f"# Zero acceptance on 0.5.10\n\nServer log:\n\n```\n{SGLANG}\n{SGLANG}\n```\n",
    )
    assert cli.main(["acceptance", str(report), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert run["windows"] == 2


def test_garbage_before_a_log_line_is_read(tmp_path, capsys):
    blob = _write(tmp_path / "server.log", bytes(range(1, 10)) * 500 + b"\n" + SGLANG.encode())
    assert cli.main(["acceptance", str(blob), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["windows"] == 1


def test_a_server_log_without_speculation_is_a_finding_not_a_refusal(tmp_path, capsys):
    """Engine lines with no acceptance figure: the log is read and says so."""
    log = _write(
        tmp_path / "nospec.log", SGLANG.replace(", accept len: 1.00, accept rate: 0.20", "")
    )
    assert cli.main(["acceptance", str(log), "--json"]) == 0
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "NO_ACCEPTANCE_DATA" in codes


def test_a_scrape_without_speculation_is_still_read_as_metrics(tmp_path, capsys):
    """Prometheus text of a server without speculation: metrics, so read (a note says no
    speculative-decoding metric), not refused."""
    scrape = _write(
        tmp_path / "m.prom", "# HELP vllm:num_requests_running x\nvllm:num_requests_running 0\n"
    )
    assert cli.main(["acceptance", str(scrape), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert "no speculative-decoding metric in this exposition" in run["notes"]
