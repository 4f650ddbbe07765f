"""Every notebook as JupyterLab shows it, driven in a real browser (headless chromium).

Per notebook, as notebooks/README.md tells a person to use it: open the script (a notebook, not
a text file), save it untouched (no diff), Run → Run All Cells (every cell runs, no error, every
output of the headless run rendered in the same cell), then `interactive = True`, Run All again
and pick another value in the widget (its output is redrawn). A screenshot of each stage goes to
runs/test-browser/.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from lab_page import PANEL, LabNotebook, wait_for_document
from playwright.sync_api import expect
from widgets import interact_widget, pick_another_value, redrawn, shown

from kit.report.notebook import NOTEBOOKS, ROOT, read_script

SCRIPTS = sorted(NOTEBOOKS.glob("*.py"))
RUN_ALL_TIMEOUT_S = 300
DRAW_TIMEOUT_S = 30
PLOTLY = "application/vnd.plotly.v1+json"
# what Lab renders an output bundle with, most preferred first (its renderers' ranks)
PREFERRED = (PLOTLY, "text/html", "text/markdown", "image/png", "text/plain")
TIMINGS: dict[str, dict[str, float]] = {}


def rendered_as(output: dict) -> str | None:
    """The MIME type Lab shows a saved output under; None for one it shows nothing for (the
    kit's records)."""
    if output["output_type"] == "stream":
        return f"application/vnd.jupyter.{output['name']}"
    if output["output_type"] == "error":
        return "application/vnd.jupyter.stderr"
    return next((m for m in PREFERRED if m in output.get("data", {})), None)


def expected_kinds(reference: Path, script: Path) -> list[list[str]]:
    """Per code cell, what the headless run of this notebook rendered, in order."""
    nb = nbformat.read(reference / f"{script.stem}.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    cells = [c for c in cells if "injected-parameters" not in c.metadata.get("tags", [])]
    return [[k for k in map(rendered_as, c.outputs) if k] for c in cells]


def is_subsequence(part: list[str], whole: list[str]) -> bool:
    items = iter(whole)
    return all(any(x == y for y in items) for x in part)


def diff_of(path: Path) -> str:
    return subprocess.run(
        ["git", "diff", "--", str(path)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def param_line(script: Path, name: str, value: str) -> str:
    """The parameters cell's line for `name`, its value replaced, its comment kept."""
    [cell] = [c for c in read_script(script).cells if "parameters" in c.metadata.get("tags", [])]
    [line] = [x for x in cell.source.splitlines() if x.startswith(f"{name} = ")]
    return re.sub(rf"^{name} = (\"[^\"]*\"|\S+)", lambda _: f"{name} = {value}", line)


def check_opens_as_notebook(nb: LabNotebook, script: Path) -> None:
    cells = nb.page.locator(f"{PANEL} .jp-Cell")
    expect(cells).to_have_count(len(read_script(script).cells))  # Lab adds them as it renders
    assert "jp-MarkdownCell" in (cells.first.get_attribute("class") or "")


def check_unedited_save_is_no_change(nb: LabNotebook, script: Path, lab) -> None:
    """Opened, the notebook differs from the file only by the kernel's `language_info`, which
    Lab writes into every notebook that lacks it (hence the unsaved mark as the kernel starts)
    and which the script does not keep: Ctrl+S leaves the script byte for byte as it was, and
    its git diff as it was (none in a clean checkout)."""
    rel = script.relative_to(ROOT).as_posix()
    on_disk = lab.api(f"/api/contents/{rel}?type=notebook&content=1")["content"]
    held = nb.model()
    changed = {k for k in {*held["metadata"], *on_disk["metadata"]}
               if held["metadata"].get(k) != on_disk["metadata"].get(k)}  # fmt: skip
    assert changed <= {"language_info"}, f"{script.name}: opening changed {changed}"
    sources = [c["source"] for c in held["cells"]]
    assert sources == [c["source"] for c in on_disk["cells"]], f"{script.name}: cells changed"
    original, diff = script.read_bytes(), diff_of(script)  # a checkout may have edits of its own
    nb.save()
    assert script.read_bytes() == original and diff_of(script) == diff, diff_of(script)[:2000]


def check_run_all(nb: LabNotebook, script: Path, expected: list[list[str]]) -> float:
    seconds = nb.run_all(RUN_ALL_TIMEOUT_S)
    errors = nb.error_outputs()
    texts = [errors.nth(i).inner_text()[:500] for i in range(errors.count())]
    assert not texts, f"{script.name}: error output after Run All: {texts}"
    cells = nb.code_cells()
    assert cells.count() == len(expected), f"{script.name}: {cells.count()} code cells"
    for i, kinds in enumerate(expected):
        got = nb.rendered_kinds(cells.nth(i))
        assert is_subsequence(kinds, got), f"{script.name} code cell {i + 1}: {got}, not {kinds}"
    figures = sum(k.count(PLOTLY) for k in expected)
    drawn = nb.page.locator(f"{PANEL} .js-plotly-plot .main-svg")  # plotly.js draws after the run
    deadline = time.monotonic() + DRAW_TIMEOUT_S
    while drawn.count() < figures and time.monotonic() < deadline:
        time.sleep(0.25)
    assert drawn.count() >= figures, f"{script.name}: {drawn.count()} of {figures} figures drawn"
    check_progress_bars(nb, script)
    return seconds


def check_progress_bars(nb: LabNotebook, script: Path) -> None:
    """A notebook that measures with `progress=watched()` shows a bar per wiring in Lab (never
    headless); once Run All is done every bar is tqdm's finished one, none stopped half way."""
    bars = nb.page.locator(f"{PANEL} .widget-hprogress .progress-bar")
    states = [bars.nth(i).get_attribute("class") for i in range(bars.count())]
    if "progress=watched()" in script.read_text():
        assert states, f"{script.name}: no progress bar while it measured"
    unfinished = [c for c in states if "progress-bar-success" not in c]
    assert not unfinished, f"{script.name}: progress bars not finished: {unfinished}"


def check_widget_redraws(nb: LabNotebook, script: Path) -> str:
    widget = interact_widget(nb.code_cells().last)
    assert widget.count(), f"{script.name}: no widget with interactive = True"
    widget.scroll_into_view_if_needed()  # Lab skips drawing what is out of view: no text there
    output = widget.locator(".widget-output").first
    assert output.inner_text().strip(), f"{script.name}: the widget shows nothing before a pick"
    before = shown(widget)
    picked = pick_another_value(widget)
    after = redrawn(widget, before, lambda: nb.kernel_status() == "idle")
    errors = nb.error_outputs()
    assert not errors.count(), f"{script.name} after picking {picked}: {errors.first.inner_text()}"
    return f"{picked}: {len(before)} → {len(after)} characters"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_notebook_in_lab(script, lab, page, reference, shots):
    original = script.read_bytes()
    nb = LabNotebook(page, lab, script.relative_to(ROOT).as_posix())
    timing = TIMINGS.setdefault(script.stem, {})
    start = time.monotonic()
    try:
        nb.open()
        timing["open"] = time.monotonic() - start
        check_opens_as_notebook(nb, script)
        check_unedited_save_is_no_change(nb, script, lab)
        if script.stem == "postmortem":  # it reads a run: the reference run, not runs/demo
            nb.set_line("run_dir", param_line(script, "run_dir", json.dumps(str(reference))))
        timing["run all"] = check_run_all(nb, script, expected_kinds(reference, script))
        nb.screenshot(shots / f"{script.stem}.png")
        nb.set_line("interactive", param_line(script, "interactive", "True"))
        timing["run all, interactive"] = nb.run_all(RUN_ALL_TIMEOUT_S)
        timing["widget"] = check_widget_redraws(nb, script)
        nb.screenshot(shots / f"{script.stem}-widget.png")
    finally:
        timing["total"] = time.monotonic() - start
        (shots / "timings.json").write_text(json.dumps(TIMINGS, indent=1))
        edited = script.read_bytes() != original
        script.write_bytes(original)
    assert not edited, f"{script.name}: the drive's edits reached the script"


def test_a_wrong_path_stops_the_notebook_in_one_line(lab, page):
    """notebooks/README.md: a wrong path stops the notebook at the cell that reads it, with one
    line naming the file and the problem, not a traceback through the library."""
    script = NOTEBOOKS / "01_key_inspection.py"
    original = script.read_bytes()
    nb = LabNotebook(page, lab, script.relative_to(ROOT).as_posix())
    missing = "data/no-such-draft"
    try:
        nb.open()
        nb.set_line("draft", param_line(script, "draft", json.dumps(missing)))
        nb.run_all(RUN_ALL_TIMEOUT_S)
        errors = nb.error_outputs()
        assert errors.count() == 1, f"{errors.count()} error outputs"
        lines = errors.first.inner_text().strip().splitlines()
        assert len(lines) == 1 and missing in lines[0] and "KitError" in lines[0], lines[:20]
        cells = nb.code_cells()
        failed = [i for i in range(cells.count()) if nb.has_error(cells.nth(i))]
        assert failed and "(draft)" in cells.nth(failed[0]).locator(".cm-content").inner_text()
        later = [nb.prompt(cells.nth(i)) for i in range(failed[0] + 1, cells.count())]
        assert later and all(p == "[ ]:" for p in later), f"cells after the error ran: {later}"
    finally:
        script.write_bytes(original)


def test_make_lab_lands_on_notebook_1_and_a_double_click_opens_a_notebook(lab, page):
    """The URL `make lab` prints opens notebook 1; double-clicking another script in the file
    browser opens it as a notebook too (Lab's own default for `.py` is the text editor)."""
    page.goto(f"{lab.url}/?token={lab.token}")
    wait_for_document(page, "the page make lab opens")
    tab = page.locator(".lm-TabBar-tab.jp-mod-current").first
    assert "01_key_inspection.py" in tab.inner_text()
    other = "02_load_weights_simulation.py"
    page.locator(".jp-DirListing-item", has_text=other).dblclick()
    page.locator(".lm-TabBar-tab.jp-mod-current", has_text=other).first.wait_for()
    wait_for_document(page, other)
    expect(page.locator(f"{PANEL} .jp-Cell")).to_have_count(
        len(read_script(NOTEBOOKS / other).cells)
    )
