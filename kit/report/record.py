"""Record a notebook's results inside the executed notebook, and read them back from a program.

`record(name, value)` publishes a `display_data` output under a MIME type of our own. JupyterLab and
nbconvert render nothing for it, so it never clutters the page, yet the values travel inside the
executed notebook, the one artifact a headless run keeps. `read_records(nb)` reads them back with
nbformat alone. Findings, reports with `to_dict()`, plotly figures, numpy and torch values are turned
into plain JSON on the way in.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import nbformat

MIME = "application/vnd.eagle3-kit.report.record+json"


def to_jsonable(value: Any) -> Any:
    """Plain JSON for anything a notebook records (a figure becomes its plotly JSON)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return value.name.lower()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "to_plotly_json"):  # a plotly figure: its own encoder handles numpy arrays
        return json.loads(value.to_json())
    if hasattr(value, "to_dict"):
        return to_jsonable(value.to_dict())
    if hasattr(value, "tolist"):  # numpy / torch arrays and scalars
        return to_jsonable(value.tolist())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    raise TypeError(f"cannot record a {type(value).__name__}")


def record(name: str, value: Any) -> None:
    """Publish `value` under `name` in the running notebook (invisible on the page)."""
    from IPython.display import display

    # stored as a JSON string: nbformat writes notebooks with sorted keys, which would reorder
    # every recorded dict (table columns, figure fields) on the way through the file
    display({MIME: {"name": name, "json": json.dumps(to_jsonable(value))}}, raw=True)


def read_records(nb: nbformat.NotebookNode | str | Path) -> dict[str, Any]:
    """Every recorded value of an executed notebook by name (a later record wins)."""
    import nbformat  # not at import time: kernels record without it (its import is slow)

    if not isinstance(nb, nbformat.NotebookNode):
        nb = nbformat.read(str(nb), as_version=4)
    records: dict[str, Any] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", ()):
            payload = output.get("data", {}).get(MIME)
            if payload is not None:
                records[payload["name"]] = json.loads(payload["json"])
    return records
