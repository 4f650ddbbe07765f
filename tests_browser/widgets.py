"""The explore widget of a notebook's last cell (`interactive = True`), used as a person uses it.

Every notebook's widget is an `ipywidgets.interact`: controls (dropdowns, or a text box), then an
output it redraws for each value. Picking another value must change what that output shows.
"""

from __future__ import annotations

import time

from playwright.sync_api import Locator

REDRAW_TIMEOUT_S = 60


def interact_widget(cell: Locator) -> Locator:
    return cell.locator(".widget-interact").first


def pick_another_value(widget: Locator) -> str:
    """Choose the next option of the first dropdown (or empty the text box, which filters on
    it), the way a click does; what was picked, for messages."""
    dropdowns = widget.locator(".widget-dropdown select")
    if dropdowns.count():
        select = dropdowns.first
        options = select.locator("option")
        current = select.evaluate("s => s.selectedIndex")
        pick = (current + 1) % options.count()
        label = options.nth(pick).inner_text()
        select.select_option(index=pick)
        return label
    box = widget.locator(".widget-text input").first
    box.fill("")
    return "(empty text)"


# What an output shows: its text, and the traces each plotly figure in it draws (a figure's
# text is its axes and legend, the same for two runs that differ only in which line is drawn)
_SHOWN_JS = """e => JSON.stringify([e.innerText, [...e.querySelectorAll('.js-plotly-plot')]
  .map(p => (p.data || []).filter(t => t.visible !== 'legendonly').map(t => t.name))])"""


def shown(widget: Locator) -> str:
    """What the widget's output shows now (see `_SHOWN_JS`)."""
    return widget.locator(".widget-output").first.evaluate(_SHOWN_JS)


def redrawn(widget: Locator, before: str, idle) -> str:
    """Wait for the widget's output to show something other than `before` (and the kernel to be
    idle again); what it shows then."""
    deadline = time.monotonic() + REDRAW_TIMEOUT_S
    while True:
        now = shown(widget)
        if now != before and idle():
            return now
        if time.monotonic() > deadline:
            raise TimeoutError(f"the widget's output did not change in {REDRAW_TIMEOUT_S} s")
        time.sleep(0.5)
