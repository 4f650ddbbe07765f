"""Notebook 06 (a jupytext percent script) runs headless under papermill, on its defaults (the
incident's launch line) and on parameters injected for another deployment."""

from __future__ import annotations

import re
from pathlib import Path

import deployment_scenarios as sc
import jupytext
import nbformat
import papermill
import pytest

from kit.report.record import read_records

pytestmark = pytest.mark.slow  # a real kernel

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "06_deployment_check.py"


def execute(tmp_path: Path, parameters: dict | None = None) -> dict:
    source = tmp_path / "06_deployment_check.ipynb"
    nbformat.write(jupytext.read(NOTEBOOK), source)
    out = tmp_path / "executed.ipynb"
    papermill.execute_notebook(
        str(source), str(out), parameters=parameters or {}, kernel_name="python3",
        progress_bar=False, cwd=str(NOTEBOOK.parent.parent),
    )  # fmt: skip
    return read_records(out)


def test_the_script_is_a_parameterised_notebook():
    nb = jupytext.read(NOTEBOOK)
    assert nb.cells[0].cell_type == "markdown"
    assert nb.cells[1].metadata.get("tags") == ["parameters"]
    assert re.search(r"^interactive = False\b", nb.cells[1].source, re.M)
    for cell in nb.cells:
        if "ipywidgets" in cell.source:
            assert cell.source.startswith("if interactive:")


def test_the_incident_launch_line(tmp_path):
    records = execute(tmp_path)
    assert records["summary"]["release judged"] == "sglang==0.5.10"
    codes = {f["code"] for f in records["findings"]}
    assert "CHAIN_ROOT_MISCOUNTED" in codes  # 5 draft tokens, trained for 5 drafts: 4 run
    assert {"setting": "entrypoint", "value": "python -m sglang.launch_server"} in records[
        "table:launch"
    ]


def test_injected_parameters_for_a_vllm_deployment(tmp_path):
    target = sc.target(tmp_path / "target")
    draft = sc.speculators_draft(tmp_path / "draft")
    launch = (
        f"vllm serve {target} --speculative-config "
        f'\'{{"method": "eagle", "model": "{draft}", "num_speculative_tokens": 3}}\''
    )
    records = execute(tmp_path, {"launch": launch, "draft": None, "target_config": None,
                                 "engine": "vllm==0.14.0"})  # fmt: skip
    [cause] = [f for f in records["findings"] if f["root_cause"]]
    assert cause["code"] == "ALGORITHM_MISMATCH" and cause["engine"] == "vllm==0.14.0"
