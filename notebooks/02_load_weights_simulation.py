# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
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
# - whether the release reads **config.json as saved**: if it refuses it (SGLang has no class for
#   a speculators config), the server does not start at all, and the key story below is what
#   happens once config.json is rewritten in that engine's own form (`python -m kit fix`);
# - keys whose fate is `dropped_silently`: nothing in the server log says so;
# - parameters `left_at_init`: the draft runs with those weights untrained;
# - the matrix at the end: which engines and releases load this checkpoint as trained.

# %% tags=["parameters"]
draft = "data/incident/kimi-k2.5/draft"  # draft checkpoint folder (the incident team's)
engine = "sglang==0.5.10"
interactive = False  # True: widgets to explore; headless runs keep False

# %%
from IPython.display import display

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.engines import ENGINES
from kit.load.replay import release_matrix, simulate_load
from kit.report.notebook import setup, show
from kit.report.plots.loading import key_fates_figure, release_matrix_figure, release_matrix_rows
from kit.report.plots.tables import findings_table, table
from kit.report.record import record

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line

# %%
ck = open_checkpoint(draft)
cfg = load_draft_config(draft)
report = simulate_load(ck, cfg, engine)
served = report.as_served  # the keys as the release loads them under the config it reads
findings = report.findings
summary = {
    "engine": engine,
    "config.json as saved": f"refused: {report.refusal.message}" if report.refusal else "read",
    "keys": len(report.keys),
    "keys dropped silently": len(served.with_outcome("dropped_silently")),
    "parameters left at init": sum(
        p.state == "left_at_init" and not p.unused for p in served.params
    ),
    "loads cleanly": report.loads_cleanly,
}
record("summary", summary)
summary

# %% [markdown]
# ## Every key's fate
#
# Green keys reach a parameter; red keys are dropped without a word; purple keys never load because
# the server does not start. When the release refuses config.json as saved, the second bar is the
# same keys once config.json is rewritten. Below the chart, every key with what happens to it and
# the parameter it lands in, then the parameters that nothing loads: the draft's untrained part.

# %%
fates = [
    {
        "key": k.key,
        "as saved": k.outcome,
        **(
            {"if config.json is rewritten": k.if_config_rewritten.outcome}
            if report.rewritten
            else {}
        ),
        "param": (k.if_config_rewritten or k).param,
        "message": (k.if_config_rewritten or k).message,
    }
    for k in report.keys
]
at_init = [
    {"param": p.name, "shape": p.shape, "init": p.init, "used": "no" if p.unused else "yes"}
    for p in served.params
    if p.state == "left_at_init"
]
fig = key_fates_figure(report)
show(fig)
record("fig:key fates", fig)
record("table:key fates", fates)
record("table:parameters left at init", at_init)
if report.rewritten:
    display(
        table(
            [{"config.json change": c} for c in report.config_changes],
            "If config.json is rewritten",
        )
    )
display(
    table(fates, "Every checkpoint key"), table(at_init, "Parameters nothing loads (left at init)")
)

# %% [markdown]
# ## Findings
#
# Ranked with root causes first: a `critical` root cause is what to fix; the fix column says how.
# Findings that begin "if config.json is rewritten" hold once the refusal above is fixed.

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## Which engines and releases load this checkpoint?
#
# The same replay for every release of every engine the kit models, consecutive releases with the
# same verdict grouped. A dot marks releases that load every tensor as saved, a triangle releases
# that refuse config.json as saved (their bars count what happens once it is rewritten), a ✕ those
# whose server does not start even then. Red bars mean a rename (`python -m kit fix --for`).

# %%
rows = release_matrix(ck, cfg, list(ENGINES))
fig = release_matrix_figure(rows)
show(fig)
record("fig:across releases", fig)
record("release matrix", [r.to_dict() for r in rows])
record("table:across releases", release_matrix_rows(rows))
display(table(release_matrix_rows(rows), "Every engine release"))

# %% [markdown]
# ## Explore (interactive only): pick another release

# %%
if interactive:
    import ipywidgets as widgets

    from kit.engines import all_releases

    options = [str(r) for name in ENGINES for r in all_releases(name)]

    @widgets.interact(release=widgets.Dropdown(options=options, value=engine))
    def show_release(release):
        display(findings_table(simulate_load(ck, cfg, release).findings, title=release))
