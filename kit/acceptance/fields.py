"""Reading figures by their field names, whatever the line's shape.

Engines print `key: value`, `key = value` or JSON `"key": value` pairs, and users paste them
trimmed, reordered or inside other text. `pairs(line)` returns every pair under a normalised key
(lower case, words split on `_`, camelCase and spaces: `numDraftTokens`, `num_draft_tokens` and
`Number of draft tokens` differ only where the engines differ), so a reader asks for the fields it
knows instead of matching one line shape. `holds_acceptance_figure` is the test that keeps a line
with an acceptance figure from being skipped silently when no reader understands it.
"""

from __future__ import annotations

import math
import re

_PAIR = re.compile(
    r'"?(?P<key>[A-Za-z#][^,:={}\[\]"\n]*?)"?\s*[:=]\s*'
    r"(?P<val>\[[^\]]*\]|\((?:[^()]|\([^)]*\))*\)"
    r"|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*%?|nan|NaN)"
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SEP = re.compile(r"[\s_-]+")
_NUMBER_LIST = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+|nan)(?:,\s*[-+]?(?:\d+\.?\d*|\.\d+|nan))*")
_TRIGGER = re.compile(r"accept|#acc |acc per pos", re.IGNORECASE)
# the trigger, then a figure in the same clause: "acceptance ratio is 0.42", "Accepted: 12"
_FIGURE = re.compile(r"(?:accept|#acc |acc per pos)[^.;!?\n]*?(?:\d|\bnan\b)", re.IGNORECASE)


def key(text: str) -> str:
    """`numDraftTokens` / `num_draft_tokens` / `#Num draft tokens` → `num draft tokens`."""
    return _SEP.sub(" ", _CAMEL.sub(" ", text).strip(' #"')).lower()


def pairs(line: str, lists: tuple[str, ...] = ()) -> dict[str, Value]:
    """Every `key: value` pair of the line, first occurrence of a key wins.

    A key in `lists` takes the whole comma-separated run of numbers after it
    (`Per-position acceptance rate: 0.743, 0.502`), not only the first number.
    """
    out: dict[str, Value] = {}
    for m in _PAIR.finditer(line):
        k = key(m["key"])
        if k in out:
            continue
        value = m["val"]
        if k in lists and value[:1] not in "[(":
            run = _NUMBER_LIST.match(line, m.start("val"))
            value = run.group(0) if run else value
        out[k] = value.strip()
    return out


Value = str | int | float | list | tuple | None  # printed text, or a decoded JSON value


def flatten(d: dict) -> dict[str, Value]:
    """A decoded JSON object's pairs under normalised keys, nested objects included (first wins)."""
    out: dict[str, Value] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            for kk, vv in flatten(v).items():
                out.setdefault(kk, vv)
        else:
            out.setdefault(key(str(k)), v)
    return out


def number(raw: Value) -> float | None:
    """A printed figure: `51.2%` is 0.512, `nan` is None."""
    if raw is None or isinstance(raw, bool | list | tuple):
        return None
    if isinstance(raw, int | float):
        return None if math.isnan(raw) else float(raw)
    text = raw.strip()
    percent = text.endswith("%")
    try:
        value = float(text.rstrip("%").strip())
    except ValueError:
        return None
    if math.isnan(value):
        return None
    return value / 100 if percent else value


def count(raw: Value) -> int | None:
    """A whole number of tokens or steps; None when the text is not one."""
    value = number(raw)
    return int(value) if value is not None and value == int(value) and value >= 0 else None


def numbers(raw: Value) -> tuple[float, ...] | None:
    """`(0.727, 0.513)`, `[3, 1, 0]` or `0.743, 0.502` as numbers; None when any is not one."""
    if raw is None or isinstance(raw, bool | int | float):
        return None
    parts = list(raw) if isinstance(raw, list | tuple) else raw.strip().strip("[]()").split(",")
    parts = [p for p in parts if not isinstance(p, str) or p.strip()]
    values = [number(p) for p in parts]
    if not values or any(v is None for v in values):
        return None
    return tuple(values)  # type: ignore[arg-type]


def mentions_acceptance(line: str) -> bool:
    """Whether the line names an acceptance figure (any engine's spelling)."""
    return _TRIGGER.search(line) is not None


def holds_acceptance_figure(line: str) -> bool:
    """Whether the line names acceptance with a figure after it: what a reader that does not
    understand it has to report. A warning that speaks of "acceptance rates." holds none."""
    return _FIGURE.search(line) is not None
