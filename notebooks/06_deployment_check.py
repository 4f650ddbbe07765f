# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 6. Deployment check: the launch line, the configs and the tokenizer as evidence
#
# Most reported causes of low EAGLE-3 acceptance are not in the checkpoint's keys or in the aux
# capture but in how the server was launched and in what the draft and target configs disagree
# on: `--speculative-algorithm EAGLE` for an EAGLE-3 draft, a chain counted with or without its
# root, a draft trained on 2,048 positions served at 32k, another RoPE, an FP8 target, another
# chat template.
#
# This notebook reads the launch line with the served release's own flag table (an unknown or
# misspelled flag is reported, not guessed at), compares the two configs, and the chat template
# the draft was trained with against the one served.
#
# Look at:
# - **the launch line as the release reads it**: the flags, the release assumed when none is given;
# - **the findings**: root causes first; `info` rows are facts and known issues, not detections.

# %% tags=["parameters"]
launch = "data/incident/launch.sh"  # the launch command, or a script holding it
draft = "data/incident/kimi-k2.5/draft"  # draft checkpoint or config folder (None: the line's)
target_config = "data/incident/kimi-k2.5/target"  # target config (None: the line's model)
engine = "sglang==0.5.10"  # the served release (None or a bare name: assumed from the line)
train_tokenizer = None  # the tokenizer the draft was trained with (chat-template rule)
served_tokenizer = None  # the served tokenizer (default: the line's or the target's)
interactive = False  # True: widgets to explore; headless runs keep False

# %%
from IPython.display import display

from kit.deployment import check
from kit.report.notebook import setup
from kit.report.plots.tables import findings_table, table
from kit.report.record import record

setup()  # paths relative to the repository root, as in headless runs; kit errors in one line

# %%
report = check(
    launch,
    draft=draft,
    target_config=target_config,
    engine=engine,
    train_tokenizer=train_tokenizer,
    served_tokenizer=served_tokenizer,
)
findings = report.findings
summary = {
    "release judged": report.facts["engine"],
    "draft": report.facts["draft"],
    "target config": report.facts["target_config"],
    "root causes": len(report.root_causes),
    "skipped": "; ".join(f"{k}: {v}" for k, v in report.skipped.items()) or "nothing",
}
record("summary", summary)
summary

# %% [markdown]
# ## The launch line as the release reads it
#
# Every flag is looked up in the flag table read from that release's wheel; the speculative
# settings are shown in one vocabulary for both engines (SGLang's draft-token count includes
# the root, vLLM's does not).

# %%
served = report.served.to_dict() if report.served else {}
flags = [{"flag": k, "value": v} for k, v in served.pop("flags", {}).items()]
launch_rows = [{"setting": k, "value": v} for k, v in served.items()]
record("table:launch", launch_rows)
record("table:flags", flags)
display(table(launch_rows, "Served settings"), table(flags, "Flags given"))

# %% [markdown]
# ## Findings
#
# Ranked with root causes first. Each names the release it holds for and the engine source
# line, PR or issue it was read from.

# %%
display(findings_table(findings))
record("findings", findings)

# %% [markdown]
# ## Explore (interactive only): the same line under another release

# %%
if interactive:
    import ipywidgets as widgets

    from kit.engines import RELEASES

    name = report.served.engine if report.served else "sglang"

    releases = list(reversed(RELEASES[name]))
    given = (engine or "").partition("==")[2] if (engine or "").startswith(f"{name}==") else ""
    version = widgets.Dropdown(
        options=releases, value=given if given in releases else releases[0], description="release"
    )

    @widgets.interact(version=version)
    def other_release(version):
        release = f"{name}=={version}"
        again = check(
            launch,
            draft=draft,
            target_config=target_config,
            engine=release,
            train_tokenizer=train_tokenizer,
            served_tokenizer=served_tokenizer,
        )
        display(findings_table(again.findings, title=f"The launch line under {release}"))
