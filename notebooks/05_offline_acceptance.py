# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 5. Offline acceptance: what the draft should reach, and what the deployment reaches
#
# The bundled small target and its EAGLE-3 draft, run on CPU: the draft proposes `k` tokens, the
# target verifies them greedily (or, with `temperature` above 0, by speculative sampling, as a
# sampling server does), and every accepted position is counted, with a 95 % interval (bootstrap
# over prompts). Two figures matter:
#
# - **healthy**: every weight loaded, the target states the draft was trained on through `fc`.
#   It is the expectation a server log is judged against (notebook 4 draws it);
# - **as deployed**: the draft as the given release loads it (notebook 2) and fed what that
#   release's target hands it for the target class (notebook 3), aux capture on unless the
#   deployment says it was off. A release that cannot run the wiring at all shows its start-up
#   crash instead of a figure. A release that runs the draft steps after the first one position
#   late (SGLang up to 0.5.11, `DRAFT_POSITIONS_LATE`) is measured as it runs them, and again with
#   the steps where trained: what a release with the fix would reach.
#
# Then a separate **what-if** section: the incident's wirings on the same release, one fault and
# one fix at a time, so each fault's cost can be read off. The defaults are those of `make demo`
# (the deployment's chain: 5 draft tokens per step, the first the target's own, so `k = 4`, on
# the first 40 held-out prompts, about 20 s); a bar shows progress in JupyterLab.

# %% tags=["parameters"]
target = "data/pair/target"  # transformers target folder
draft = "data/pair/draft"  # draft checkpoint folder
engine = "sglang==0.5.10"
aux_capture = None  # None: the release's own rule for the target class; False: as observed off
target_class = None  # the class the engine builds for the target (default: its config's)
k = 5  # drafts per verify step (a topk-1 chain of D draft tokens drafts D - 1)
num_prompts = 40  # the first N held-out prompts (prompts.jsonl beside the target); None: all
prompt_format = "raw"  # "chat": through the target tokenizer's chat template, as a chat server
temperature = 0.0  # 0: greedy verification; above: speculative sampling, as a sampling server
top_p = 1.0
seed = 0  # sampling draws and the intervals' resamples
interactive = False  # True: widgets to explore; headless runs keep False

# %%
from pathlib import Path

import torch
from IPython.display import display
from transformers.utils import logging as hf_logging

from kit.offline_acceptance import as_deployed, fault_matrix, healthy, load_prompts, load_target
from kit.offline_acceptance.prompts import default_prompts_file
from kit.report.notebook import setup, show, watched
from kit.report.plots.acceptance import accept_len_by_wiring_figure, per_position_figure
from kit.report.plots.tables import findings_table, table
from kit.report.record import record

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line
torch.set_num_threads(1)  # parallel kernels share the cores

# %%
hf_logging.disable_progress_bar()  # transformers' loading bar: noise next to the wirings' bars
prompts = load_prompts(default_prompts_file(Path(target)))[:num_prompts] if num_prompts else None
common = dict(
    target=load_target(target), prompts=prompts, k=k, count_as=engine, progress=watched(),
    prompt_format=prompt_format, temperature=temperature, top_p=top_p, seed=seed,
)  # fmt: skip
ref = healthy(target, draft, **common)
deployed = as_deployed(
    target, draft, engine, aux_capture=aux_capture, target_class=target_class, against=ref, **common
)


def describe(row):
    """One table row per wiring: the figure with its interval, or why it has none."""
    if row.result is None:
        return {"wiring": row.label, "accept len": None, "95% interval": None,
                "step-0 acceptance": None, "steps where trained": None,
                "against healthy": row.crash.title if row.crash else ""}  # fmt: skip
    r, trained = row.result, row.result.trained_positions
    return {
        "wiring": row.label,
        "accept len": round(r.accept_len, 3),
        "95% interval": [round(x, 3) for x in r.accept_len_ci.to_list()],
        "step-0 acceptance": round(r.step0_accuracy, 3),
        "steps where trained": None if trained is None else round(trained.accept_len, 3),
        "against healthy": row.vs_healthy.sentence() if row.vs_healthy else "",
    }


wirings = [describe(ref), describe(deployed)]
record("table:wirings", wirings)
record("expected_accept_len", ref.result.accept_len)
record("expected_accept_len_ci", ref.result.accept_len_ci.to_list())
record(
    "summary",
    {
        "k": k,
        "prompts": f"{ref.result.prompts} {prompt_format}",
        "verification": ref.result.settings.verification,
        "expected accept len (healthy)": ref.result.accept_len,
        "accept len as deployed": deployed.result.accept_len if deployed.result else None,
        "aux capture": "given off" if aux_capture is False else "the release's own rule",
    },
)
findings = deployed.findings + ([deployed.crash] if deployed.crash else [])
display(table(wirings, "Healthy and as deployed"))

# %% [markdown]
# ## Acceptance per draft position
#
# The first drafted token lands most often; each later one needs all before it accepted. Error
# bars are the 95 % intervals. A completion that ends within the chain's reach counts as the
# release counts it (SGLang up to 0.5.10 counts nothing past the stop token; later SGLang and vLLM
# also count the drafts verified beyond it). A fault that flattens every position to zero is what
# a server with `accept len 1.00` runs.

# %%
shown = [row for row in (ref, deployed) if row.result is not None]
fig = per_position_figure(shown)
fig.update_layout(title=f"Acceptance per position (k = {k})", height=380)
show(fig)
record("fig:acceptance per position", fig)

# %% [markdown]
# ## Findings of the deployment as given

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## What if: the incident's wirings, one fault and one fix at a time
#
# Not the deployment: the same release with aux capture off and on, then both again after the
# kit's own fix (`python -m kit fix --for`), each against healthy. On a release that drafts late,
# both fixes reach healthy in the "steps where trained" column; the gap left is the release's
# own (`DRAFT_POSITIONS_LATE`, fixed by upgrading). Red bars are near-zero
# acceptance, green within 10 % of healthy, amber between; a wiring the release cannot run has no
# bar and says why in the table.

# %%
rows = fault_matrix(target, draft, engine, target_class=target_class, healthy_row=ref, **common)
what_if = [describe(row) for row in rows]
record("table:what-if", what_if)
fig = accept_len_by_wiring_figure(rows)
show(fig)
record("fig:accept length by wiring", fig)
display(table(what_if, f"What if, on {engine}"))

# %% [markdown]
# ## Explore (interactive only): one wiring against healthy

# %%
if interactive:
    import ipywidgets as widgets

    runnable = [row for row in rows if row.result is not None]

    choice = widgets.Dropdown(
        options=[(r.label, i) for i, r in enumerate(runnable)], value=0, description="wiring",
        layout=widgets.Layout(width="max-content"),  # the labels whole, not cut at the box
    )  # fmt: skip

    @widgets.interact(wiring=choice)
    def show_wiring(wiring):
        show(per_position_figure([runnable[0], runnable[wiring]] if wiring else runnable[:1]))
        display(findings_table(runnable[wiring].findings, title=runnable[wiring].label))
