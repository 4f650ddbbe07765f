"""Write the notebooks of the kit from the cells below (run: `python notebooks/make_notebooks.py`).

The `.ipynb` files are committed without outputs; this script is their reviewable source, so a change
to a notebook is a change here. Each notebook: a title that says what the step is for, a cell tagged
`parameters` (papermill injects new values after it), glue that calls into `kit`, markdown that says
what to look at and why, records a program reads back (`kit.record`), and widgets only when
`interactive` is true, so a headless run never waits on them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent


def setup(imports: str = "", torch: bool = False, tables: bool = True) -> nbformat.NotebookNode:
    """The first code cell: the kit's imports (and one torch thread where torch does the work)."""
    head = "import os\n\n" + ("import torch\n" if torch else "")
    tables_import = "from kit.plots.tables import findings_table, table\n" if tables else ""
    tail = "\ntorch.set_num_threads(1)  # parallel kernels share the cores" if torch else ""
    return code(
        f"{head}from IPython.display import display\n\n{tables_import}"
        f"from kit.record import record\nfrom kit.runbook import ROOT\n{imports}\n\n"
        "os.chdir(ROOT)  # paths in the parameters are relative to the repo root, as in headless runs"
        f"{tail}"
    )


def md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip())


def code(text: str, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(text.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def params(text: str) -> nbformat.NotebookNode:
    return code(
        text + "\ninteractive = False  # True: widgets to explore; headless runs keep False",
        ("parameters",),
    )


FINDINGS = """\
display(findings_table(findings))
record("findings", findings)"""

KEY_INSPECTION = [
    md("""
# 1. Key inspection: what is in the draft checkpoint

An engine decides from a tensor's **name** whether it loads it, so the first question is what the
checkpoint calls its tensors, and what the config around them says. This notebook reads only the
safetensors headers (no tensor bytes), so it takes milliseconds even for a multi-GB draft.

Look at:
- **the layout**: `layers.0.*` (speculators, ModelOpt since March 2026) or `midlayer.*` (EAGLE,
  SpecForge). Engines were written against one of them; the next notebook shows what that costs;
- **the vocabulary mapping**: a draft with a smaller vocabulary than the target needs `d2t`;
- **shapes against the config**: `fc` must take `3 × target hidden` inputs, the attention's q/k/v
  take `2 × hidden`.
"""),
    params('draft = "data/organism/draft"  # draft checkpoint folder'),
    setup("from kit.inspection import inspect_checkpoint"),
    code("""
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
summary"""),
    md("""
## Which trainer wrote it, and what its config says

The format guess comes with the evidence that decided it. The config fields below are the ones the
engines read to build the draft: widths, the aux layer ids (and in which convention they were
written), the vocabulary sizes.
"""),
    code("""
evidence = [{"format evidence": e} for e in info["format"]["evidence"]]
fields = ("source", "hidden_size", "target_hidden_size", "num_hidden_layers", "aux_layer_ids", "aux_layer_convention", "vocab_size", "draft_vocab_size")
config = [{"field": k, "value": info["config"].get(k)} for k in fields]
record("table:format evidence", evidence)
record("table:config", config)
display(table(evidence), table(config))"""),
    md("""
## The keys, grouped by module

Each box is a module; its area is the tensor's size. A draft's decoder layer is most of its bytes,
so whatever an engine does with the `layers.0` (or `midlayer`) box decides most of its behaviour.
"""),
    code("""
import plotly.graph_objects as go


def module_of(name):
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] in ("layers", "midlayer", "model") else parts[0]


tensors = info["tensors"]
parent = {t["name"]: module_of(t["name"]) for t in tensors}
modules = sorted({m for n, m in parent.items() if m != n})  # `d2t` is its own module
fig = go.Figure(
    go.Treemap(
        ids=modules + [t["name"] for t in tensors],
        labels=modules + [t["name"] for t in tensors],
        parents=[""] * len(modules) + [parent[t["name"]] if parent[t["name"]] != t["name"] else "" for t in tensors],
        values=[0] * len(modules) + [t["nbytes"] for t in tensors],
        customdata=[""] * len(modules) + [f"{t['dtype']} {t['shape']}" for t in tensors],
        hovertemplate="%{label}<br>%{customdata}<br>%{value} bytes<extra></extra>",
    )
)
fig.update_layout(title="Tensors by module (area = bytes)", height=450, margin=dict(t=40, l=0, r=0, b=0))
fig.show()
record("fig:tensors by module", fig)
keys = [{"name": t["name"], "dtype": t["dtype"], "shape": t["shape"], "bytes": t["nbytes"]} for t in tensors]
record("table:keys", keys)
display(table(keys))"""),
    md("""
## Findings

Ranked with root causes first. `info` findings are facts worth knowing (e.g. no `embed_tokens`:
engines share the target's); `error` and `critical` ones break speculation.
"""),
    code(FINDINGS),
    md("## Explore (interactive only): filter the keys"),
    code("""
if interactive:
    import ipywidgets as widgets

    @widgets.interact(pattern="layers.0")
    def show_keys(pattern):
        display(table([k for k in keys if pattern in k["name"]]))"""),
]

LOAD_SIMULATION = [
    md("""
# 2. Load-weights simulation: what the engine does with each key

Engines load a draft by matching checkpoint keys to their own parameter names, with renames and
merges (q/k/v into `qkv_proj`, gate/up into `gate_up_proj`). A key that matches nothing may be
**silently dropped**: the server starts, serves, and the parameter keeps its initial values. This
notebook replays the loader of one engine release, key by key, from the headers alone.

Look at:
- keys whose fate is `dropped_silently`: nothing in the server log says so;
- parameters `left_at_init`: the draft runs with those weights untrained;
- the release matrix at the end: which releases load this checkpoint as it is.
"""),
    params('draft = "data/organism/draft"  # draft checkpoint folder\nengine = "sglang==0.5.10"'),
    setup(
        """\
from kit.checkpoint import open_checkpoint
from kit.config import load_draft_config
from kit.engines import all_releases, parse_engine
from kit.loading import simulate_load"""
    ),
    code("""
ck = open_checkpoint(draft)
cfg = load_draft_config(draft)
report = simulate_load(ck, cfg, engine)
served = report.as_served  # a refused config.json: the keys as the release loads them once it is rewritten
fates = [
    {"key": k.key, "as saved": k.outcome, "outcome": (k.if_config_rewritten or k).outcome, "param": (k.if_config_rewritten or k).param, "message": (k.if_config_rewritten or k).message}
    for k in report.keys
]
at_init = [{"param": p.name, "shape": p.shape, "init": p.init} for p in served.params if p.state == "left_at_init"]
findings = report.findings
summary = {
    "engine": engine,
    "config.json as saved": f"refused: {report.refusal.message}" if report.refusal else "read",
    "keys": len(fates),
    "keys dropped silently": sum(f["outcome"] == "dropped_silently" for f in fates),
    "parameters left at init": len(at_init),
}
record("summary", summary)
summary"""),
    md("""
## Every key's fate

Green keys reach a parameter; red keys are dropped without a word. Below the chart, every key with
the parameter it lands in, then the parameters that nothing loaded: they are the draft's untrained
part in this engine.
"""),
    code("""
import plotly.graph_objects as go

COLOURS = {"loaded": "#2e7d32", "consumed": "#66bb6a", "ignored": "#90a4ae", "warned": "#ffa000", "dropped_silently": "#c62828", "error": "#6a1b9a"}
outcomes = [o for o in COLOURS if any(f["outcome"] == o for f in fates)]
fig = go.Figure(
    [go.Bar(name=o, x=[sum(f["outcome"] == o for f in fates)], y=[engine], orientation="h", marker_color=COLOURS[o]) for o in outcomes]
)
fig.update_layout(
    barmode="stack",
    title=f"Checkpoint keys by fate under {engine}",
    height=280,
    xaxis_title="keys",
    legend=dict(orientation="h", traceorder="normal", x=1, xanchor="right", y=1.02, yanchor="bottom"),
)
fig.show()
record("fig:key fates", fig)
record("table:key fates", fates)
record("table:parameters left at init", at_init)
display(table(fates, "Every checkpoint key"), table(at_init, "Parameters nothing loaded (left at init)"))"""),
    md("""
## Findings

Ranked with root causes first: a `critical` root cause is what to fix; the fix column says how.
"""),
    code(FINDINGS),
    md("""
## Which releases load this checkpoint?

The same replay for every release of the engine the kit models. The bars count the keys a release
drops and the parameters it leaves at init; a green dot marks a release that loads every tensor of
this checkpoint, a purple ✕ one whose server does not even start with it (no bars there: nothing
is served). For a release with red bars the fix is a rename (`python -m kit fix`).
"""),
    code("""
releases = all_releases(parse_engine(engine).name)
matrix = []
for release in releases:
    r = simulate_load(ck, cfg, release)
    s = r.as_served  # counted as the release loads the keys under the config it reads
    matrix.append(
        {
            "release": str(release),
            "config.json as saved": "refused" if r.refusal else "read",
            "dropped silently": sum(k.outcome == "dropped_silently" for k in s.keys),
            "left at init": sum(p.state == "left_at_init" for p in s.params),
            "crashed": s.crashed,
        }
    )
names = [m["release"] for m in matrix]
crashed = [m["release"] for m in matrix if m["crashed"]]  # no bars: a server that does not start serves nothing
clean = [m["release"] for m in matrix if not m["crashed"] and not m["dropped silently"] and not m["left at init"]]
fig = go.Figure(
    [
        go.Bar(name="keys dropped silently", x=names, y=[None if m["crashed"] else m["dropped silently"] for m in matrix], marker_color="#c62828"),
        go.Bar(name="parameters left at init", x=names, y=[None if m["crashed"] else m["left at init"] for m in matrix], marker_color="#ffa000"),
        go.Scatter(name="server does not start", x=crashed, y=[0.5] * len(crashed), mode="markers", marker=dict(symbol="x", size=11, color="#6a1b9a")),
        go.Scatter(name="loads every tensor", x=clean, y=[0.5] * len(clean), mode="markers", marker=dict(size=10, color="#2e7d32")),
    ]
)
fig.update_layout(barmode="group", title=f"Across {parse_engine(engine).name} releases", height=380, xaxis_tickangle=-60, yaxis_title="count")
fig.show()
record("fig:across releases", fig)
record("table:across releases", matrix)"""),
    md("## Explore (interactive only): pick another release"),
    code("""
if interactive:
    import ipywidgets as widgets

    @widgets.interact(release=widgets.Dropdown(options=[str(r) for r in releases], value=engine))
    def show_release(release):
        display(findings_table(simulate_load(ck, cfg, release).findings, title=release))"""),
]

TRACING = [
    md("""
# 3. Hidden-state tracing: what reaches the draft

EAGLE-3 feeds the draft three hidden states of the target (a low, a middle and a high layer),
concatenated, and the draft's `fc` projects them back to one hidden width. Which layers are
captured, and whether they are captured at all, depends on the engine release and on the target's
model class. SGLang applies `fc` only when the incoming width differs from the embedding width: hand
it a single hidden state and `fc` is silently **bypassed**.

This notebook traces the draft's forward pass on the meta device (shapes only, no memory) at full
scale, step by step along named hook points. Look at the width entering the draft and whether the
`fc` box is red. The parameters replay the bundled incident: aux capture was off for the Kimi-K2.5
class in that deployment (`aux_capture = False`); `None` asks what the release does by itself.
"""),
    params(
        'target_config = "data/incident/kimi-k2.5/target"  # target config.json or its folder\n'
        'draft = "data/incident/kimi-k2.5/draft"  # draft config.json or checkpoint folder\n'
        'engine = "sglang==0.5.10"\n'
        "target_class = None  # model class serving the target (default: its architecture)\n"
        "aux_capture = False  # as in the incident: off; None: what the release does for that class"
    ),
    setup(
        """\
from kit.config import load_draft_config, load_target_config
from kit.plots.datapath import datapath_figure
from kit.trace import trace_draft""",
        torch=True,
    ),
    code("""
target_cfg = load_target_config(target_config)
draft_cfg = load_draft_config(draft)
report = trace_draft(target_cfg, draft_cfg, engine, target_class=target_class, aux_capture=aux_capture)
trace = report.to_dict()
findings = report.findings
keys = ("target_class", "captured_layers", "trained_layers", "hidden_width", "fc_applied", "feeds")
summary = {k: trace[k] for k in keys}
record("summary", summary)
summary"""),
    md("""
## The data path as deployed

One box per hook point with the tensor shape that crosses it. A red box is a step that is bypassed
or fails.
"""),
    code("""
fig = datapath_figure(report)
fig.show()
record("fig:data path as deployed", fig)
hooks = trace.get("hooks", [])
record("table:hook shapes", hooks)
display(table(hooks, "Shape at each hook point"))"""),
    md("""
## The same draft with aux capture on

What the draft was trained on: three captured hidden states, concatenated, through `fc`.
"""),
    code("""
healthy = trace_draft(target_cfg, draft_cfg, engine, target_class=target_class, aux_capture=True)
fig = datapath_figure(healthy)
fig.show()
record("fig:data path with aux capture on", fig)"""),
    md("## Findings of the data path as deployed"),
    code(FINDINGS),
    md("## Explore (interactive only): pick another release"),
    code("""
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
        r = trace_draft(target_cfg, draft_cfg, release, target_class=target_class, aux_capture=captures[capture])
        datapath_figure(r).show()
        display(findings_table(r.findings, title=release))"""),
]

ACCEPTANCE = [
    md("""
# 4. Acceptance rate: what the server logs say

The server logs an `accept len` (tokens kept per verify step, the target's own included) and, in
some releases, an `accept rate`, whose formula changed between releases. With 5 draft tokens,
`accept len: 1.00` means not one drafted token was ever accepted: the signature of a draft that
receives the wrong weights or the wrong input, not of a draft that is merely weak.

Look at: the accept length of each run against the zero-acceptance floor (1.0) and against what the
draft reaches offline when wired correctly (`expected_accept_len`: the healthy accept len of
notebook 5, which `python -m kit run` passes in; left at `None`, that line is not drawn); and
whether a fix moved it.
"""),
    params(
        'logs = ["data/incident/logs/before.log", "data/incident/logs/after-rename.log", '
        '"data/incident/logs/after-both-fixes.log"]  # in the order the fixes were tried\n'
        'baseline = "data/incident/logs/baseline-no-spec.log"  # a run without speculation, or None\n'
        'engine = "sglang==0.5.10"  # the release that wrote the logs (None: inferred from the format)\n'
        "num_draft_tokens = None  # None: from the logs\n"
        "expected_accept_len = None  # notebook 5's healthy accept len; None: no expectation line"
    ),
    setup(
        """\
from itertools import pairwise
from pathlib import Path

from kit.acceptance import analyze, compare, interpret, parse_files
from kit.plots.acceptance import accept_len_figure, throughput_figure"""
    ),
    code("""
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
display(table(compared, "Runs compared"), table(before_after, "Before against after each fix"))"""),
    md("""
## Accept length over time, observed against expected

Each run is one log and keeps its colour in every panel. The red dashed line at 1.0 is zero
acceptance, the grey dotted one the most a chain of drafts can reach, the green dotted one (when
`expected_accept_len` is set) the offline expectation for this draft wired correctly. Below, the
accept rate as the server logged it, and the generation throughput of the same runs.
"""),
    code("""
fig = accept_len_figure(runs, expected=expected_accept_len)
fig.show()
record("fig:accept length, observed against expected", fig)
fig = throughput_figure(runs)
fig.show()
record("fig:throughput before against after", fig)"""),
    md("## Findings"),
    code(FINDINGS),
    md("## Explore (interactive only): one run at a time"),
    code("""
if interactive:
    import ipywidgets as widgets

    @widgets.interact(run=widgets.Dropdown(options=[(Path(r.source).name, i) for i, r in enumerate(runs)], value=0))
    def show_run(run):
        accept_len_figure([runs[run]], expected=expected_accept_len).show()"""),
]

OFFLINE = [
    md("""
# 5. Offline acceptance: what the draft should reach

The bundled small target and its EAGLE-3 draft, run on CPU: the draft proposes `k` tokens, the
target verifies them greedily, and every accepted position is counted. Run five ways, the faults
injected from the other analyses rather than by hand (the `wiring` column names each; below, as
for the default `sglang==0.5.10`):

- **healthy**: every weight loaded, three aux hidden states through `fc`;
- **as deployed** (`sglang==0.5.10, aux capture off`): tensors the release drops stay at its init
  (notebook 2) and the single final hidden state reaches the draft, `fc` bypassed (notebook 3);
- **each fix on its own**: aux capture alone (`sglang==0.5.10, aux capture on`), the key rename
  alone (`sglang==0.5.10 after kit fix (rename), aux capture off`);
- **both fixes** (`… after kit fix (rename), aux capture on`): should match healthy.

Look at how far each fault pulls accept length from healthy: the healthy figure is the expectation
a server log is judged against (notebook 4 draws it as a dashed line).
"""),
    params(
        'target = "data/organism/target"  # transformers target folder\n'
        'draft = "data/organism/draft"  # draft checkpoint folder\n'
        'engine = "sglang==0.5.10"\n'
        "k = 5  # draft tokens per step\n"
        "num_prompts = None  # None: every held-out prompt (prompts.jsonl beside the target)"
    ),
    setup(
        """\
from pathlib import Path

from transformers.utils import logging as hf_logging

from kit.organism import fault_matrix, load_prompts""",
        torch=True,
    ),
    code("""
hf_logging.disable_progress_bar()  # transformers' loading bar is a widget: none unless interactive
prompts = None
if num_prompts:
    beside = [Path(target) / "prompts.jsonl", Path(target).parent / "prompts.jsonl"]
    prompts = load_prompts(next(p for p in beside if p.is_file()))[:num_prompts]
rows = fault_matrix(target, draft, engine, k=k, prompts=prompts, progress=False)
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
record("summary", {"k": k, "expected accept len (healthy)": healthy.accept_len, "accept len as deployed": deployed.accept_len})
findings = deployed.findings
display(table(wirings))"""),
    md("""
## Acceptance per draft position

The first drafted token lands most often; each later one needs all before it accepted. A
completion that ends within the chain's reach counts as the release counts it: SGLang up to
0.5.10 counts nothing past the stop token, SGLang from 0.5.11 and vLLM also count the drafts
verified beyond it (the `counted_as` field of each row). A fault that flattens every position to zero is what a server with
`accept len 1.00` runs.
"""),
    code("""
import plotly.graph_objects as go

fig = go.Figure(
    [go.Bar(name=row.label, x=[f"position {i}" for i in range(k)], y=row.result.per_position) for row in rows]
)
fig.update_layout(barmode="group", title=f"Acceptance per position (k = {k})", yaxis_title="accepted fraction", height=380)
fig.show()
record("fig:acceptance per position", fig)
lengths = [row.result.accept_len for row in rows]
colours = ["#c62828" if a < 1.1 else "#2e7d32" if a >= 0.9 * healthy.accept_len else "#ffa000" for a in lengths]
fig = go.Figure(go.Bar(y=[row.label for row in rows], x=lengths, marker_color=colours, orientation="h"))
fig.add_vline(x=1.0, line_color="#c62828", line_dash="dash", annotation_text="zero acceptance")
fig.update_layout(title="Accept length by wiring", xaxis_title="accept len", yaxis_autorange="reversed", height=100 + 45 * len(rows))
fig.show()
record("fig:accept length by wiring", fig)"""),
    md("""
## Findings of the wiring as deployed
"""),
    code(FINDINGS),
]

POSTMORTEM = [
    md("""
# Postmortem of a run

`python -m kit run --out runs/NAME` executes notebooks 1–5 headless and writes their executed copies,
`findings.json` and `postmortem.html` into `runs/NAME`. This notebook reads such a run back, from
the records inside the executed notebooks, and shows the verdict: the root causes first, each with
its evidence and its fix, then what ran and what did not.
"""),
    params('run_dir = "runs/demo"  # a folder written by `python -m kit run`'),
    setup(
        "from plotly.offline import init_notebook_mode\n\n"
        "from kit import postmortem\nfrom kit.plots.tables import styled\nfrom kit.runbook import load_run",
        tables=False,
    ),
    code("""
init_notebook_mode()  # plotly.js in the page: the verdict's symptom chart is HTML that draws with it
run = load_run(run_dir)
findings = run.findings
verdict = [f for f in findings if f.root_cause]
record("verdict", verdict)
record("steps", {s.name: s.status for s in run.steps})
display(styled(postmortem.verdict_html(run)))"""),
    md("## What ran"),
    code("display(styled(postmortem.status_html(run)))"),
    md("## The key figures of each step"),
    code("""
import plotly.graph_objects as go
from IPython.display import Markdown

for step in run.steps:
    figures = {name[4:]: figure for name, figure in step.records.items() if name.startswith("fig:")}
    if figures:
        display(Markdown(f"### {step.title}"))
    for figure in figures.values():
        go.Figure(figure).show()"""),
    md("## Explore (interactive only): pick a step"),
    code("""
if interactive:
    import ipywidgets as widgets

    @widgets.interact(step=[s.name for s in run.steps])
    def show_step(step):
        display(styled(postmortem.step_html(run.step(step))))"""),
]

NOTEBOOKS = {
    "01_key_inspection": KEY_INSPECTION,
    "02_load_weights_simulation": LOAD_SIMULATION,
    "03_hidden_state_tracing": TRACING,
    "04_acceptance_rate": ACCEPTANCE,
    "05_offline_acceptance": OFFLINE,
    "postmortem": POSTMORTEM,
}


def build(name: str, cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name[:2]}-{i:02d}"
    return nb


def main(out: Path = HERE) -> list[Path]:
    """Write every notebook into `out`, formatted by the repo's own ruff settings."""
    paths = []
    for name, cells in NOTEBOOKS.items():
        paths.append(out / f"{name}.ipynb")
        nbformat.write(build(name, cells), paths[-1])
    files = [str(p) for p in paths]
    ruff = [sys.executable, "-m", "ruff"]
    config = ["--config", str(HERE.parent / "pyproject.toml")]
    subprocess.run([*ruff, "check", "--fix", "--quiet", *config, *files], check=False)
    subprocess.run([*ruff, "format", "--quiet", *config, *files], check=True)
    return paths


if __name__ == "__main__":
    main()
