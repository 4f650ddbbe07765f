"""Near-zero acceptance and the acceptance command's output: what a broken-but-not-dead draft
looks like in `acceptance`, `doctor` and the postmortem, and how findings are printed and gated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kit.acceptance import analyze, parse_files
from kit.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "data" / "incident" / "logs"
KIMI = ROOT / "data" / "incident" / "kimi-k2.5"


def sglang_0_5_10(als: list[float], d: int = 5, tp: int = 8) -> str:
    """Decode lines in 0.5.10's format (observability/scheduler_metrics_mixin.py:608-657) with
    its rate accept_len / D (:608-657, formula of 0.5.6 :276-294), 40 s apart."""
    lines = []
    for i, al in enumerate(als):
        m, s = divmod(i * 40, 60)
        lines.append(
            f"[2026-03-02 10:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {1 + i % 3}, "
            f"#token: {500 + 37 * i}, token usage: 0.00, accept len: {al:.2f}, accept rate: "
            f"{al / d:.2f}, cuda graph: False, gen throughput (token/s): {24.5 * al:.2f}, "
            f"#queue-req: 0"
        )
        if i % 10 == 0:
            lines.append(f"[2026-03-02 10:{m:02d}:{s:02d} TP{i % tp}] Prefill batch, #new-seq: 1, "
                         "#new-token: 812, #cached-token: 0, token usage: 0.00, #running-req: 0, "
                         "#queue-req: 0, cuda graph: False, input throughput (token/s): 1900.12")  # fmt: skip
    return "\n".join(lines) + "\n"


NEAR_ZERO = [1.00, 1.02, 1.04, 1.06, 1.08] * 12  # 60 windows, mean 1.04: 1 draft in 100 at k = 4


@pytest.fixture
def near_zero_log(tmp_path) -> Path:
    p = tmp_path / "near-zero.log"
    p.write_text(sglang_0_5_10(NEAR_ZERO))
    return p


def test_near_zero_acceptance_is_a_critical_finding(near_zero_log):
    """60 windows at accept len 1.00-1.08 with 5 draft tokens (4 drafted per step at topk 1):
    0.04 accepted drafts per step of 4, one in a hundred. Only 12 of 60 windows sit exactly at
    1.00, so ZERO_ACCEPTANCE stays quiet and NEAR_ZERO_ACCEPTANCE names the share."""
    (run,) = parse_files([near_zero_log], engine="sglang==0.5.10")
    findings = analyze([run]).findings
    (near,) = [f for f in findings if f.code == "NEAR_ZERO_ACCEPTANCE"]
    assert "ZERO_ACCEPTANCE" not in {f.code for f in findings}
    assert near.severity.name == "CRITICAL" and "near-zero.log" in near.title
    assert near.evidence[0].startswith("1.0% of drafted tokens accepted")
    assert "12/60 windows accepted no draft at all" in near.evidence
    assert near.data["draft_share"] == pytest.approx(0.01)


@pytest.mark.parametrize(
    ("als", "engine", "steps", "expected"),
    [
        ([1.00, 1.60] * 10, "sglang==0.5.10", 4, None),  # 7.5 %: weak, not near zero
        ([1.00, 1.04] * 10, "sglang==0.5.23", 4, "NEAR_ZERO_ACCEPTANCE"),  # 0.5.11+ formula
        ([1.08] * 20, "sglang==0.5.4", 2, "NEAR_ZERO_ACCEPTANCE"),  # 4 % at k = 2
        ([1.00] * 19 + [1.04], "sglang==0.5.10", 4, "ZERO_ACCEPTANCE"),  # 95 % at the floor
        ([3.10, 2.90] * 10, "sglang==0.5.10", 4, None),  # healthy
    ],
)
def test_near_zero_for_any_release_and_chain(tmp_path, als, engine, steps, expected):
    p = tmp_path / "x.log"
    p.write_text(sglang_0_5_10(als, d=steps + 1))
    (run,) = parse_files([p], engine=engine, num_steps=steps, topk=1)
    codes = {f.code for f in analyze([run]).findings}
    assert codes & {"ZERO_ACCEPTANCE", "NEAR_ZERO_ACCEPTANCE"} == (
        {expected} if expected else set()
    )


def test_near_zero_without_the_chain_length_uses_an_upper_bound(tmp_path):
    """accept len 1.03 with no D given and no rate printed (0.5.3.post1's format): at most 3 %
    of drafts are accepted whatever k is."""
    line = (
        "[2025-10-22 10:27:{s:02d}] Decode batch. #running-req: 1, #token: 340, token usage: 0.00, "
        "accept len: 1.03, cuda graph: True, gen throughput (token/s): 25.10, #queue-req: 0, \n"
    )
    p = tmp_path / "old.log"
    p.write_text("".join(line.format(s=s) for s in range(20)))
    (run,) = parse_files([p])
    (near,) = [f for f in analyze([run]).findings if f.code == "NEAR_ZERO_ACCEPTANCE"]
    assert "chain length unknown" in near.evidence[0]


def test_acceptance_command_prints_near_zero_and_gates_on_it(near_zero_log, capsys):
    rc = main(["acceptance", str(near_zero_log), "--engine", "sglang", "--fail-on", "critical"])
    out = capsys.readouterr().out
    assert rc == 1 and "NEAR_ZERO_ACCEPTANCE" in out
    assert main(["acceptance", str(near_zero_log), "--fail-on", "critical", "--json"]) == 1


def test_doctor_ranks_near_zero_like_zero(near_zero_log):
    from kit.verdict import diagnose

    report = diagnose(KIMI / "draft", engine="sglang==0.5.10", logs=[near_zero_log])
    (near,) = [f for f in report.findings if f.code == "NEAR_ZERO_ACCEPTANCE"]
    assert near.severity.name == "CRITICAL"
    assert report.findings.index(near) <= min(
        i for i, f in enumerate(report.findings) if not f.root_cause
    )


@pytest.mark.slow
def test_postmortem_symptom_section_shows_near_zero(near_zero_log, tmp_path):
    """A real run of the acceptance notebook and the postmortem (papermill) on the log alone."""
    from kit.report.runbook import RunInputs, run

    result = run(RunInputs(logs=[near_zero_log]), tmp_path / "run", progress=False)
    html = (tmp_path / "run" / "postmortem.html").read_text()
    verdict = html[html.index('class="card verdict"') : html.index("</section>")]
    assert "NEAR_ZERO_ACCEPTANCE" in verdict
    assert "near-zero acceptance: 1.0% of drafted tokens are accepted" in verdict
    assert "NEAR_ZERO_ACCEPTANCE" in {f.code for f in result.findings}


def test_no_findings_is_said_not_an_empty_table(capsys):
    assert main(["acceptance", str(LOGS / "after-both-fixes.log")]) == 0
    out = capsys.readouterr().out
    assert "no findings" in out and "Acceptance findings\n" not in out


def test_no_speedup_titles_name_their_logs(capsys):
    rc = main(["acceptance", str(LOGS / "before.log"), str(LOGS / "after-rename.log"),
               "--baseline", str(LOGS / "baseline-no-spec.log"), "--json"])  # fmt: skip
    titles = [f["title"] for f in json.loads(capsys.readouterr().out)["findings"]
              if f["code"] == "NO_SPEEDUP"]  # fmt: skip
    assert rc == 0 and len(titles) == 2 and len(set(titles)) == 2
    assert titles[0].startswith(("before.log", "after-rename.log"))


def test_compare_with_one_log_is_a_usage_error():
    p = subprocess.run(
        [sys.executable, "-m", "kit", "acceptance", str(LOGS / "before.log"), "--compare"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: --compare needs two logs") and p.stderr.count("\n") == 1


def test_one_unparsed_line_is_one_line(tmp_path):
    p = tmp_path / "one.log"
    p.write_text(sglang_0_5_10([2.5] * 3) + "garbage\nspec: acceptance ratio is 0.42 today\n")
    (run,) = parse_files([p])
    (f,) = [f for f in analyze([run]).findings if f.code == "UNPARSED_LINES"]
    assert f.title.startswith("1 line of ")


def test_server_version_that_contradicts_the_engine_given_is_a_conflict(tmp_path):
    """/get_server_info's `version` (0.5.10 entrypoints/http_server.py:601-618) against
    --engine sglang==0.5.4."""
    p = tmp_path / "info.json"
    p.write_text(json.dumps({"speculative_num_steps": 4, "version": "0.5.10",
                             "internal_states": [{"avg_spec_accept_length": 2.4}]}))  # fmt: skip
    (given,) = parse_files([p], engine="sglang==0.5.4")
    assert given.conflicts == [
        "--engine sglang==0.5.4 given, but the server reports version 0.5.10"
    ]
    (same,) = parse_files([p], engine="sglang==0.5.10")
    assert not same.conflicts and same.scopes == {"lifetime": 1}


def test_lifetime_average_is_said_to_be_cumulative(tmp_path):
    p = tmp_path / "avg.log"
    p.write_text("[2025-10-22 10:27:58] avg_spec_accept_length=2.3456\n")
    (run,) = parse_files([p])
    scope = analyze([run]).to_dict()["runs"][0]["interpretation"]["scope"]
    assert (
        list(scope) == ["lifetime"] and "cumulative since the server started" in scope["lifetime"]
    )
