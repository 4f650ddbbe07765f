# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1. Key inspection: what is in the draft checkpoint
#
# An engine decides from a tensor's **name** whether it loads it, so the first question is what the
# checkpoint calls its tensors, and what the config around them says. This notebook reads only the
# safetensors headers (no tensor bytes), so it takes milliseconds even for a multi-GB draft.
#
# Look at:
# - **the layout**: `layers.0.*` (speculators, ModelOpt since March 2026) or `midlayer.*` (EAGLE,
#   SpecForge). Engines were written against one of them; the next notebook shows what that costs;
# - **the vocabulary mapping**: a draft with a smaller vocabulary than the target needs `d2t`;
# - **shapes against the config**: `fc` must take `3 × target hidden` inputs, the attention's q/k/v
#   take `2 × hidden`.

# %% tags=["parameters"]
draft = "data/incident/kimi-k2.5/draft"  # draft checkpoint folder (the incident team's)
interactive = False  # True: widgets to explore; headless runs keep False

# %%
from IPython.display import display

from kit.checkpoint.inspection import inspect_checkpoint, module_of
from kit.report.notebook import setup, show
from kit.report.plots.tables import findings_table, table
from kit.report.record import record

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line

# %%
report = inspect_checkpoint(draft)
info = report.to_dict()
findings = report.findings
summary = {
    "checkpoint": info["path"],
    "format": info["format"]["name"],
    "tensors": len(info["tensors"]),
    "bytes": sum(t["nbytes"] for t in info["tensors"]),
}
record("summary", summary)
summary

# %% [markdown]
# ## Which trainer wrote it, and what its config says
#
# The format guess comes with the evidence that decided it. The config fields below are the ones the
# engines read to build the draft: widths, the aux layer ids (and in which convention they were
# written), the vocabulary sizes.

# %%
evidence = [{"format evidence": e} for e in info["format"]["evidence"]]
fields = (
    "source",
    "hidden_size",
    "target_hidden_size",
    "num_hidden_layers",
    "aux_layer_ids",
    "aux_layer_convention",
    "vocab_size",
    "draft_vocab_size",
)
config = [{"field": k, "value": info["config"].get(k)} for k in fields]
record("table:format evidence", evidence)
record("table:config", config)
display(table(evidence), table(config))

# %% [markdown]
# ## The keys, grouped by module
#
# Each box is a module, grouped as `python -m kit inspect` groups them; its area is the tensor's
# size. A draft's decoder layer is most of its bytes, so whatever an engine does with the
# `layers.0` (or `midlayer`) box decides most of its behaviour.

# %%
import plotly.graph_objects as go

tensors = info["tensors"]
parent = {t["name"]: module_of(t["name"]) for t in tensors}
modules = sorted({m for n, m in parent.items() if m != n})  # `d2t` is its own module
fig = go.Figure(
    go.Treemap(
        ids=modules + [t["name"] for t in tensors],
        labels=modules + [t["name"] for t in tensors],
        parents=[""] * len(modules)
        + [parent[t["name"]] if parent[t["name"]] != t["name"] else "" for t in tensors],
        values=[0] * len(modules) + [t["nbytes"] for t in tensors],
        customdata=[""] * len(modules) + [f"{t['dtype']} {t['shape']}" for t in tensors],
        hovertemplate="%{label}<br>%{customdata}<br>%{value} bytes<extra></extra>",
    )
)
fig.update_layout(
    title="Tensors by module (area = bytes)", height=450, margin=dict(t=40, l=0, r=0, b=0)
)
show(fig)
record("fig:tensors by module", fig)
keys = [
    {"name": t["name"], "dtype": t["dtype"], "shape": t["shape"], "bytes": t["nbytes"]}
    for t in tensors
]
record("table:keys", keys)
display(table(keys))

# %% [markdown]
# ## Findings
#
# Ranked with root causes first. `info` findings are facts worth knowing (e.g. no `embed_tokens`:
# engines share the target's); `error` and `critical` ones break speculation.

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## Explore (interactive only): filter the keys

# %%
if interactive:
    import ipywidgets as widgets

    @widgets.interact(pattern="layers.0")
    def show_keys(pattern):
        display(table([k for k in keys if pattern in k["name"]]))
