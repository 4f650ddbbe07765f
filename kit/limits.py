"""The bounds every reader keeps on any input, and the JSON reader that keeps them.

A hostile or corrupt input must end in one `KitError` naming the file and the bound it broke,
never in a `RecursionError` deep in a walker, an allocation by a declared size, or a figure of
infinity that a later `int()` cannot take. The numbers are in docs/limits.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from kit.errors import KitError

# JSON nesting: real configs nest 4 levels (a VLM's text_config.rope_parameters), server info 5.
MAX_JSON_DEPTH = 64
# A config, an index or a server-info answer of more than this is not one.
MAX_JSON_BYTES = 64 << 20
# A config's sizes: any dimension below 2^31 (torch's index limit on most kernels), at most 1024
# layers (the largest released models have under 200), so no config builds an endless model.
MAX_DIM = 2**31 - 1
MAX_LAYERS = 1024


def loads(
    text: str | bytes, source: str | Path | None, what: str = "", unique_keys: bool = False
) -> Any:
    """`json.loads` that refuses NaN and infinities (no engine writes them in a config) and
    nesting beyond `MAX_JSON_DEPTH`, each as a `KitError` naming `source`. `unique_keys`: a key
    twice in one object is refused too (safetensors refuses such a header on load, where json
    would keep the later entry and the kit would describe a file no engine opens)."""
    if len(text) > MAX_JSON_BYTES:
        raise KitError(
            f"{what or 'JSON'} of {len(text)} bytes exceeds the limit of {MAX_JSON_BYTES}", source
        )
    try:
        hook = _unique if unique_keys else None
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=hook)
    except RecursionError:
        raise _too_deep(source, what) from None
    except ValueError as e:  # undecodable bytes, bad syntax, NaN / Infinity (refused above)
        raise KitError(f"{_is(what)}not valid JSON ({e})", source) from None
    if depth(value) > MAX_JSON_DEPTH:
        raise _too_deep(source, what)
    return value


def read_json_file(path: Path, what: str = "") -> Any:
    """A JSON file read whole after a size check (its head is not enough to parse it)."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise KitError(
                f"{what or 'JSON'} of {size} bytes exceeds the limit of {MAX_JSON_BYTES}", path
            )
        raw = path.read_bytes()
    except FileNotFoundError:
        raise KitError("no such file", path) from None
    except IsADirectoryError:
        raise KitError(f"a folder where a {what or 'JSON'} file was expected", path) from None
    except OSError as e:
        raise KitError(f"cannot read: {e.strerror}", path) from None
    return loads(raw, path, what)


def depth(value: Any) -> int:
    """How deep lists and objects nest in `value` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if not isinstance(node, dict | list):
            continue
        deepest = max(deepest, level)
        if level > MAX_JSON_DEPTH:
            return level
        stack.extend((child, level + 1) for child in children)
    return deepest


def finite(value: float) -> float | None:
    """The figure when it is finite; None for NaN and infinities (a number too large for a
    float, printed in a log, reads as infinity)."""
    return value if math.isfinite(value) else None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {twice!r} appears twice in one object")
    return out


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _too_deep(source: str | Path | None, what: str) -> KitError:
    return KitError(
        f"{what or 'JSON'} nests deeper than the limit of {MAX_JSON_DEPTH} levels", source
    )


def try_loads(text: str | bytes) -> Any:
    """The JSON value of a log line or a server's answer, or `NOT_JSON` when it is none or
    breaks a bound (a reader of logs counts such a line unread and goes on)."""
    if len(text) > MAX_JSON_BYTES:
        return NOT_JSON
    try:
        value = json.loads(text)
    except (RecursionError, ValueError):
        return NOT_JSON
    return NOT_JSON if depth(value) > MAX_JSON_DEPTH else value


NOT_JSON = object()


def try_loads_file(path: Path) -> Any:
    """`try_loads` of a file's text; None when it cannot be read or is no JSON within bounds."""
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            return None
        value = try_loads(path.read_bytes())
    except OSError:
        return None
    return None if value is NOT_JSON else value


def _is(what: str) -> str:
    return f"{what} is " if what else ""
