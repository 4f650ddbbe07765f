"""Tables and findings as a notebook shows them: `kit.report.html`'s markup as a Jupyter display object.

Nothing here renders HTML itself, so a notebook's `table()` costs the renderer alone, not the
papermill runner or the postmortem page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kit.report import html

if TYPE_CHECKING:
    from IPython.display import HTML

    from kit.findings import Finding


def styled(content: str) -> HTML:
    """Any of the kit's HTML, readable in a notebook."""
    from IPython.display import HTML

    return HTML(html.fragment(content))


def _caption(title: str | None) -> str:
    return f"<p><b>{html.escape(title)}</b></p>" if title else ""


def table(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> HTML:
    """Row dicts as a table, under a bold caption when given."""
    return styled(_caption(title) + html.table_html(rows))


def findings_table(findings: Sequence[Finding], title: str | None = None) -> HTML:
    """Findings ranked, root causes first, each with its evidence and fix."""
    return styled(_caption(title) + html.findings_html(findings))
