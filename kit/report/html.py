"""HTML for findings, tables and figures: the one renderer behind the postmortem and the notebooks.

The same markup is read in three places, each with its own limits:

* the postmortem page in any browser, a phone included: `PAGE_CSS` lays it out, and below
  `NARROW_PX` every table row becomes a card with its column names as labels (`data-label`), so
  a finding's fix stays readable on a 390 px screen;
* a notebook output in JupyterLab, which right-aligns and centres tables by default: the layout a
  table needs (left and top alignment, wrapping anywhere, the findings' column widths) is written
  on each element, because Lab keeps inline styles of a notebook it does not trust (an executed
  copy opened later) but drops its `<style>` blocks;
* that untrusted copy, without colours: a finding's severity is also a text marker (`MARKS`), so
  a critical finding still reads as one.

Tables fit the width they are given (a long key or path wraps) rather than scrolling sideways,
which hid the findings' fix column behind a scrollbar at the bottom of a tall table.
"""

from __future__ import annotations

import html as _html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kit.findings import Finding, Severity, ranked

MAX_ROWS = 60  # rows shown of a long table; a line says how many more there are
MAX_EVIDENCE = 8  # evidence lines shown of a root cause in the verdict
NARROW_PX = 640  # below this width the page stacks table rows into cards
SCOPE = "eagle3-kit"  # class around every fragment, so the CSS styles nothing else on a page

# text glyphs that DejaVu Sans and the usual system fonts carry: emoji markers drew as empty
# boxes wherever no emoji font is installed (a headless server, many Linux desktops)
MARKS = {
    Severity.CRITICAL: "✖",
    Severity.ERROR: "◆",
    Severity.WARNING: "⚠",
    Severity.INFO: "ℹ",
}

_CELL = "text-align:left;vertical-align:top;overflow-wrap:anywhere"
_HEAD = "text-align:left;vertical-align:top;overflow-wrap:normal;word-break:keep-all"
_TABLE = "border-collapse:collapse;margin:6px 0 12px;text-align:left"
# severity | finding (code, title, evidence, engine source) | fix
_FINDING_COLUMNS = (("severity", "width:8.5em"), ("finding", ""), ("fix", "width:34%"))

COMPONENT_CSS = f"""
.{SCOPE} table{{font-size:13px}}
.{SCOPE} th,.{SCOPE} td{{border:1px solid var(--jp-border-color2,#dde1e8);padding:4px 8px}}
.{SCOPE} th{{background:var(--jp-layout-color2,#eef0f4)}}
.{SCOPE} td ul{{margin:4px 0;padding-left:18px}}
.{SCOPE} td.sev{{font-weight:600}}
.{SCOPE} tr.sev-critical td.sev{{color:#fff;background:#c62828}}
.{SCOPE} tr.sev-error td.sev{{color:#c62828}}
.{SCOPE} tr.sev-warning td.sev{{color:#a86400}}
.{SCOPE} tr.sev-info td.sev{{color:#1565c0}}
.{SCOPE} .cite,.{SCOPE} .meta{{color:var(--jp-ui-font-color2,#5b6575);font-size:90%}}
.{SCOPE} .fix{{background:#e8f5e9;border-left:4px solid #2e7d32;padding:6px 12px;margin:8px 0}}
.{SCOPE} .missing{{background:#fff3e0;border-left:4px solid #ef6c00;padding:8px 12px}}
.{SCOPE} .failed{{background:#ffebee;border-left:4px solid #c62828;padding:8px 12px}}
.{SCOPE} .cause h3{{color:#b71c1c;margin-top:8px}}
.{SCOPE} .ok{{color:#2e7d32;font-weight:600}}
.{SCOPE} .bad{{color:#c62828;font-weight:600}}
.{SCOPE} .skip{{color:#a86400;font-weight:600}}
"""

PAGE_CSS = f"""
body{{font:15px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d2330;
background:#f6f7f9}}
main{{max-width:1200px;margin:0 auto;padding:24px 32px 64px;overflow-wrap:anywhere}}
h1{{font-size:26px;margin:8px 0 4px}}
h2{{border-bottom:2px solid #d5d9e0;padding-bottom:4px;margin-top:40px}}
h3{{margin:24px 0 8px}}
code{{background:#eef0f4;padding:0 4px;border-radius:3px;overflow-wrap:anywhere}}
section.card{{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:12px 20px;
margin:16px 0}}
.verdict{{border-left:6px solid #c62828}}
{COMPONENT_CSS}
@media (max-width:{NARROW_PX}px){{
main{{padding:12px 8px 40px}}
section.card{{padding:8px 12px}}
h1{{font-size:21px}}
.{SCOPE} table,.{SCOPE} tbody,.{SCOPE} tr,.{SCOPE} td{{display:block;width:auto!important}}
.{SCOPE} thead{{display:none}}
.{SCOPE} tr{{border:1px solid #dde1e8;border-radius:6px;margin:10px 0;background:#fff}}
.{SCOPE} td{{border:0;border-top:1px solid #eef0f4}}
.{SCOPE} td:first-child{{border-top:0}}
.{SCOPE} td[data-label]::before{{content:attr(data-label);display:block;font-size:11px;
font-weight:400;text-transform:uppercase;letter-spacing:.04em;opacity:.75}}
.{SCOPE} table.rows td{{position:relative;padding-left:38%;min-height:1.2em}}
.{SCOPE} table.rows td::before{{position:absolute;left:8px;width:calc(38% - 16px);
text-transform:none;letter-spacing:0;font-size:12px}}
}}
"""

# A figure drawn for a wide screen leaves a phone a sliver of plot beside its legend and axis
# labels: below NARROW_PX the legend goes under the plot, margins shrink, the category labels of
# horizontal bars wrap onto several lines, and the figure grows to make room for both; back above
# it, each figure gets its own layout again.
NARROW_FIGURES_JS = f"""
(function(){{
  var narrow = window.matchMedia("(max-width:{NARROW_PX}px)"), saved = new Map();
  function wrap(label){{
    var lines = [""];
    String(label).split(" ").forEach(function(word){{
      var last = lines.length - 1;
      if (lines[last] && (lines[last] + " " + word).length > 18) lines.push(word);
      else lines[last] = lines[last] ? lines[last] + " " + word : word;
    }});
    return lines.join("<br>");
  }}
  function categories(div){{
    var seen = [];
    (div.data || []).forEach(function(t){{
      if (t.type === "bar" && t.orientation === "h") (t.y || []).forEach(function(y){{
        if (typeof y === "string" && seen.indexOf(y) < 0) seen.push(y);
      }});
    }});
    return seen;
  }}
  function fit(){{
    document.querySelectorAll(".plotly-graph-div").forEach(function(div){{
      if (!div.layout) return;
      var y = div.layout.yaxis || {{}};
      if (!saved.has(div)) saved.set(div, JSON.parse(JSON.stringify({{
        legend: div.layout.legend || {{}}, margin: div.layout.margin || {{}},
        height: div.layout.height || 450, "yaxis.tickmode": y.tickmode || null,
        "yaxis.tickvals": y.tickvals || null, "yaxis.ticktext": y.ticktext || null}})));
      var own = saved.get(div), cats = categories(div), rows = (div.data || []).filter(
        function(t){{ return t.showlegend !== false && t.name; }}).length;
      div.parentElement.style.height = "auto";  // plotly fixed it at the first height
      Plotly.relayout(div, narrow.matches ? {{
        legend: {{orientation: "h", x: 0, xanchor: "left", y: -0.15, yanchor: "top"}},
        margin: {{l: 40, r: 8, t: 48, b: 40}}, height: own.height + 22 * rows + 16 * cats.length,
        "yaxis.automargin": true, "xaxis.automargin": true,
        "yaxis.tickmode": cats.length ? "array" : own["yaxis.tickmode"],
        "yaxis.tickvals": cats.length ? cats : own["yaxis.tickvals"],
        "yaxis.ticktext": cats.length ? cats.map(wrap) : own["yaxis.ticktext"]
      }} : own).then(function(){{ Plotly.Plots.resize(div); }});  // to the width it has now
    }});
  }}
  window.addEventListener("load", fit);
  narrow.addEventListener("change", fit);
}})();
"""


def escape(value: Any) -> str:
    """Any value as text made safe for HTML."""
    return _html.escape(str(value))


_BACKTICKS = re.compile(r"`([^`]+)`")


def prose(text: str) -> str:
    """A finding's text made safe for HTML, its `backticked` commands and names as code."""
    return _BACKTICKS.sub(r"<code>\1</code>", escape(text))


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | dict):
        return escape(json.dumps(value))
    return escape("" if value is None else value)


def _th(label: str, style: str = "") -> str:
    # a header wraps between words only: "accept len", never "accep t len" beside a long cell
    return f'<th style="{_HEAD};{style}">{escape(label)}</th>'


def _td(label: str, content: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<td{klass} data-label="{escape(label)}" style="{_CELL}">{content}</td>'


def table_html(rows: Sequence[Mapping[str, Any]], max_rows: int = MAX_ROWS) -> str:
    """Row dicts as a table (columns in first-seen order), with a line saying how many rows were
    left out."""
    if not rows:
        return "<p>(empty)</p>"
    columns = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(_th(c) for c in columns)
    body = "".join(
        "<tr>" + "".join(_td(c, _value(row.get(c))) for c in columns) + "</tr>"
        for row in rows[:max_rows]
    )
    more = f"<p class=meta>… {len(rows) - max_rows} more rows</p>" if len(rows) > max_rows else ""
    return (
        f'<table class="rows" style="{_TABLE}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>{more}"
    )


def severity_label(f: Finding) -> str:
    """`✖ critical`: the marker carries the severity where colours do not reach."""
    return f"{MARKS[f.severity]} {f.severity.name.lower()}"


def cite(f: Finding) -> str:
    """The engine release and source line a finding holds for, `·`-separated."""
    return " · ".join(escape(x) for x in (f.engine, f.source) if x)


def findings_html(findings: Sequence[Finding]) -> str:
    """Findings ranked, root causes first, each with its evidence, engine source and fix."""
    if not findings:
        return '<p class="no-findings">No findings.</p>'
    rows = []
    for f in ranked(findings):
        evidence = "".join(f"<li>{prose(x)}</li>" for x in f.evidence)
        source = f"<div class=cite>{cite(f)}</div>" if f.engine or f.source else ""
        root = "<br><b>root cause</b>" if f.root_cause else ""
        title = f"<code>{escape(f.code)}</code> <b>{prose(f.title)}</b>"
        finding = f"{title}<ul>{evidence}</ul>{source}"
        rows.append(
            f'<tr class="sev-{f.severity.name.lower()}">'
            + _td("severity", f"{escape(severity_label(f))}{root}", "sev")
            + _td("finding", finding)
            + _td("fix", prose(f.fix), "fix" if f.fix else "")
            + "</tr>"
        )
    head = "".join(_th(label, style) for label, style in _FINDING_COLUMNS)
    return (
        f'<table class="findings" style="{_TABLE};width:100%;table-layout:fixed">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def cause_html(f: Finding, max_evidence: int = MAX_EVIDENCE) -> str:
    """A root cause in full: title and code, severity and source, evidence, and the fix."""
    evidence = "".join(f"<li>{prose(x)}</li>" for x in f.evidence[:max_evidence])
    if len(f.evidence) > max_evidence:
        evidence += f"<li>… {len(f.evidence) - max_evidence} more in the step's findings</li>"
    meta = " · ".join(x for x in (escape(severity_label(f)), cite(f)) if x)
    fix = f"<div class=fix><b>Fix:</b> {prose(f.fix)}</div>" if f.fix else ""
    return (
        f'<div class="cause"><h3>{prose(f.title)} <code>{escape(f.code)}</code></h3>'
        f"<p class=meta>{meta}</p><ul>{evidence}</ul>{fix}</div>"
    )


def figure_html(figure: Mapping[str, Any]) -> str:
    """A recorded plotly figure as a div that draws with the page's plotly.js (`plotly_js()`)."""
    import plotly.io as pio

    div = pio.to_html(
        dict(figure),
        include_plotlyjs=False,
        full_html=False,
        config={"displaylogo": False, "responsive": True},
    )
    return f"<div class=fig>{div}</div>"


def plotly_js() -> str:
    """plotly.js itself, for a page that must draw its figures offline (about 4.8 MB)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def fragment(content: str) -> str:
    """Any of the above, styled wherever it is placed (a notebook output, a page's body)."""
    return f'<style>{COMPONENT_CSS}</style><div class="{SCOPE}">{content}</div>'


def page(title: str, body: str, *, figures: bool = True) -> str:
    """A whole self-contained page: viewport for phones, the CSS, plotly.js once when `figures`."""
    script = (
        f"<script>{plotly_js()}</script><script>{NARROW_FIGURES_JS}</script>" if figures else ""
    )
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{PAGE_CSS}</style>{script}</head>"
        f'<body><main class="{SCOPE}">{body}</main></body></html>'
    )
