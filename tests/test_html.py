"""The one HTML renderer: findings and tables that fit their width, markers that survive an
untrusted notebook, a page readable on a phone, and no import cycle behind any of it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit.findings import Finding, Severity
from kit.report import html

KIT = Path(__file__).resolve().parent.parent / "kit"

DROPPED = Finding(
    code="KEYS_SILENTLY_DROPPED",
    severity=Severity.CRITICAL,
    title="10 decoder-layer keys dropped silently",
    evidence=("layers.0.self_attn.q_proj.weight: no parameter <script>",),
    fix="python -m kit fix path/to/draft --for sglang==0.5.10",
    engine="sglang==0.5.10",
    source="llama_eagle3.py:243",
    root_cause=True,
)
NOTE = Finding(code="EMBED_REPLACED", severity=Severity.INFO, title="embed is the target's")


def test_findings_rank_root_causes_first_and_escape_everything():
    out = html.findings_html([NOTE, DROPPED])
    assert out.index("KEYS_SILENTLY_DROPPED") < out.index("EMBED_REPLACED")
    assert "&lt;script&gt;" in out and "<script>" not in out
    assert "llama_eagle3.py:243" in out and "<b>root cause</b>" in out


@pytest.mark.parametrize("severity", list(Severity), ids=lambda s: s.name.lower())
def test_severity_reads_without_colour(severity):
    """An executed notebook opened later is untrusted: Lab strips the colours, the marker stays."""
    finding = Finding(code="X", severity=severity, title="t")
    cell = re.search(r'<td class="sev"[^>]*>([^<]*)', html.findings_html([finding])).group(1)
    assert cell == f"{html.MARKS[severity]} {severity.name.lower()}"
    assert len(set(html.MARKS.values())) == len(Severity)


def test_findings_fit_their_width_with_the_fix_column_kept():
    """Fixed layout at 100 % with the fix column's share set, long evidence wrapping anywhere:
    nothing pushes the fix out of view, and each cell says which column it is on a phone."""
    out = html.findings_html([DROPPED])
    table = re.search(r'<table class="findings" style="([^"]*)"', out).group(1)
    assert "width:100%" in table and "table-layout:fixed" in table
    heads = re.findall(r'<th style="([^"]*)">(\w+)</th>', out)
    assert [label for _, label in heads] == ["severity", "finding", "fix"]
    assert "width:34%" in heads[2][0]
    cells = re.findall(r'<td[^>]*data-label="(\w+)" style="([^"]*)"', out)
    assert [label for label, _ in cells] == ["severity", "finding", "fix"]
    for _, style in cells:
        assert "overflow-wrap:anywhere" in style and "text-align:left" in style
    assert "python -m kit fix path/to/draft" in out.split('data-label="fix"')[1]


def test_no_findings_is_said():
    assert "No findings." in html.findings_html([])


def test_tables_keep_column_order_and_say_how_many_rows_were_left_out():
    rows = [{"key": f"k{i}", "bytes": i, "shape": [i, 2]} for i in range(75)]
    out = html.table_html(rows, max_rows=60)
    assert re.findall(r"<th[^>]*>(\w+)</th>", out) == ["key", "bytes", "shape"]
    assert out.count("<tr>") == 61 and "15 more rows" in out
    assert "[3, 2]" in out  # a list cell as JSON
    assert html.table_html([]) == "<p>(empty)</p>"


def test_a_page_is_readable_on_a_phone_and_draws_offline():
    page = html.page("t", html.findings_html([DROPPED]) + html.figure_html({"data": []}))
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    narrow = page[page.index(f"@media (max-width:{html.NARROW_PX}px)") :]
    assert "thead{display:none}" in narrow  # rows become cards
    assert "content:attr(data-label)" in narrow  # each value under its column's name
    assert page.count("<script>/**") == 1  # plotly.js once, before the figure that needs it
    assert page.index("<script>/**") < page.index("plotly-graph-div")
    assert not re.search(r"<script[^>]+src=", page)  # nothing fetched
    assert "window.matchMedia" in page  # figures relaid out below the breakpoint


def _kit_modules() -> dict[str, Path]:
    modules = {}
    for path in KIT.rglob("*.py"):
        parts = list(path.relative_to(KIT.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(node: ast.AST, modules: dict[str, Path]) -> set[str]:
    """The kit modules a module imports, at any depth (a function's lazy import included),
    except under `if TYPE_CHECKING:`, which never runs."""
    if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
        return set().union(*(_imports(n, modules) for n in node.orelse))
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in modules}
    if isinstance(node, ast.ImportFrom) and node.module in modules:
        # `from kit.pkg import sub`: the submodule, else the package itself
        return {
            f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
            for a in node.names
        }
    return set().union(*(_imports(n, modules) for n in ast.iter_child_nodes(node)))


def test_the_kit_has_no_import_cycle():
    """A cycle (the postmortem importing the runner that imports the postmortem) makes every
    importer pay for both, and breaks as soon as one of them imports the other at the top."""
    modules = _kit_modules()
    graph = {m: _imports(ast.parse(p.read_text()), modules) - {m} for m, p in modules.items()}
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            module = todo.pop()
            assert module != start, f"import cycle through {start}"
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])


def test_a_notebook_table_pulls_in_neither_the_runner_nor_the_page():
    code = (
        "import sys\n"
        "from kit.report.plots.tables import findings_table, table\n"
        "table([{'a': 1}]); findings_table([])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('kit.', 'papermill'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)
    assert "kit.report.html" in loaded
    assert not {
        "kit.report.runbook",
        "kit.report.postmortem",
        "kit.report.runs",
        "papermill",
    } & set(loaded), loaded


def test_the_import_graph_sees_the_imports():
    """The cycle check reads what it should: the runner imports the page, the page the runs."""
    modules = _kit_modules()
    runbook = _imports(ast.parse(modules["kit.report.runbook"].read_text()), modules)
    page = _imports(ast.parse(modules["kit.report.postmortem"].read_text()), modules)
    assert (
        "kit.report.postmortem" in runbook
        and "kit.report.runs" in page
        and "kit.report.runbook" not in page
    )


def test_backticked_names_in_findings_render_as_code_and_stay_escaped():
    f = Finding(
        code="X",
        severity=Severity.WARNING,
        title="run `python -m kit trace` <now>",
        evidence=("`a<b`",),
        fix="see `kit fix`",
    )
    page = html.findings_html([f]) + html.cause_html(f)
    assert "<code>python -m kit trace</code> &lt;now&gt;" in page
    assert "<code>a&lt;b</code>" in page and "<code>kit fix</code>" in page
    assert "`" not in page


def test_a_header_breaks_between_words_only():
    """Beside a column of long text, a header cell squeezed narrow broke mid-word ("accep t len"):
    headers wrap at spaces, data cells may still break a long key anywhere."""
    from kit.report.html import table_html

    page = table_html([{"accept len": 1.0, "key": "model.layers.0.self_attn.q_proj.weight" * 4}])
    heads = re.findall(r"<th [^>]*>", page)
    cells = re.findall(r"<td [^>]*>", page)
    assert heads and all("anywhere" not in h and "keep-all" in h for h in heads)
    assert cells and all("overflow-wrap:anywhere" in c for c in cells)
