"""Validate a `--json` output against its schema in docs/schemas/ (JSON Schema 2020-12).

Used by tests/test_schemas.py and, as a script, by check_core.sh on what the core install
printed: `python tests/package/schemas.py OUT.json …` exits 1 naming the first violation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def schema_for(report: str) -> dict:
    return json.loads((SCHEMAS / f"{report}.schema.json").read_text())


def problems(out: dict) -> list[str]:
    """Every violation of the output's own schema (chosen by its `report` field)."""
    schema = schema_for(out["report"])
    Draft202012Validator.check_schema(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}"
        for e in Draft202012Validator(schema).iter_errors(out)
    ]


if __name__ == "__main__":
    bad = 0
    for name in sys.argv[1:]:
        found = problems(json.loads(Path(name).read_text()))
        for p in found:
            print(f"{name}: {p}", file=sys.stderr)
        bad += bool(found)
    sys.exit(1 if bad else 0)
