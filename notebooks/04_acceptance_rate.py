# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4. Acceptance rate: what the server logs say
#
# The server logs an `accept len` (tokens kept per verify step, the target's own included) and, in
# some releases, an `accept rate`, whose formula changed between releases. With 5 draft tokens,
# `accept len: 1.00` means not one drafted token was ever accepted: the signature of a draft that
# receives the wrong weights or the wrong input, not of a draft that is merely weak.
#
# Look at: the accept length of each run against the zero-acceptance floor (1.0) and against what the
# draft reaches offline when wired correctly (`expected_accept_len`: the healthy accept len that
# notebook 5 measures; the default is its figure for the bundled pair on its default inputs, which
# `python -m kit run` passes in as measured); and whether a fix moved it.

# %% tags=["parameters"]
logs = [
    "data/incident/logs/before.log",
    "data/incident/logs/after-rename.log",
    "data/incident/logs/after-both-fixes.log",
]  # in the order the fixes were tried
baseline = "data/incident/logs/baseline-no-spec.log"  # a run without speculation, or None
engine = "sglang==0.5.10"  # the release that wrote the logs (None: from their format and rates)
num_draft_tokens = None  # the deployment's speculative draft tokens per step; None: from the logs
# what this draft should reach wired correctly: notebook 5's healthy accept len for it (a run
# passes it on); None: no expectation line
expected_accept_len = None
probe_url = None  # a running server (http://host:port): its live figures beside the expectation
probe_interval = 10.0  # seconds between the two metrics scrapes of the probe
interactive = False  # True: widgets to explore; headless runs keep False

# %%
from itertools import pairwise
from pathlib import Path

from IPython.display import Markdown, display

from kit.acceptance import analyze, compare, interpret, parse_files, probe
from kit.report.notebook import setup, show
from kit.report.plots.acceptance import accept_len_figure, throughput_figure
from kit.report.plots.tables import findings_table, table
from kit.report.record import record

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line

# %%
runs = parse_files(logs, engine=engine, num_draft_tokens=num_draft_tokens)
base = parse_files([baseline], engine=engine)[0] if baseline else None
report = analyze(runs, expected_accept_len=expected_accept_len, baseline=base)
steps = [compare(before, after) for before, after in pairwise(runs)]
findings = report.findings + [f for step in steps for f in step.findings]
compared = [
    {
        "run": Path(r.source).name,
        "engine": r.engine,
        "accept len": r.accept_len.mean,
        "accept rate": r.accept_rate.mean,
        "tok/s": r.throughput.mean,
        "accepted drafts per step": interpret(r).get("implied_accepted_drafts_per_step"),
        "rate formula": interpret(r).get("rate_formula"),
    }
    for r in [*runs, *([base] if base else [])]
]
record("table:runs compared", compared)
before_after = [
    {
        "before": Path(c.before.source).name,
        "after": Path(c.after.source).name,
        "accept len": f"{c.before.accept_len.mean:.2f} → {c.after.accept_len.mean:.2f}",
        "throughput ratio": c.to_dict()["throughput_ratio"],
        "verdict": "; ".join(f.title for f in c.findings),
    }
    for c in steps
]
record("table:before against after", before_after)
record("summary", {"logs": len(logs), "expected accept len (offline)": expected_accept_len})
display(table(compared, "Runs compared"), table(before_after, "Before against after each fix"))

# %% [markdown]
# ## Accept length over time, observed against expected
#
# Each run is one log and keeps its colour in every panel. The red dashed line at 1.0 is zero
# acceptance, the grey dotted one the chain cap (the most a chain of drafts can reach), the green
# dotted one the offline expectation `expected_accept_len` for this draft wired correctly (drawn
# when the parameter is set; the note below the chart says when it is not). Below, the accept rate
# as the server logged it, and the generation throughput of the same runs.

# %%
fig = accept_len_figure(runs, expected=expected_accept_len)
show(fig)
record("fig:accept length, observed against expected", fig)
if expected_accept_len is None:
    display(
        Markdown("No expectation line: `expected_accept_len` is None (notebook 5 measures it).")
    )
fig = throughput_figure(runs)
show(fig)
record("fig:throughput before against after", fig)

# %% [markdown]
# ## A live server (with `probe_url`)
#
# The server's own figures, each labelled with what it covers: the last interval (the difference
# of two metrics scrapes `probe_interval` seconds apart), the server's whole life (SGLang's
# running average), or the requests the probe sent. The server's arguments are shown as it
# reports them. Set `probe_url` (or `python -m kit run --probe URL`) to fill this section.

# %%
live = probe(probe_url, interval=probe_interval) if probe_url else None
rows = []
if live is not None:
    findings += live.findings
    for scope, figure in live.figures().items():
        rows.append(
            {
                "covers": scope,
                "accept len (mean)": figure.get("accept_len", {}).get("mean"),
                "drafts accepted": figure.get("draft_acceptance"),
                "per position": figure.get("per_position"),
                "expected (offline)": expected_accept_len,
            }
        )
    display(table(rows, f"{live.engine} {live.version or ''} at {probe_url}"))
    display(
        table(
            [{"argument": k, "value": v} for k, v in live.server_args.items()], "Server arguments"
        )
    )
else:
    display(Markdown("No live server probed: `probe_url` is None."))
record("table:live server", rows)

# %% [markdown]
# ## Findings

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## Explore (interactive only): one run at a time

# %%
if interactive:
    import ipywidgets as widgets

    @widgets.interact(
        run=widgets.Dropdown(
            options=[(Path(r.source).name, i) for i, r in enumerate(runs)], value=0
        )
    )
    def show_run(run):
        show(accept_len_figure(runs, expected=expected_accept_len, shown=run))
