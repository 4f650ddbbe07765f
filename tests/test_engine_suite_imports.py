"""The real-engine suite runs for minutes and only where the engines are installed, and most of
its imports of the kit sit inside test bodies, where collecting it does not reach them. Every
name it takes from the kit must still be there after a change: checked here, in the fast suite,
without any engine (a rename once failed thirteen of its tests and nothing else)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parents[1] / "tests_engine"


def kit_imports() -> list[tuple[str, str, str]]:
    """(file:line, module, name) for every `from kit… import name` in the suite, at any depth."""
    found = []
    for path in sorted(SUITE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "kit":
                where = f"{path.name}:{node.lineno}"
                found += [(where, node.module, alias.name) for alias in node.names]
    return found


IMPORTS = kit_imports()


def test_the_suite_takes_names_from_the_kit():
    assert len(IMPORTS) > 20  # the walk reaches the imports inside test bodies


@pytest.mark.parametrize(("where", "module", "name"), IMPORTS, ids=[i[0] for i in IMPORTS])
def test_every_name_the_engine_suite_imports_exists(where, module, name):
    loaded = importlib.import_module(module)
    assert hasattr(loaded, name) or importlib.util.find_spec(f"{module}.{name}"), (
        f"{where}: {module} has no {name}"
    )
