"""docs/causes.md and the code in step: every finding code a check can emit has a row, every row's
code is one a check emits. The codes are read from the source: each `Finding(code=…)` and
`KnownIssue(code=…)` call, its code a string or a module constant (the module's own, or one it
imports from another kit module); a call that passes a finding's code on (a reconciled or
re-ranked finding) is allowed only where listed here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "causes.md"
# Calls that re-issue a finding made elsewhere, with its code unchanged.
PASSED_ON = {
    ("kit/deployment/serving.py", "issue.code"),  # a KnownIssue row as a finding
    ("kit/load/findings.py", "f.code"),  # a load finding reconciled with the logs
    ("kit/findings.py", "d['code']"),  # Finding.from_dict
}


def emitted() -> tuple[set[str], list[str]]:
    """(codes, calls whose code could not be read as a constant and are not passed on)."""
    trees = {
        p.relative_to(ROOT).as_posix(): ast.parse(p.read_text())
        for p in (ROOT / "kit").rglob("*.py")
    }
    own = {rel: constants(tree) for rel, tree in trees.items()}
    codes, unread = set(), []
    for rel, tree in sorted(trees.items()):
        consts = {**imported(tree, own), **own[rel]}
        for node in ast.walk(tree):
            name = getattr(getattr(node, "func", None), "id", None)
            if not isinstance(node, ast.Call) or name not in ("Finding", "KnownIssue"):
                continue
            value = next((k.value for k in node.keywords if k.arg == "code"), None)
            if isinstance(value, ast.Constant):
                codes.add(value.value)
            elif isinstance(value, ast.Name) and value.id in consts:
                codes.add(consts[value.id])
            elif value is not None and (rel, ast.unparse(value)) not in PASSED_ON:
                unread.append(f"{rel}:{node.lineno} code={ast.unparse(value)}")
    return codes, unread


def constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level `NAME = "literal"` assignments."""
    return {
        n.targets[0].id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)
    }  # fmt: skip


def imported(tree: ast.Module, own: dict[str, dict[str, str]]) -> dict[str, str]:
    """The constants a module takes by name from another kit module (`from kit.x import NAME`)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kit."):
            source = own.get(node.module.replace(".", "/") + ".py", {})
            found |= {a.asname or a.name: source[a.name] for a in node.names if a.name in source}
    return found


def tabled() -> list[str]:
    """The code of each table row (its last cell), in page order."""
    rows = [line for line in TABLE.read_text().splitlines() if line.startswith("| ")]
    cells = [row.rstrip(" |").rsplit("|", 1)[-1].strip() for row in rows]
    return [m[1] for c in cells if (m := re.fullmatch(r"`([A-Z][A-Z0-9_]+)`", c))]


def test_every_emitted_code_has_a_row_and_every_row_is_emitted():
    codes, unread = emitted()
    assert not unread, f"finding codes the table test cannot read: {unread}"
    rows = tabled()
    assert len(codes) > 90  # the scan found the checks
    assert sorted(codes - set(rows)) == [], "codes a check emits with no row in docs/causes.md"
    assert sorted(set(rows) - codes) == [], "rows in docs/causes.md no check emits"


def test_each_code_has_one_row():
    rows = tabled()
    assert sorted(c for c in set(rows) if rows.count(c) > 1) == []


def test_every_row_names_a_source():
    for line in TABLE.read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| cause") and "---" not in line:
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert len(cells) == 3 and all(cells), line
