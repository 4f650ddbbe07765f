"""One notebook in a JupyterLab tab, driven as a person drives it: menus, keys, clicks.

What the page shows is read from the DOM (prompts, rendered outputs, the tab's unsaved mark);
what Lab would save is read from the notebook model Lab holds (`window.jupyterapp`, exposed by
the server the drive starts).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from lab_server import Lab
from playwright.sync_api import Locator, Page

OPEN_TIMEOUT_MS = 60_000
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
EDITOR = ".jp-FileEditor:not(.lm-mod-hidden)"  # a script opened as text
SCROLLER = f"{PANEL} .jp-WindowedPanel-outer"
MAX_SHOT_HEIGHT = 16_000  # px: a full notebook in one picture, within what chromium captures
ERROR_MIME = "application/vnd.jupyter.stderr"  # Lab renders errors and stderr under this type
PLOTLY = "application/vnd.plotly.v1+json"

_CURRENT = "() => jupyterapp.shell.currentWidget"
_MODEL_JS = f"() => ({_CURRENT})().context.model.toJSON()"
_KERNEL_JS = f"""() => {{
  const s = ({_CURRENT})().sessionContext;
  return s.session && s.session.kernel ? s.session.kernel.status : 'none';
}}"""
_PROMPTS_JS = f"""() => [...document.querySelectorAll('{PANEL} .jp-CodeCell .jp-InputPrompt')]
  .map(e => e.textContent.trim())"""
_KINDS_JS = f"""outputs => outputs.map(e => e.dataset.mimeType
  || (e.classList.contains('jp-RenderedPlotly') ? '{PLOTLY}' : e.className))"""


def wait_for_document(page: Page, path: str) -> None:
    """Wait for the current tab to show a notebook's cells; fail at once if it shows the text
    editor instead (the script opened as a text file)."""
    either = page.locator(f"{PANEL} .jp-Cell, {EDITOR}").first
    either.wait_for(timeout=OPEN_TIMEOUT_MS)
    assert page.locator(EDITOR).count() == 0, f"{path} opened as a text file, not a notebook"


class LabNotebook:
    """A notebook script opened in its own Lab workspace (no other tab restored beside it)."""

    def __init__(self, page: Page, lab: Lab, path: str) -> None:
        self.page, self.lab, self.path = page, lab, path

    def open(self) -> None:
        """Open the script as a double click does: with Lab's default viewer for `.py`."""
        workspace = re.sub(r"\W", "-", Path(self.path).stem)
        self.page.goto(
            f"{self.lab.url}/lab/workspaces/{workspace}/tree/{self.path}?token={self.lab.token}"
        )
        wait_for_document(self.page, self.path)
        self.wait_for_kernel("idle", OPEN_TIMEOUT_MS / 1000)

    @property
    def tab(self) -> Locator:
        return self.page.locator(".lm-TabBar-tab.jp-mod-current").first

    def marked_modified(self) -> bool:
        """The dot on the tab: Lab's "unsaved changes" mark."""
        return "jp-mod-dirty" in (self.tab.get_attribute("class") or "")

    def model(self) -> dict[str, Any]:
        """The notebook as Lab would save it now."""
        return self.page.evaluate(_MODEL_JS)

    def kernel_status(self) -> str:
        return self.page.evaluate(_KERNEL_JS)

    def wait_for_kernel(self, status: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.kernel_status() != status:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.path}: kernel {self.kernel_status()}, not {status}")
            time.sleep(0.25)

    def menu(self, menu: str, item: str) -> None:
        """Click a menu bar entry, then one of its items."""
        self.page.locator(".lm-MenuBar-itemLabel").get_by_text(menu, exact=True).click()
        self.page.locator(".lm-Menu-itemLabel").get_by_text(item, exact=True).click()

    def run_all(self, timeout_s: float) -> float:
        """Run → Run All Cells, then wait until every cell ran (or one failed) and the kernel is
        idle; the seconds it took."""
        start = time.monotonic()
        before = max(_counts(self.page.evaluate(_PROMPTS_JS)), default=0)
        self.menu("Run", "Run All Cells")
        while True:
            prompts = self.page.evaluate(_PROMPTS_JS)
            counts = _counts(prompts)
            started = bool(counts) and counts[0] > before  # not the previous run's prompts
            ran = len(counts) == len(prompts) and min(counts) > before
            stopped = "[*]:" not in prompts and self.error_outputs().count() > 0
            if started and (ran or stopped) and self.kernel_status() == "idle":
                return time.monotonic() - start
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"{self.path}: Run All not done in {timeout_s} s: {prompts}")
            time.sleep(0.5)

    def code_cells(self) -> Locator:
        return self.page.locator(f"{PANEL} .jp-CodeCell")

    def error_outputs(self) -> Locator:
        return self.page.locator(f"{PANEL} .jp-OutputArea-output[data-mime-type='{ERROR_MIME}']")

    def has_error(self, cell: Locator) -> bool:
        return cell.locator(f".jp-OutputArea-output[data-mime-type='{ERROR_MIME}']").count() > 0

    def prompt(self, cell: Locator) -> str:
        """`[3]:` once run, `[*]:` while running or queued, `[ ]:` never run."""
        return cell.locator(".jp-InputPrompt").first.inner_text().strip()

    def rendered_kinds(self, cell: Locator) -> list[str]:
        """The MIME type Lab rendered each visible output of a cell with (plotly's renderer
        marks its output by class, not by attribute)."""
        return cell.locator(".jp-OutputArea-output").evaluate_all(_KINDS_JS)

    def set_line(self, name: str, line: str) -> None:
        """Replace the parameters cell's line assigning `name` by `line`, by keyboard."""
        target = self.page.locator(f"{PANEL} .jp-CodeCell .cm-line", has_text=f"{name} = ")
        target.first.click()
        self.page.keyboard.press("End")
        self.page.keyboard.press("Shift+Home")
        self.page.keyboard.insert_text(line)
        self.page.keyboard.press("Escape")  # back to command mode, as before the edit

    def save(self) -> None:
        """Ctrl+S, as a person saves, then wait for Lab to clear the unsaved mark."""
        self.page.locator(f"{PANEL} .jp-Notebook").click(position={"x": 5, "y": 5})
        self.page.keyboard.press("Control+s")
        deadline = time.monotonic() + 30
        while self.marked_modified():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.path}: still marked modified 30 s after Ctrl+S")
            time.sleep(0.25)

    def screenshot(self, path: Path) -> None:
        """The whole notebook in one picture: the window made as tall as the notebook first
        (Lab scrolls inside its own panel, so a page screenshot shows only the window)."""
        viewport = self.page.viewport_size
        inner, outer = self.page.evaluate(
            f"() => {{ const e = document.querySelector('{SCROLLER}');"
            " return [e.scrollHeight, e.clientHeight]; }"
        )
        height = min(MAX_SHOT_HEIGHT, viewport["height"] - outer + inner)
        self.page.set_viewport_size({"width": viewport["width"], "height": height})
        self.page.evaluate(f"() => {{ document.querySelector('{SCROLLER}').scrollTop = 0; }}")
        self.page.wait_for_timeout(1000)  # cells drawn in the new window, plotly at its size
        self.page.screenshot(path=str(path))
        self.page.set_viewport_size(viewport)


def _counts(prompts: list[str]) -> list[int]:
    """The execution counts the prompts show (`[3]:`), in order; `[ ]:` and `[*]:` have none."""
    return [int(m[1]) for p in prompts if (m := re.fullmatch(r"\[(\d+)\]:", p))]
