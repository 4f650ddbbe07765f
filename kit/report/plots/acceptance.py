"""Plotly figures for acceptance runs: accept len / rate over time, per-position bars, throughput.

Time is seconds since each run's first window, so runs from different days overlay. A run keeps
its colour in every panel and every figure (its position in `runs` picks it), so the accept rate
below and the throughput beside read against the accept len line of the same colour.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kit.acceptance.analysis import bands
from kit.acceptance.model import LogRun

# plotly's default sequence minus red and green, which the reference lines use
COLOURS = ("#636efa", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880", "#ff97ff", "#fecb52")


def _colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


def _elapsed(run: LogRun, attr: str) -> tuple[list[float], list[float]]:
    pts = [(w.t, getattr(w, attr)) for w in run.windows if getattr(w, attr) is not None]
    if not pts:
        return [], []
    if all(t is not None for t, _ in pts):
        t0 = pts[0][0]
        return [t - t0 for t, _ in pts], [v for _, v in pts]
    return list(range(len(pts))), [v for _, v in pts]


def _name(run: LogRun) -> str:
    return f"{Path(run.source).name} ({run.engine})" if run.engine else Path(run.source).name


def accept_len_figure(
    runs: Sequence[LogRun],
    floor: float = 1.0,
    expected: float | None = None,
    expected_ci: Sequence[float] | None = None,
    shown: int | None = None,
) -> go.Figure:
    """Accept len (top) and logged accept rate (bottom) over time, runs overlaid.

    The zero-acceptance floor is drawn, and the offline-expected level when given, with its
    interval (`expected_ci`, `[lo, hi]`) as a band: a served figure inside the band is as
    expected within the offline measurement's noise. `shown`: the index of the one run drawn;
    the others stay in the legend, a click away, each in the colour it has in every figure.
    """
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, subplot_titles=("accept len", "accept rate (as logged)")
    )
    for i, run in enumerate(runs):
        line = {"color": _colour(i)}
        visible = True if shown is None or i == shown else "legendonly"
        x, y = _elapsed(run, "accept_len")
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=_name(run),
                line=line,
                legendgroup=str(i),
                visible=visible,
            ),
            row=1,
            col=1,
        )
        x, y = _elapsed(run, "accept_rate")
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=f"{_name(run)} rate",
                line=line,
                legendgroup=str(i),
                showlegend=False,
                visible=visible,
            ),
            row=2,
            col=1,
        )
    fig.add_hline(
        y=floor,
        line_dash="dash",
        line_color="red",
        annotation_text="zero acceptance (1.00)",
        annotation_position="bottom right",
        row=1,
        col=1,
    )
    if expected is not None:
        fig.add_hline(
            y=expected,
            line_dash="dot",
            line_color="green",
            annotation_text=f"expected offline ({expected:.2f})",
            annotation_position="top left",  # clear of the chain cap's label on the right
            row=1,
            col=1,
        )
    if expected_ci is not None:
        lo, hi = expected_ci
        fig.add_hrect(y0=lo, y1=hi, fillcolor="green", opacity=0.12, line_width=0, row=1, col=1)
    caps = {bands(r)["chain_cap"] for r in runs} - {None}
    for cap in caps:
        fig.add_hline(
            y=cap,
            line_dash="dot",
            line_color="gray",
            annotation_text=f"chain cap {cap}",
            row=1,
            col=1,
        )
    fig.update_xaxes(title_text="seconds since first window", row=2, col=1)
    # a rate is never negative: without this, a flat rate (zero acceptance logs 1/D throughout)
    # gets plotly's symmetric padding and an axis down to -0.5
    fig.update_yaxes(rangemode="nonnegative", row=2, col=1)
    fig.update_layout(title="Acceptance over time", height=600)
    return fig


def _per_position(i: int, r: Any) -> tuple[str, list[float], list[list[float]] | None]:
    """Name, per-position rates and their intervals (`[lo, hi]` each, when known) of an entry."""
    if isinstance(r, LogRun):
        return _name(r), list(r.per_position or []), None
    if isinstance(r, dict):
        name = str(r.get("name") or r.get("label") or r.get("source") or f"run {i}")
        return name, list(r.get("per_position") or []), r.get("per_position_ci")
    name = str(
        getattr(r, "name", None)
        or getattr(r, "label", None)
        or getattr(r, "source", None)
        or f"run {i}"
    )
    r = getattr(r, "result", r)  # an offline row: its result, when it has one
    ci = getattr(r, "per_position_ci", None)
    return name, list(getattr(r, "per_position", None) or []), _as_lists(ci)


def _as_lists(ci: Sequence[Any] | None) -> list[list[float]] | None:
    if ci is None:
        return None
    return [[c.lo, c.hi] if hasattr(c, "lo") else list(c) for c in ci]


def _error_bars(values: Sequence[float], ci: Sequence[Sequence[float]] | None) -> dict | None:
    """Asymmetric plotly error bars from `[lo, hi]` intervals around `values`."""
    if not ci:
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": [hi - v for v, (_, hi) in zip(values, ci, strict=True)],
        "arrayminus": [v - lo for v, (lo, _) in zip(values, ci, strict=True)],
    }


def per_position_figure(runs_or_results: Sequence[Any]) -> go.Figure:
    """Acceptance per draft position, one bar group per entry, with error bars where known.

    Entries are `LogRun`s, `summarize` dicts, or any object with `per_position` (and a `name`,
    `label` or `source`), e.g. an offline result or row: its `per_position_ci` (or a dict's)
    becomes the error bars.
    """
    fig = go.Figure()
    for i, r in enumerate(runs_or_results):
        name, pp, ci = _per_position(i, r)
        fig.add_trace(
            go.Bar(
                x=[f"pos {j}" for j in range(len(pp))],
                y=pp,
                name=name,
                error_y=_error_bars(pp, ci),
            )
        )
    fig.update_layout(
        title="Per-position acceptance",
        yaxis_title="P(accepted)",
        yaxis_range=[0, 1],
        barmode="group",
    )
    return fig


def accept_len_by_wiring_figure(rows: Sequence[Any]) -> go.Figure:
    """Offline accept len per wiring (`kit.offline_acceptance.OfflineRow`s), with its interval as error
    bars; a wiring the release cannot run is named on the axis with no bar."""
    labels, values, ci, colours = [], [], [], []
    healthy = next((r.result.accept_len for r in rows if r.result is not None), None)
    for r in rows:
        labels.append(r.label if r.result is not None else f"{r.label} (does not run)")
        if r.result is None:
            values.append(None)
            ci.append([0.0, 0.0])
            colours.append("#9e9e9e")
            continue
        al = r.result.accept_len
        values.append(al)
        ci.append([r.result.accept_len_ci.lo, r.result.accept_len_ci.hi])
        good = healthy is not None and al >= 0.9 * healthy
        colours.append("#c62828" if al < 1.1 else "#2e7d32" if good else "#ffa000")
    err = _error_bars([v or 0.0 for v in values], ci)
    fig = go.Figure(
        go.Bar(
            y=labels,
            x=values,
            marker_color=colours,
            orientation="h",
            error_x=err,
        )
    )
    fig.add_vline(x=1.0, line_color="#c62828", line_dash="dash", annotation_text="zero acceptance")
    fig.update_layout(
        title="Offline accept length by wiring (95% interval)",
        xaxis_title="accept len",
        yaxis_autorange="reversed",
        height=100 + 45 * len(rows),
    )
    return fig


def throughput_figure(runs: Sequence[LogRun]) -> go.Figure:
    """Generated tokens per second over time, runs overlaid."""
    fig = go.Figure()
    for i, run in enumerate(runs):
        x, y = _elapsed(run, "throughput")
        fig.add_trace(
            go.Scatter(x=x, y=y, mode="lines+markers", name=_name(run), line={"color": _colour(i)})
        )
    fig.update_layout(
        title="Gen throughput", xaxis_title="seconds since first window", yaxis_title="token/s"
    )
    return fig


def write_html(
    path: str | Path,
    runs: Sequence[LogRun],
    expected: float | None = None,
    expected_ci: Sequence[float] | None = None,
) -> None:
    """All three figures in one self-contained HTML file."""
    figs = [
        accept_len_figure(runs, expected=expected, expected_ci=expected_ci),
        per_position_figure(runs),
        throughput_figure(runs),
    ]
    parts = [
        f.to_html(full_html=False, include_plotlyjs="cdn" if i else True)
        for i, f in enumerate(figs)
    ]
    Path(path).write_text("<html><body>" + "".join(parts) + "</body></html>")
