# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3. Hidden-state tracing: what reaches the draft
#
# EAGLE-3 feeds the draft three hidden states of the target (a low, a middle and a high layer),
# concatenated, and the draft's `fc` projects them back to one hidden width. Which layers are
# captured, and whether they are captured at all, depends on the engine release and on the target's
# model class. SGLang applies `fc` only when the incoming width differs from the embedding width: hand
# it a single hidden state and `fc` is silently **bypassed**.
#
# This notebook traces the draft's forward pass on the meta device (shapes only, no memory) at full
# scale, step by step along named hook points. Look at the width entering the draft and whether the
# `fc` box is red. `aux_capture = None` asks what the release does by itself for the target class
# and the config as served; `False` asserts capture off (what you saw in the engine) to trace it.

# %% tags=["parameters"]
target_config = "data/incident/kimi-k2.5/target"  # target config.json or its folder
draft = "data/incident/kimi-k2.5/draft"  # draft config.json or checkpoint folder
engine = "sglang==0.5.10"
target_class = None  # model class serving the target (default: its architecture)
aux_capture = None  # None: what the release does for that class; False / True: as you observed
interactive = False  # True: widgets to explore; headless runs keep False

# %%
import torch
from IPython.display import display

from kit.checkpoint.config import load_draft_config, load_target_config
from kit.report.notebook import setup, show
from kit.report.plots.datapath import datapath_figure
from kit.report.plots.tables import findings_table, table
from kit.report.record import record
from kit.tracing.shapes import trace_draft

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line
torch.set_num_threads(1)  # parallel kernels share the cores

# %%
target_cfg = load_target_config(target_config)
draft_cfg = load_draft_config(draft)
report = trace_draft(
    target_cfg, draft_cfg, engine, target_class=target_class, aux_capture=aux_capture
)
trace = report.to_dict()
findings = report.findings
keys = ("target_class", "captured_layers", "trained_layers", "hidden_width", "fc_applied", "feeds")
summary = {k: trace[k] for k in keys}
summary.update(target_hidden=report.capture.target_hidden, draft_hidden=report.capture.draft_hidden)
record("summary", summary)
summary

# %% [markdown]
# ## The data path as deployed
#
# One box per hook point with the tensor shape that crosses it. A red box is a step that is bypassed
# or fails.

# %%
fig = datapath_figure(report)
show(fig)
record("fig:data path as deployed", fig)
hooks = trace.get("hooks", [])
record("table:hook shapes", hooks)
display(table(hooks, "Shape at each hook point"))

# %% [markdown]
# ## The same draft with aux capture on
#
# What the draft was trained on: three captured hidden states, concatenated, through `fc`.

# %%
healthy = trace_draft(target_cfg, draft_cfg, engine, target_class=target_class, aux_capture=True)
fig = datapath_figure(healthy)
show(fig)
record("fig:data path with aux capture on", fig)

# %% [markdown]
# ## Findings of the data path as deployed

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## Explore (interactive only): pick another release

# %%
if interactive:
    import ipywidgets as widgets

    from kit.engines import all_releases, parse_engine

    releases = [str(r) for r in all_releases(parse_engine(engine).name)]
    captures = {"off": False, "on": True, "what the release does": None}  # a None value shows blank
    current = next(label for label, value in captures.items() if value is aux_capture)

    @widgets.interact(
        release=widgets.Dropdown(options=releases, value=engine),
        capture=widgets.Dropdown(options=list(captures), value=current, description="aux capture"),
    )
    def show_release(release, capture):
        r = trace_draft(
            target_cfg, draft_cfg, release, target_class=target_class, aux_capture=captures[capture]
        )
        show(datapath_figure(r))
        display(findings_table(r.findings, title=release))
