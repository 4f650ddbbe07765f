# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 5. Offline acceptance: what the draft should reach
#
# The bundled small target and its EAGLE-3 draft, run on CPU: the draft proposes `k` tokens, the
# target verifies them greedily, and every accepted position is counted. Run five ways, the faults
# injected from the other analyses rather than by hand (the `wiring` column names each; below, as
# for the default `sglang==0.5.10`):
#
# - **healthy**: every weight loaded, three aux hidden states through `fc`;
# - **as deployed** (`sglang==0.5.10, aux capture off`): tensors the release drops stay at its init
#   (notebook 2) and the single final hidden state reaches the draft, `fc` bypassed (notebook 3);
# - **each fix on its own**: aux capture alone (`sglang==0.5.10, aux capture on`), the key rename
#   alone (`sglang==0.5.10 after kit fix (rename), aux capture off`);
# - **both fixes** (`… after kit fix (rename), aux capture on`): should match healthy.
#
# Look at how far each fault pulls accept length from healthy: the healthy figure is the expectation
# a server log is judged against (notebook 4 draws it as a green dotted line). The defaults are
# those of `make demo`: the deployment's chain (5 draft tokens per step, the first the target's
# own, so `k = 4` drafted) on the first 40 held-out prompts, about 15 s; a bar shows each wiring's
# progress in JupyterLab.

# %% tags=["parameters"]
target = "data/organism/target"  # transformers target folder
draft = "data/organism/draft"  # draft checkpoint folder
engine = "sglang==0.5.10"
k = 4  # drafts per verify step: the incident's 5 draft tokens per step, topk 1
num_prompts = 40  # the first N held-out prompts (prompts.jsonl beside the target); None: all
interactive = False  # True: widgets to explore; headless runs keep False

# %%
from pathlib import Path

import torch
from IPython.display import display
from transformers.utils import logging as hf_logging

from kit.notebook import setup, watched
from kit.organism import NEAR_ZERO_ACCEPT_LEN, fault_matrix, load_prompts
from kit.plots.acceptance import per_position_figure
from kit.plots.tables import findings_table, table
from kit.record import record

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line
torch.set_num_threads(1)  # parallel kernels share the cores

# %%
hf_logging.disable_progress_bar()  # transformers' loading bar: noise next to the wirings' bars
prompts = None
if num_prompts:
    beside = [Path(target) / "prompts.jsonl", Path(target).parent / "prompts.jsonl"]
    prompts = load_prompts(next(p for p in beside if p.is_file()))[:num_prompts]
# a progress bar per wiring while someone watches in JupyterLab, none in a headless run
rows = fault_matrix(target, draft, engine, k=k, prompts=prompts, progress=watched())
wirings = [
    {
        "wiring": row.label,
        "accept len": row.result.accept_len,
        "step-0 acceptance": row.result.step0_accuracy,
        "per position": [round(p, 3) for p in row.result.per_position],
        "prompts": row.result.prompts,
    }
    for row in rows
]
healthy, deployed = rows[0].result, rows[1].result  # healthy first, then the incident
record("table:wirings", wirings)
record("expected_accept_len", healthy.accept_len)
record(
    "summary",
    {
        "k": k,
        "expected accept len (healthy)": healthy.accept_len,
        "accept len as deployed": deployed.accept_len,
    },
)
findings = deployed.findings
display(table(wirings))

# %% [markdown]
# ## Acceptance per draft position
#
# The first drafted token lands most often; each later one needs all before it accepted. A
# completion that ends within the chain's reach counts as the release counts it: SGLang up to
# 0.5.10 counts nothing past the stop token, SGLang from 0.5.11 and vLLM also count the drafts
# verified beyond it (the `counted_as` field of each row). A fault that flattens every position to
# zero is what a server with `accept len 1.00` runs. Below, the accept length of each wiring: red
# at near-zero acceptance, green within 10% of healthy, amber between.

# %%
import plotly.graph_objects as go

fig = per_position_figure([{"name": r.label, "per_position": r.result.per_position} for r in rows])
fig.update_layout(title=f"Acceptance per position (k = {k})", height=380)
fig.show()
record("fig:acceptance per position", fig)
lengths = [row.result.accept_len for row in rows]
colours = [
    "#c62828"
    if a <= NEAR_ZERO_ACCEPT_LEN
    else "#2e7d32"
    if a >= 0.9 * healthy.accept_len
    else "#ffa000"
    for a in lengths
]
fig = go.Figure(
    go.Bar(y=[row.label for row in rows], x=lengths, marker_color=colours, orientation="h")
)
fig.add_vline(x=1.0, line_color="#c62828", line_dash="dash", annotation_text="zero acceptance")
fig.update_layout(
    title="Accept length by wiring",
    xaxis_title="accept len",
    yaxis_autorange="reversed",
    height=100 + 45 * len(rows),
)
fig.show()
record("fig:accept length by wiring", fig)

# %% [markdown]
# ## Findings of the wiring as deployed

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## Explore (interactive only): one wiring against healthy

# %%
if interactive:
    import ipywidgets as widgets

    @widgets.interact(
        wiring=widgets.Dropdown(options=[(r.label, i) for i, r in enumerate(rows)], value=1)
    )
    def show_wiring(wiring):
        shown = [rows[0], rows[wiring]] if wiring else [rows[0]]
        per_position_figure(
            [{"name": r.label, "per_position": r.result.per_position} for r in shown]
        ).show()
        display(findings_table(rows[wiring].result.findings, title=rows[wiring].label))
