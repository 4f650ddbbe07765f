"""The draft's data path as a figure: one box per hook with its shape, the broken step in red.

Read left to right: what the target hands over, fc (or its bypass), the decoder layer, the
head. `embeds` joins the path at `attn_in` (the 2H-wide concatenation) and `hidden_out`, carried
to the next draft step, leaves it after the layer.
"""

from __future__ import annotations

import itertools

import plotly.graph_objects as go

from kit.trace import TraceReport

OK, FC, BAD = "#dbe9f6", "#c7e9c0", "#f4a6a6"
BOX_W, BOX_H = 0.84, 0.7
SIDE_LANE = {"embeds": 1.0, "hidden_out": -1.0}  # off the main path: above / below it


def _fmt(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _short(dtype: str) -> str:
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype, dtype)


def datapath_figure(trace: TraceReport) -> go.Figure:
    """Boxes along the data path; a bypassed fc or the failing step marked in red, labelled."""
    c = trace.capture
    boxes: list[tuple[str, str, str, float]] = []  # (name, text, colour, lane)
    layers = ", ".join(str(i) for i in c.captured_layers) or "none"
    cls = c.target_class.replace("For", "<br>For", 1)
    if c.startup_error:
        what = "no set_eagle3_layers_to_capture" if "eagle3" in c.startup_error else "refused"
    elif c.aux_capture:
        what = f"states after [{layers}] layers"
    else:
        what = "final hidden, post-norm"
    source = f"<b>target</b><br><span style='font-size:8px'>{cls}<br>{what}</span>"
    boxes.append(("target", source, BAD if c.startup_error else OK, 0.0))
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

    fig = go.Figure()
    main = [b for b in boxes if b[3] == 0.0]
    x_of = {name: float(i) for i, (name, *_rest) in enumerate(main)}
    # side-lane boxes sit above / below the main-path box they join or leave
    anchor = {"embeds": "attn_in", "hidden_out": "norm_out"}
    for name, *_ in boxes:
        if name in SIDE_LANE:
            x_of[name] = x_of.get(anchor[name], len(main) - 1.0)
    for name, text, colour, lane in boxes:
        x = x_of[name]
        fig.add_shape(
            type="rect",
            x0=x - BOX_W / 2,
            x1=x + BOX_W / 2,
            y0=lane - BOX_H / 2,
            y1=lane + BOX_H / 2,
            fillcolor=colour,
            line={"color": "#b00000" if colour == BAD else "#4a6a8a", "width": 2},
            layer="below",
        )
        fig.add_annotation(x=x, y=lane, text=text, showarrow=False, font={"size": 10})
    for (a, *_), (b, *_) in itertools.pairwise(main):
        _arrow(fig, x_of[a] + BOX_W / 2, 0.0, x_of[b] - BOX_W / 2, 0.0)
    for name, lane in SIDE_LANE.items():
        if name in x_of and anchor[name] in x_of:
            y_from, y_to = (
                (lane - BOX_H / 2, BOX_H / 2) if lane > 0 else (-BOX_H / 2, lane + BOX_H / 2)
            )
            _arrow(fig, x_of[name], y_from, x_of[name], y_to)
    if c.startup_error:
        title = f"{c.engine}: the server does not start ({c.startup_error.split(':')[0]})"
    else:
        verdict = (
            f"{trace.failed_step} fails"
            if trace.failed_step
            else ("fc runs" if trace.fc_applied else "fc is bypassed")
        )
        title = f"{c.engine}: a {c.hidden_width}-wide hidden state reaches the draft, {verdict}"
    fig.update_layout(
        title=title,
        xaxis={"visible": False, "range": [-0.6, len(main) - 0.4]},
        yaxis={"visible": False, "range": [-1.5, 1.5]},
        height=360,
        width=max(1000, 150 * len(main)),
        plot_bgcolor="white",
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


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
