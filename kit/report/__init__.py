"""The report: the notebooks run headless, run records, HTML, the postmortem, plots, console output.

- `runbook`: what `kit run` executes; `notebook`: one papermill run; `runs`/`record`: what a run left;
- `html`, `postmortem`, `plots/`: the shareable page; `console`: findings in a terminal.
"""
