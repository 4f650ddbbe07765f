"""Tables and findings as a notebook shows them: left-aligned, top-aligned, severities in colour.

JupyterLab right-aligns and middle-aligns every table cell, which turns a findings table (a
title, a list of evidence, a fix) into a ragged right edge. These wrap the kit's HTML
(`kit.postmortem.table_html`, `kit.findings.to_html`, the postmortem's sections) in a scoped
style. The alignment is also written on each cell, because JupyterLab drops `<style>` from the
outputs of a notebook it does not trust (an executed copy opened later) but keeps inline styles.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.display import HTML

    from kit.findings import Finding

SCOPE = "eagle3-kit"
CSS = f"""
.{SCOPE} table {{border-collapse: collapse; margin: 6px 0 12px; table-layout: auto}}
.{SCOPE} th, .{SCOPE} td {{
  text-align: left; vertical-align: top; padding: 4px 8px;
  border: 1px solid var(--jp-border-color2, #dde1e8);
}}
.{SCOPE} th {{background: var(--jp-layout-color2, #eef0f4)}}
.{SCOPE} td ul {{margin: 4px 0; padding-left: 18px}}
.{SCOPE} td li {{text-align: left}}
.{SCOPE} td.sev {{white-space: nowrap; font-weight: 600}}
.{SCOPE} tr.sev-critical td.sev {{color: #fff; background: #c62828}}
.{SCOPE} tr.sev-error td.sev {{color: #c62828}}
.{SCOPE} tr.sev-warning td.sev {{color: #a86400}}
.{SCOPE} tr.sev-info td.sev {{color: #1565c0}}
.{SCOPE} .cite, .{SCOPE} .meta {{color: var(--jp-ui-font-color2, #5b6575); font-size: 90%}}
.{SCOPE} .fix {{background: #e8f5e9; border-left: 4px solid #2e7d32; padding: 6px 12px}}
.{SCOPE} .missing {{background: #fff3e0; border-left: 4px solid #ef6c00; padding: 8px 12px}}
.{SCOPE} .failed {{background: #ffebee; border-left: 4px solid #c62828; padding: 8px 12px}}
.{SCOPE} .cause h3 {{color: #b71c1c}}
.{SCOPE} .ok {{color: #2e7d32; font-weight: 600}}
.{SCOPE} .bad {{color: #c62828; font-weight: 600}}
.{SCOPE} .skip {{color: #a86400; font-weight: 600}}
"""
_CELL = re.compile(r"<(td|th)(?=[\s>])")
_ALIGN = 'style="text-align:left;vertical-align:top"'


def styled(fragment: str) -> HTML:
    """Any of the kit's HTML, readable in a notebook."""
    from IPython.display import HTML

    cells = _CELL.sub(lambda m: f"<{m.group(1)} {_ALIGN}", fragment)
    return HTML(f'<style>{CSS}</style><div class="{SCOPE}">{cells}</div>')


def table(rows: list[dict[str, Any]], title: str | None = None) -> HTML:
    """Row dicts as a table, under a bold caption when given."""
    from kit.postmortem import table_html

    caption = f"<p><b>{html.escape(title)}</b></p>" if title else ""
    return styled(caption + table_html(rows))


def findings_table(findings: Sequence[Finding], title: str | None = None) -> HTML:
    """Findings ranked, root causes first, each with its evidence and fix."""
    from kit.findings import to_html

    caption = f"<p><b>{html.escape(title)}</b></p>" if title else ""
    return styled(caption + to_html(findings))
