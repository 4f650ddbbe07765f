# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Postmortem of a run
#
# `python -m kit run --out runs/NAME` executes notebooks 1–6 headless and writes their executed copies,
# `findings.json` and `postmortem.html` into `runs/NAME`. This notebook reads such a run back, from
# the records inside the executed notebooks, and shows the verdict: the root causes first, each with
# its evidence and its fix, then what ran and what did not.

# %% tags=["parameters"]
run_dir = "runs/demo"  # a folder written by `python -m kit run`
interactive = False  # True: widgets to explore; headless runs keep False

# %%
import plotly.graph_objects as go
from IPython.display import Markdown, display

from kit.report import postmortem
from kit.report.notebook import setup, show
from kit.report.plots.tables import styled
from kit.report.record import record
from kit.report.runs import load_run

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line

# %%
run = load_run(run_dir)
findings = run.findings
verdict = [f for f in findings if f.root_cause]
record("verdict", verdict)
record("steps", {s.name: s.status for s in run.steps})
display(styled(postmortem.verdict_html(run, symptom=False)))
symptom = postmortem.symptom_figure(run)
if symptom:
    display(Markdown("### The symptom"))
    show(go.Figure(symptom))

# %% [markdown]
# ## What ran

# %%
display(styled(postmortem.status_html(run)))

# %% [markdown]
# ## The key figures of each step

# %%
for step in run.steps:
    figures = {name[4:]: figure for name, figure in step.records.items() if name.startswith("fig:")}
    if figures:
        display(Markdown(f"### {step.title}"))
    for figure in figures.values():
        show(go.Figure(figure))

# %% [markdown]
# ## Explore (interactive only): pick a step

# %%
if interactive:
    import ipywidgets as widgets

    @widgets.interact(step=[s.name for s in run.steps])
    def show_step(step):
        display(styled(postmortem.step_html(run.step(step), figures=False)))
