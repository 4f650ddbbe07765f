"""The version stamp on every `--json` output, so a program can tell which shape it reads.

Each report has its own `schema_version`, an integer that starts at 1 and is written down in
`docs/schemas/<report>.schema.json` (JSON Schema, draft 2020-12). The rule (docs/schemas/README.md):
adding a field keeps the version; removing or renaming a field, changing its type or meaning, or
making an optional field required bumps it, in the same change as the schema. `kit_version` is
the package's version, for bug reports and for a program that wants more than the shape.
"""

from __future__ import annotations

from typing import Any

# report name -> its schema_version; tests/test_schemas.py holds each against its schema's const.
SCHEMA_VERSIONS: dict[str, int] = {
    "inspect": 1,
    "simulate": 1,
    "matrix": 1,
    "fix": 1,
    "undo": 1,
    "trace": 1,
    "acceptance": 1,
    "probe": 1,
    "offline": 1,
    "deployment": 1,
    "doctor": 1,
    "engine-check": 1,
    "error": 1,
}


def stamped(report: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with the report's name and versions in front (its own keys kept as they were)."""
    from kit.version import __version__

    return {
        "report": report,
        "schema_version": SCHEMA_VERSIONS[report],
        "kit_version": __version__,
        **body,
    }
