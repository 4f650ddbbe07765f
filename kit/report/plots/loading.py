"""Plotly figures for load replays: every key's fate in one release, and the release matrix.

Colours say the same thing everywhere: green reaches a parameter, red is dropped without a word,
purple is a server that does not start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from kit.engines.vocab import Outcome
from kit.load.replay import MatrixRow
from kit.load.report import LoadReport
from kit.tracing.positions import positions_late

FATE_COLOURS = {
    Outcome.LOADED: "#2e7d32",
    Outcome.CONSUMED: "#66bb6a",
    Outcome.IGNORED: "#90a4ae",
    Outcome.WARNED: "#ffa000",
    Outcome.DROPPED: "#c62828",
    Outcome.ERROR: "#6a1b9a",
}


def key_fates_figure(report: LoadReport) -> go.Figure:
    """Keys by fate, one bar per reading: as saved, and once config.json is rewritten when the
    release refuses it as saved."""
    rows = [("as saved", [k.outcome for k in report.keys])]
    if report.rewritten is not None:
        rows.append(("if config.json is rewritten", [k.outcome for k in report.rewritten.keys]))
    fig = go.Figure(
        [
            go.Bar(
                name=str(outcome),
                y=[label for label, _ in rows],
                x=[fates.count(outcome) for _, fates in rows],
                orientation="h",
                marker_color=colour,
            )
            for outcome, colour in FATE_COLOURS.items()
            if any(outcome in fates for _, fates in rows)
        ]
    )
    fig.update_layout(
        barmode="stack",
        title=f"Checkpoint keys by fate under {report.engine}",
        height=200 + 60 * len(rows),
        xaxis_title="keys",
        yaxis_autorange="reversed",
        legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"),
    )
    return fig


def release_matrix_figure(rows: Sequence[MatrixRow]) -> go.Figure:
    """Keys dropped and parameters left at init per group of releases, as each serves the draft;
    a ✕ marks releases whose server does not start, a dot those that load every tensor as saved."""
    names = [r.span for r in rows]
    crashed = [r.span for r in rows if r.crashed]
    clean = [r.span for r in rows if r.outcome == "loads fully" and not r.left_at_init]
    refused = [r.span for r in rows if r.outcome == "refuses config.json"]
    fig = go.Figure(
        [
            go.Bar(name="keys dropped silently", x=names, marker_color="#c62828",
                   y=[None if r.crashed else r.dropped for r in rows]),
            go.Bar(name="parameters left at init", x=names, marker_color="#ffa000",
                   y=[None if r.crashed else r.left_at_init for r in rows]),
            go.Scatter(name="server does not start", x=crashed, y=[0.5] * len(crashed),
                       mode="markers", marker=dict(symbol="x", size=11, color="#6a1b9a")),
            go.Scatter(name="refuses config.json as saved (counts: once rewritten)", x=refused,
                       y=[0.25] * len(refused), mode="markers",
                       marker=dict(symbol="triangle-down", size=9, color="#6a1b9a")),
            go.Scatter(name="loads every tensor as saved", x=clean, y=[0.5] * len(clean),
                       mode="markers", marker=dict(size=10, color="#2e7d32")),
        ]
    )  # fmt: skip
    fig.update_layout(
        barmode="group",
        title="Which releases load this checkpoint",
        height=420,
        xaxis_tickangle=-40,
        yaxis_title="count",
    )
    return fig


def release_matrix_rows(rows: Sequence[MatrixRow]) -> list[dict[str, Any]]:
    """The matrix as a reader scans it: one row per group of releases, its verdict as saved and
    once config.json is rewritten, the counts as served (`MatrixRow.to_dict` keeps every field,
    release list included, for machines)."""
    return [
        {
            "releases": r.span,
            "as saved": f"{r.outcome}: {r.detail}" if r.detail else r.outcome,
            "if config.json is rewritten": r.if_config_rewritten or "–",
            "keys dropped silently": r.dropped,
            "parameters left at init": r.left_at_init,
            "server starts": "no" if r.crashed else "yes",
            "draft positions": _positions(r),
        }
        for r in rows
    ]


def _positions(r: MatrixRow) -> str:
    """Where the releases run the chain's draft steps after the first (DRAFT_POSITIONS_LATE)."""
    if r.late_positions is None:
        return "not read"
    return positions_late(r.late_positions) if r.late_positions else "as trained"
