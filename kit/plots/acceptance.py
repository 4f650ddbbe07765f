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
from kit.acceptance.model import Run

# plotly's default sequence minus red and green, which the reference lines use
COLOURS = ("#636efa", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880", "#ff97ff", "#fecb52")


def _colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


def _elapsed(run: Run, attr: str) -> tuple[list[float], list[float]]:
    pts = [(w.t, getattr(w, attr)) for w in run.windows if getattr(w, attr) is not None]
    if not pts:
        return [], []
    if all(t is not None for t, _ in pts):
        t0 = pts[0][0]
        return [t - t0 for t, _ in pts], [v for _, v in pts]
    return list(range(len(pts))), [v for _, v in pts]


def _name(run: Run) -> str:
    return f"{Path(run.source).name} ({run.engine})" if run.engine else Path(run.source).name


def accept_len_figure(
    runs: Sequence[Run], floor: float = 1.0, expected: float | None = None
) -> go.Figure:
    """Accept len (top) and logged accept rate (bottom) over time, runs overlaid.

    The zero-acceptance floor is drawn, and the offline-expected level when given.
    """
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, subplot_titles=("accept len", "accept rate (as logged)")
    )
    for i, run in enumerate(runs):
        line = {"color": _colour(i)}
        x, y = _elapsed(run, "accept_len")
        fig.add_trace(
            go.Scatter(
                x=x, y=y, mode="lines+markers", name=_name(run), line=line, legendgroup=str(i)
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
    fig.update_layout(title="Acceptance over time", height=600)
    return fig


def per_position_figure(runs_or_results: Sequence[Any]) -> go.Figure:
    """Acceptance per draft position, one bar group per entry.

    Entries are `Run`s, `summarize` dicts, or any object with `per_position` (and a `name` or
    `source`), e.g. an offline acceptance result.
    """
    fig = go.Figure()
    for i, r in enumerate(runs_or_results):
        if isinstance(r, Run):
            name, pp = _name(r), r.per_position
        elif isinstance(r, dict):
            name, pp = str(r.get("name") or r.get("source") or f"run {i}"), r.get("per_position")
        else:
            name = str(getattr(r, "name", None) or getattr(r, "source", None) or f"run {i}")
            pp = getattr(r, "per_position", None)
        pp = list(pp or [])
        fig.add_trace(go.Bar(x=[f"pos {j}" for j in range(len(pp))], y=pp, name=name))
    fig.update_layout(
        title="Per-position acceptance",
        yaxis_title="P(accepted)",
        yaxis_range=[0, 1],
        barmode="group",
    )
    return fig


def throughput_figure(runs: Sequence[Run]) -> go.Figure:
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


def write_html(path: str | Path, runs: Sequence[Run], expected: float | None = None) -> None:
    """All three figures in one self-contained HTML file."""
    figs = [
        accept_len_figure(runs, expected=expected),
        per_position_figure(runs),
        throughput_figure(runs),
    ]
    parts = [
        f.to_html(full_html=False, include_plotlyjs="cdn" if i else True)
        for i, f in enumerate(figs)
    ]
    Path(path).write_text("<html><body>" + "".join(parts) + "</body></html>")
