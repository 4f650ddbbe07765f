"""Interpretation per release, failure signatures, speedup model and comparison, on the bundled
incident logs (data/incident/logs, rendered from SGLang 0.5.10's format strings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.acceptance import analyze, compare, expected_speedup, parse_files
from kit.engines import parse_engine, pick
from kit.engines.sglang.acceptance import ACCEPT_RATE

LOGS = Path(__file__).resolve().parent.parent / "data" / "incident" / "logs"
INCIDENT = "[2026-03-02 09:46:21 TP0] Decode batch, #running-req: 1, #token: 508, token usage: 0.00, accept len: 1.00, accept rate: 0.20, cuda graph: False, gen throughput (token/s): 24.67, #queue-req: 0\n"


@pytest.mark.parametrize(
    ("engine", "n", "printed"),
    [("sglang==0.5.3.post2", 5, "0.20"), ("sglang==0.5.10", 5, "0.20"),
     ("sglang==0.5.10", 8, "0.12"), ("sglang==0.5.11", 5, "0.00"), ("sglang==0.5.23", 4, "0.00")],
)  # fmt: skip
def test_zero_acceptance_rate_per_release(engine, n, printed):
    """Zero acceptance prints 1/(num_steps+1) in 0.5.3.post2-0.5.5 (scheduler_metrics_mixin.py
    :257-272), 1/D in 0.5.6-0.5.10 (0.5.6 :276-294), 0.00 from 0.5.11 (observability/
    scheduler_metrics_mixin.py:528-547; 0.5.23 metrics_reporter.py:973-1005)."""
    formula = pick(ACCEPT_RATE, parse_engine(engine)).value
    assert f"{formula.zero_rate(n):.2f}" == printed


def test_no_rate_before_0_5_3_post2():
    """0.5.3.post1 and earlier print no accept rate (0.4.10 scheduler_metrics_mixin.py:170-191)."""
    assert pick(ACCEPT_RATE, parse_engine("sglang==0.5.3.post1")).value is None


def test_incident_line_is_zero_acceptance(tmp_path):
    """The incident: sglang 0.5.10 (observability/scheduler_metrics_mixin.py:608-657), 5 draft
    tokens, `accept len: 1.00, accept rate: 0.20` → accept_len/D = 1/5: ZERO_ACCEPTANCE."""
    p = tmp_path / "incident.log"
    p.write_text(INCIDENT)
    (run,) = parse_files([p], engine="sglang==0.5.10", num_draft_tokens=5)
    report = analyze([run])
    (zero,) = [f for f in report.findings if f.code == "ZERO_ACCEPTANCE"]
    assert zero.severity.name == "CRITICAL"
    assert zero.engine == "sglang==0.5.10"
    assert "0.5.10 observability/scheduler_metrics_mixin.py:608-657" in zero.source
    assert any("accept len: 1.00, accept rate: 0.20" in e for e in zero.evidence)
    meaning = report.to_dict()["runs"][0]["interpretation"]
    assert meaning["rate_formula"] == "accept_len / D"
    assert meaning["zero_acceptance_rate"] == 0.2
    assert meaning["implied_accepted_drafts_per_step"] == 0.0


def test_incident_without_engine_infers_release_and_d(tmp_path):
    """Without --engine the 0.5.9+ format and the arithmetic 1.00/0.20 = 5 give sglang
    0.5.9-0.5.10 (accept_len / D, 0.5.6 scheduler_metrics_mixin.py:276-294) and D = 5; under
    0.5.11's formula 1.00 would print 0.00."""
    p = tmp_path / "incident.log"
    p.write_text(INCIDENT)
    (run,) = parse_files([p])
    assert run.engine == "sglang>=0.5.9,<0.5.11"
    assert run.num_draft_tokens == 5


def test_release_conflict_is_a_finding(tmp_path):
    """--engine sglang==0.5.11 (rate (al−1)/(D−1), 0.5.11 observability/scheduler_metrics_mixin.py
    :528-547) against a log printing 0.20 at accept len 1.00, and --engine sglang==0.5.4 against
    a 0.5.9+ line (no `[N]` header, 0.5.4 scheduler_metrics_mixin.py:249,270): both conflicts."""
    p = tmp_path / "incident.log"
    p.write_text(INCIDENT)
    for engine in ("sglang==0.5.11", "sglang==0.5.4"):
        (run,) = parse_files([p], engine=engine, num_draft_tokens=5)
        codes = {f.code for f in analyze([run]).findings}
        assert {"ENGINE_FORMAT_CONFLICT", "ZERO_ACCEPTANCE"} <= codes, engine
        assert run.engine == engine  # the given release wins


def test_bundled_incident_logs():
    """before.log and after-rename.log: the incident's figures under sglang 0.5.10 (TP8, cuda
    graph off, D=5); after-both-fixes.log is healthy; the baseline gives NO_SPEEDUP."""
    runs = parse_files(
        [LOGS / "before.log", LOGS / "after-rename.log", LOGS / "after-both-fixes.log"],
        engine="sglang==0.5.10",
        num_draft_tokens=5,
    )
    baseline = parse_files([LOGS / "baseline-no-spec.log"])[0]
    report = analyze(runs, expected_step0=0.745, baseline=baseline)
    by_run: dict[str, set[str]] = {}
    for f in report.findings:
        by_run.setdefault(Path(f.data["run"]).name, set()).add(f.code)
    assert {"ZERO_ACCEPTANCE", "LOW_FIRST_POSITION", "NO_SPEEDUP"} <= by_run["before.log"]
    assert {"ZERO_ACCEPTANCE", "NO_SPEEDUP"} <= by_run["after-rename.log"]
    assert not by_run.get("after-both-fixes.log", set()) & {"ZERO_ACCEPTANCE", "NO_SPEEDUP"}
    d = report.to_dict()
    assert d["runs"][0]["accept_len"] == {"mean": 1.0, "p50": 1.0, "min": 1.0, "max": 1.0}
    assert d["runs"][0]["unparsed_lines"] == 0 and runs[0].other_lines > 0
    assert 20 < d["runs"][0]["throughput"]["mean"] < 30
    assert d["runs"][2]["accept_len"]["mean"] > 2.0
    unchanged = compare(runs[0], runs[1]).findings[0]
    assert unchanged.code == "FIX_NO_EFFECT" and unchanged.title.startswith("after-rename.log")
    fixed = compare(runs[0], runs[2])
    assert fixed.delta("accept_len") > 1.0
    assert [f.code for f in fixed.findings] == ["FIX_EFFECT"]
    assert fixed.findings[0].title.startswith("after-both-fixes.log: accept len 1.00 → 2.")
    assert "against before.log" in fixed.findings[0].title


def test_speedup_model_matches_leviathan_closed_form():
    """Per-position p_i = α^(i+1) gives Leviathan et al.'s (1 − α^(k+1)) / ((1 − α)(k·c + 1))."""
    alpha, k, c = 0.7, 4, 0.05
    sp = expected_speedup([alpha ** (i + 1) for i in range(k)], draft_cost=c)
    assert sp.speedup == pytest.approx((1 - alpha ** (k + 1)) / ((1 - alpha) * (k * c + 1)))
    cond = expected_speedup([alpha] * k, draft_cost=c, conditional=True)
    assert cond.tokens_per_step == pytest.approx(sp.tokens_per_step)
    assert expected_speedup([0.0] * k, draft_cost=c).speedup < 1


def test_acceptance_decay(tmp_path):
    """Accept len falling from ~3 to ~1.5 over a 0.5.10-format log is ACCEPTANCE_DECAY."""
    lines = [
        INCIDENT.replace(
            "accept len: 1.00, accept rate: 0.20",
            f"accept len: {al:.2f}, accept rate: {al / 5:.2f}",
        )
        for al in [3.0] * 10 + [2.2] * 10 + [1.5] * 10
    ]
    p = tmp_path / "decay.log"
    p.write_text("".join(lines))
    codes = {f.code for f in analyze(parse_files([p])).findings}
    assert "ACCEPTANCE_DECAY" in codes and "ZERO_ACCEPTANCE" not in codes


def test_expected_accept_len_and_chain_cap(tmp_path):
    """A chain of k drafts caps accept len at k + 1 (0 ≤ accepted drafts ≤ num_steps, 0.4.6.post1 speculative/eagle_utils.py:449): 3.10 with
    num_steps 1 is impossible; 1.00 against an offline 3.2 is below expectation."""
    p = tmp_path / "x.log"
    p.write_text(
        INCIDENT.replace(
            "accept len: 1.00, accept rate: 0.20", "accept len: 3.10, accept rate: 0.62"
        )
    )
    (run,) = parse_files([p], num_steps=1, topk=1)
    assert "ACCEPT_LEN_ABOVE_CHAIN_CAP" in {f.code for f in analyze([run]).findings}
    q = tmp_path / "y.log"
    q.write_text(INCIDENT)
    codes = {f.code for f in analyze(parse_files([q]), expected_accept_len=3.2).findings}
    assert "BELOW_EXPECTED_ACCEPT_LEN" in codes


def test_incident_logs_are_reproducible():
    """data/make_incident_logs.py renders the committed files byte for byte."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_incident_logs", LOGS.parent.parent / "make_incident_logs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = module.render_all()
    assert sorted(rendered) == sorted(p.name for p in LOGS.glob("*.log"))
    for name, text in rendered.items():
        assert (LOGS / name).read_text() == text, name


def test_given_release_infers_d_from_the_rates(tmp_path):
    """With --engine sglang==0.5.10 and no D, accept_len / D (0.5.6 scheduler_metrics_mixin.py
    :276-294) and 1.00 → 0.20 give D = 5, hence 4 draft steps at topk 1 and a chain cap of 5."""
    p = tmp_path / "incident.log"
    p.write_text(INCIDENT)
    (run,) = parse_files([p], engine="sglang==0.5.10")
    assert run.num_draft_tokens == 5 and not run.conflicts
    assert analyze([run]).to_dict()["runs"][0]["bands"]["chain_cap"] == 5
