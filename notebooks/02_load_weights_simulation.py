# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 2. Load-weights simulation: what the engine does with each key
#
# Engines load a draft by matching checkpoint keys to their own parameter names, with renames and
# merges (q/k/v into `qkv_proj`, gate/up into `gate_up_proj`). A key that matches nothing may be
# **silently dropped**: the server starts, serves, and the parameter keeps its initial values. This
# notebook replays the loader of one engine release, key by key, from the headers alone.
#
# Look at:
# - keys whose fate is `dropped_silently`: nothing in the server log says so;
# - parameters `left_at_init`: the draft runs with those weights untrained;
# - the release matrix at the end: which releases load this checkpoint as it is.

# %% tags=["parameters"]
draft = "data/organism/draft"  # draft checkpoint folder
engine = "sglang==0.5.10"
interactive = False  # True: widgets to explore; headless runs keep False

# %%
from IPython.display import display

from kit.checkpoint import open_checkpoint
from kit.config import load_draft_config
from kit.engines import all_releases, parse_engine
from kit.loading import simulate_load
from kit.notebook import setup
from kit.plots.tables import findings_table, table
from kit.record import record

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line

# %%
ck = open_checkpoint(draft)
cfg = load_draft_config(draft)
report = simulate_load(ck, cfg, engine)
fates = [
    {"key": k.key, "outcome": k.outcome, "param": k.param, "message": k.message}
    for k in report.keys
]
at_init = [
    {"param": p.name, "shape": p.shape, "init": p.init}
    for p in report.params
    if p.state == "left_at_init"
]
findings = report.findings
summary = {
    "engine": engine,
    "keys": len(fates),
    "keys dropped silently": sum(f["outcome"] == "dropped_silently" for f in fates),
    "parameters left at init": len(at_init),
}
record("summary", summary)
summary

# %% [markdown]
# ## Every key's fate
#
# Green keys reach a parameter; red keys are dropped without a word. Below the chart, every key with
# the parameter it lands in, then the parameters that nothing loaded: they are the draft's untrained
# part in this engine.

# %%
import plotly.graph_objects as go

COLOURS = {
    "loaded": "#2e7d32",
    "consumed": "#66bb6a",
    "ignored": "#90a4ae",
    "warned": "#ffa000",
    "dropped_silently": "#c62828",
    "error": "#6a1b9a",
}
outcomes = [o for o in COLOURS if any(f["outcome"] == o for f in fates)]
fig = go.Figure(
    [
        go.Bar(
            name=o,
            x=[sum(f["outcome"] == o for f in fates)],
            y=[engine],
            orientation="h",
            marker_color=COLOURS[o],
        )
        for o in outcomes
    ]
)
fig.update_layout(
    barmode="stack",
    title=f"Checkpoint keys by fate under {engine}",
    height=280,
    xaxis_title="keys",
    legend=dict(
        orientation="h", traceorder="normal", x=1, xanchor="right", y=1.02, yanchor="bottom"
    ),
)
fig.show()
record("fig:key fates", fig)
record("table:key fates", fates)
record("table:parameters left at init", at_init)
display(
    table(fates, "Every checkpoint key"), table(at_init, "Parameters nothing loaded (left at init)")
)

# %% [markdown]
# ## Findings
#
# Ranked with root causes first: a `critical` root cause is what to fix; the fix column says how.

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## Which releases load this checkpoint?
#
# The same replay for every release of the engine the kit models. The bars count the keys a release
# drops and the parameters it leaves at init; a green dot marks a release that loads every tensor of
# this checkpoint, a purple ✕ one whose server does not even start with it (no bars there: nothing
# is served). For a release with red bars the fix is a rename (`python -m kit fix`).

# %%
releases = all_releases(parse_engine(engine).name)
matrix = []
for release in releases:
    r = simulate_load(ck, cfg, release)
    matrix.append(
        {
            "release": str(release),
            "dropped silently": sum(k.outcome == "dropped_silently" for k in r.keys),
            "left at init": sum(p.state == "left_at_init" for p in r.params),
            "crashed": r.crashed,
        }
    )
names = [m["release"] for m in matrix]
# no bars: a server that does not start serves nothing
crashed = [m["release"] for m in matrix if m["crashed"]]
clean = [
    m["release"]
    for m in matrix
    if not m["crashed"] and not m["dropped silently"] and not m["left at init"]
]
fig = go.Figure(
    [
        go.Bar(
            name="keys dropped silently",
            x=names,
            y=[None if m["crashed"] else m["dropped silently"] for m in matrix],
            marker_color="#c62828",
        ),
        go.Bar(
            name="parameters left at init",
            x=names,
            y=[None if m["crashed"] else m["left at init"] for m in matrix],
            marker_color="#ffa000",
        ),
        go.Scatter(
            name="server does not start",
            x=crashed,
            y=[0.5] * len(crashed),
            mode="markers",
            marker=dict(symbol="x", size=11, color="#6a1b9a"),
        ),
        go.Scatter(
            name="loads every tensor",
            x=clean,
            y=[0.5] * len(clean),
            mode="markers",
            marker=dict(size=10, color="#2e7d32"),
        ),
    ]
)
fig.update_layout(
    barmode="group",
    title=f"Across {parse_engine(engine).name} releases",
    height=380,
    xaxis_tickangle=-60,
    yaxis_title="count",
)
fig.show()
record("fig:across releases", fig)
record("table:across releases", matrix)

# %% [markdown]
# ## Explore (interactive only): pick another release

# %%
if interactive:
    import ipywidgets as widgets

    @widgets.interact(release=widgets.Dropdown(options=[str(r) for r in releases], value=engine))
    def show_release(release):
        display(findings_table(simulate_load(ck, cfg, release).findings, title=release))
