"""The draft's data path as a figure: one box per hook with its shape, the broken step in red.

Read left to right: what the target hands over, fc (or its bypass), the decoder layer, the
head. `embeds` joins the path at `attn_in` (the 2H-wide concatenation) and `hidden_out`, carried
to the next draft step, leaves it after the layer. A path longer than `PER_ROW` boxes turns at the
right edge and comes back on a second row (right to left), so the figure fits a notebook's width
instead of being cut off at it.
"""

from __future__ import annotations

import itertools

import plotly.graph_objects as go

from kit.tracing.shapes import TraceReport

OK, FC, BAD = "#dbe9f6", "#c7e9c0", "#f4a6a6"
BOX_W, BOX_H = 0.84, 0.7
SIDE_LANE = {"embeds": 1.0, "hidden_out": -1.0}  # off the main path: above / below it
PER_ROW = 7  # main-path boxes on one row
ROW_GAP = 2.0  # between rows: room for a side-lane box below one row or above the next
PX_PER_UNIT = 95  # figure height per unit of y


def _fmt(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _short(dtype: str) -> str:
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype, dtype)


Box = tuple[str, str, str, float]  # (name, text, colour, lane)
ANCHOR = {"embeds": "attn_in", "hidden_out": "norm_out"}  # the main-path box a side box joins


def datapath_figure(trace: TraceReport) -> go.Figure:
    """Boxes along the data path; a bypassed fc or the failing step marked in red, labelled."""
    boxes = _boxes(trace)
    main = [b for b in boxes if b[3] == 0.0]
    rows = -(-len(main) // PER_ROW)
    per_row = -(-len(main) // rows)  # rows as even as they go
    pos = _positions(boxes, main, per_row)
    fig = go.Figure()
    for name, text, colour, _lane in boxes:
        x, y = pos[name]
        fig.add_shape(
            type="rect",
            x0=x - BOX_W / 2,
            x1=x + BOX_W / 2,
            y0=y - BOX_H / 2,
            y1=y + BOX_H / 2,
            fillcolor=colour,
            line={"color": "#b00000" if colour == BAD else "#4a6a8a", "width": 2},
            layer="below",
        )
        fig.add_annotation(x=x, y=y, text=text, showarrow=False, font={"size": 10})
    _arrows(fig, main, pos)
    ys = [y for _x, y in pos.values()]
    y_range = [min(ys) - BOX_H / 2 - 0.15, max(ys) + BOX_H / 2 + 0.15]
    fig.update_layout(
        title=_title(trace),
        xaxis={"visible": False, "range": [-0.6, per_row - 0.4], "fixedrange": True},
        yaxis={"visible": False, "range": y_range, "fixedrange": True},
        height=int(PX_PER_UNIT * (y_range[1] - y_range[0])) + 70,
        plot_bgcolor="white",
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def _boxes(trace: TraceReport) -> list[Box]:
    """The target, each hook that fired, and where the path is bypassed or breaks."""
    c = trace.capture
    layers = ", ".join(str(i) for i in c.captured_layers) or "none"
    cls = c.target_class.replace("For", "<br>For", 1)
    if c.startup_error:
        what = "no set_eagle3_layers_to_capture" if "eagle3" in c.startup_error else "refused"
    elif c.aux_capture:
        what = f"states after [{layers}] layers"
    else:
        what = "final hidden, post-norm"
    source = f"<b>target</b><br><span style='font-size:8px'>{cls}<br>{what}</span>"
    boxes: list[Box] = [("target", source, BAD if c.startup_error else OK, 0.0)]
    if c.startup_error:
        error = c.startup_error.split(":")[0]
        boxes.append(("startup", f"<b>start-up fails</b><br>{error}", BAD, 0.0))
    for hook in trace.hooks:
        text = f"<b>{hook.name}</b><br>{_fmt(hook.shape)} {_short(hook.dtype)}"
        colour = FC if hook.name.startswith("fc_") else OK
        boxes.append((hook.name, text, colour, SIDE_LANE.get(hook.name, 0.0)))
        if hook.name == "aux_hidden_states" and trace.bypassed_step == "fc":
            label = f"<b>fc bypassed</b><br>{c.hidden_width} == H = {c.draft_hidden}"
            boxes.append(("fc", label, BAD, 0.0))
    if trace.failed_step and trace.failed_step != "startup":
        reason = (
            f"{c.hidden_width} wide, {c.fc_in_features} expected"
            if trace.failed_step == "fc"
            else (trace.error or "")[:60]
        )
        boxes.append((trace.failed_step, f"<b>{trace.failed_step} fails</b><br>{reason}", BAD, 0.0))
    return boxes


def _positions(boxes: list[Box], main: list[Box], per_row: int) -> dict[str, tuple[float, float]]:
    """Box centres: the main path snakes row by row; side boxes sit above or below the box
    they join or leave."""
    pos: dict[str, tuple[float, float]] = {}
    for i, (name, *_rest) in enumerate(main):
        row, col = divmod(i, per_row)
        pos[name] = (float(col if row % 2 == 0 else per_row - 1 - col), -ROW_GAP * row)
    for name, _text, _colour, lane in boxes:
        if name in SIDE_LANE:
            x, y = pos.get(ANCHOR[name], pos[main[-1][0]])
            pos[name] = (x, y + lane)
    return pos


def _arrows(fig: go.Figure, main: list[Box], pos: dict[str, tuple[float, float]]) -> None:
    for (a, *_), (b, *_) in itertools.pairwise(main):
        (xa, ya), (xb, yb) = pos[a], pos[b]
        if ya == yb:  # along a row, either way
            step = BOX_W / 2 if xb > xa else -BOX_W / 2
            _arrow(fig, xa + step, ya, xb - step, yb)
        else:  # down to the next row
            _arrow(fig, xa, ya - BOX_H / 2, xb, yb + BOX_H / 2)
    for name, lane in SIDE_LANE.items():
        if name in pos and ANCHOR[name] in pos:
            (x, y), y_main = pos[name], pos[ANCHOR[name]][1]
            if lane > 0:  # joins from above
                _arrow(fig, x, y - BOX_H / 2, x, y_main + BOX_H / 2)
            else:  # leaves downwards
                _arrow(fig, x, y_main - BOX_H / 2, x, y + BOX_H / 2)


def _title(trace: TraceReport) -> str:
    c = trace.capture
    if c.startup_error:
        return f"{c.engine}: the server does not start ({c.startup_error.split(':')[0]})"
    verdict = (
        f"{trace.failed_step} fails"
        if trace.failed_step
        else ("fc runs" if trace.fc_applied else "fc is bypassed")
    )
    return f"{c.engine}: a {c.hidden_width}-wide hidden state reaches the draft, {verdict}"


def _arrow(fig: go.Figure, x0: float, y0: float, x1: float, y1: float) -> None:
    fig.add_annotation(
        x=x1,
        y=y1,
        ax=x0,
        ay=y0,
        xref="x",
        yref="y",
        axref="x",
        ayref="y",
        showarrow=True,
        arrowhead=2,
        arrowwidth=1.5,
        text="",
    )
