"""`python -m kit acceptance` and the plotly figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kit.acceptance import parse_files
from kit.cli import main
from kit.report.plots.acceptance import accept_len_figure, per_position_figure, throughput_figure

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "data" / "incident" / "logs"


def test_json_report_shape(capsys):
    """The issue's JSON: runs[{source, engine, windows, accept_len{mean,p50,min,max},
    accept_rate, per_position, unparsed_lines}], findings; sglang 0.5.10 incident figures."""
    rc = main(
        ["acceptance", str(LOGS / "before.log"), "--engine", "sglang==0.5.10",
         "--num-draft-tokens", "5", "--json"]
    )  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    (run,) = out["runs"]
    assert run["engine"] == "sglang==0.5.10"
    assert run["windows"] == 60
    assert set(run["accept_len"]) == {"mean", "p50", "min", "max"}
    assert run["accept_rate"]["p50"] == 0.2
    assert run["per_position"] == [] and run["unparsed_lines"] == 0
    assert out["findings"][0]["code"] == "ZERO_ACCEPTANCE"


def test_missing_file_and_unknown_release_exit_2():
    """One-line error, exit 2, no traceback (kit/cli.py KitError handling)."""
    for args in (["nope.log"], [str(LOGS / "before.log"), "--engine", "sglang==0.9.9"]):
        p = subprocess.run(
            [sys.executable, "-m", "kit", "acceptance", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert p.returncode == 2, p.stderr
        assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: ")
        assert "Traceback" not in p.stderr


def test_text_output_with_compare_and_plot(tmp_path, capsys):
    html = tmp_path / "fig.html"
    rc = main(
        ["acceptance", str(LOGS / "before.log"), str(LOGS / "after-rename.log"), "--compare",
         "--baseline", str(LOGS / "baseline-no-spec.log"), "--plot", str(html)]
    )  # fmt: skip
    assert rc == 0
    text = capsys.readouterr().out
    assert "FIX_NO_EFFECT" in text and "NO_SPEEDUP" in text
    assert html.stat().st_size > 10_000


def test_figures_draw_floor_expected_and_runs():
    runs = parse_files([LOGS / "before.log", LOGS / "after-both-fixes.log"], num_draft_tokens=5)
    fig = accept_len_figure(runs, expected=3.2)
    levels = {round(s.y0, 2) for s in fig.layout.shapes}
    assert {1.0, 3.2, 5.0} <= levels  # floor, offline expectation, chain cap (4 steps + 1)
    assert len(fig.data) == 4  # accept len and rate per run
    assert len(fig.data[0].x) == 60 and fig.data[0].x[0] == 0
    assert fig.layout.yaxis2.rangemode == "nonnegative"  # a flat rate is not padded below 0
    one = accept_len_figure(runs, shown=1)  # notebook 4's explore view: one run, same colours
    assert [t.visible for t in one.data] == ["legendonly", "legendonly", True, True]
    assert [t.line.color for t in one.data] == [t.line.color for t in fig.data]
    assert len(per_position_figure(runs).data) == 2
    assert list(throughput_figure(runs).data[1].y)[:1] == [runs[1].windows[0].throughput]


def test_per_position_figure_takes_dicts_and_objects():
    """Offline results (any object with per_position) sit beside a run's measured rates."""
    from types import SimpleNamespace

    offline = SimpleNamespace(name="offline", per_position=[0.745, 0.52])
    fig = per_position_figure([{"source": "served", "per_position": [0.0, 0.0]}, offline])
    assert [t.name for t in fig.data] == ["served", "offline"]
    assert list(fig.data[1].y) == [0.745, 0.52]
