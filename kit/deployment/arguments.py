"""A server command's arguments read the way the release's argument parser reads them.

Every spelling is looked up in the release's flag table (`kit.engines.<engine>.flags`): a flag
the release does not define, a value that is not of the flag's type or not one of its choices,
a flag that needs a value and has none are problems, never guesses. The parser rules of the
engine (argparse prefixes, vLLM's underscores and dotted JSON keys) come from the same package.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kit.engines.base import EngineRelease
from kit.engines.flagtable import Flag, FlagKind, FlagTable, ParserRules, ValueType
from kit.limits import NOT_JSON, loads, try_loads


class Problem(StrEnum):
    UNKNOWN = "unknown flag"
    AMBIGUOUS = "ambiguous prefix"
    BAD_VALUE = "bad value"
    MISSING_VALUE = "missing value"


@dataclass(frozen=True)
class Issue:
    problem: Problem
    spelled: str
    detail: str
    flag: Flag | None = None


@dataclass(frozen=True)
class Given:
    """One flag as the line gives it."""

    flag: Flag
    spelled: str
    value: Any


@dataclass
class Arguments:
    """The line's flags under one release: values by dest, positionals, problems."""

    release: EngineRelease
    given: dict[str, Given] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)

    def value(self, dest: str, default: Any = None) -> Any:
        return self.given[dest].value if dest in self.given else default


def parse_arguments(
    argv: tuple[str, ...], table: FlagTable, rules: ParserRules, release: EngineRelease
) -> Arguments:
    """Read `argv` as `release` would (see the module docstring)."""
    spellings = _spellings(table.flags_at(release))
    out = Arguments(release)
    dotted: dict[str, tuple[str, dict[str, Any]]] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or _number(word):
            out.positional.append(word)
            continue
        key, has_inline, inline = word.partition("=")
        if rules.underscores and key.startswith("--"):
            head, dot, rest = key.partition(".")
            key = head.replace("_", "-") + dot + rest
        if rules.dotted_json and key.startswith("--") and "." in key:
            if not has_inline and i < len(argv):
                inline, i = argv[i], i + 1
            _dotted(key, inline, dotted)
            continue
        flag, spelled, issue = _resolve(key, spellings, rules, table)
        if issue is not None:
            out.issues.append(issue)
            while i < len(argv) and not argv[i].startswith("-"):
                i += 1  # the unknown flag's values, as far as they can be told apart
            continue
        i = _take(flag, spelled, key, has_inline, inline, argv, i, out, rules)
    for name, (spelled, value) in dotted.items():
        _merge_dotted(name, spelled, value, spellings, out)
    return out


def _spellings(flags: dict[str, Flag]) -> dict[str, Flag]:
    out = dict(flags)
    for flag in flags.values():
        if flag.kind is FlagKind.BOOL_OPTIONAL:
            for n in flag.names:
                if n.startswith("--"):
                    out[f"--no-{n[2:]}"] = flag
    return out


def _resolve(
    key: str, spellings: dict[str, Flag], rules: ParserRules, table: FlagTable
) -> tuple[Flag, str, None] | tuple[None, str, Issue]:
    if key in spellings:
        return spellings[key], key, None
    if rules.abbreviations and key.startswith("--") and len(key) > 2:
        matches = {s: f for s, f in spellings.items() if s.startswith(key)}
        flags = {f.dest for f in matches.values()}
        if len(flags) == 1:
            return next(iter(matches.values())), key, None
        if len(flags) > 1:
            names = ", ".join(sorted(matches)[:6])
            return None, key, Issue(Problem.AMBIGUOUS, key, f"could be {names}")
    return None, key, Issue(Problem.UNKNOWN, key, _unknown_detail(key, spellings, table))


def _unknown_detail(key: str, spellings: dict[str, Flag], table: FlagTable) -> str:
    """Where else the spelling exists, and the closest spellings this release has."""
    detail = []
    other = table.named(key)
    if other:
        first, last = other[0], other[-1]
        detail.append(
            f"a flag of {table.engine} {first.versions.first} … {last.last} only ({first.source})"
        )
    close = difflib.get_close_matches(key, [s for s in spellings if s.startswith("--")], n=3)
    if close:
        detail.append("did you mean " + " or ".join(close) + "?")
    return "; ".join(detail) or "no release read defines it"


def _take(
    flag: Flag,
    spelled: str,
    key: str,
    has_inline: str,
    inline: str,
    argv: tuple[str, ...],
    i: int,
    out: Arguments,
    rules: ParserRules,
) -> int:
    """Consume the flag's value(s) as argparse would; returns the next index."""
    if flag.kind in (FlagKind.SWITCH, FlagKind.BOOL_OPTIONAL):
        value: Any = not key.startswith("--no-") if flag.kind is FlagKind.BOOL_OPTIONAL else True
        out.given[flag.dest] = Given(flag, spelled, value)
        return i
    texts: list[str] = [inline] if has_inline else []
    while i < len(argv) and (not argv[i].startswith("-") or _number(argv[i])):
        if texts and flag.kind is not FlagKind.MULTI:
            break
        texts.append(argv[i])
        i += 1
    if not texts and flag.kind is not FlagKind.OPTIONAL_VALUE:
        out.issues.append(Issue(Problem.MISSING_VALUE, spelled, "expects a value", flag))
        return i
    try:
        values = [_convert(flag, t, rules) for t in texts]
    except ValueError as e:
        out.issues.append(Issue(Problem.BAD_VALUE, spelled, str(e), flag))
        return i
    value = values if flag.kind is FlagKind.MULTI else (values[0] if values else True)
    out.given[flag.dest] = Given(flag, spelled, value)
    return i


def _convert(flag: Flag, text: str, rules: ParserRules) -> Any:
    """The value as the flag's type reads it; ValueError names what is wrong."""
    if flag.choices and text not in flag.choices:
        shown = ", ".join(flag.choices[:12]) + (" …" if len(flag.choices) > 12 else "")
        raise ValueError(f"{text!r} is not one of its choices ({shown})")
    if flag.type is ValueType.INT:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a whole number") from None
    if flag.type is ValueType.HUMAN_INT:
        return rules.human_int(text)
    if flag.type is ValueType.FLOAT:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
    if flag.type is ValueType.JSON:
        return loads(text, None, flag.name)
    return text


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _dotted(key: str, text: str, dotted: dict[str, tuple[str, dict[str, Any]]]) -> None:
    """vLLM's `--json-flag.a.b value`: one key of a JSON flag (`+` appends to a list)."""
    name, *path = key.split(".")
    append = path[-1].endswith("+")
    path[-1] = path[-1].rstrip("+")
    value: Any = try_loads(text)
    if value is NOT_JSON:
        value = text
    if append:
        value = text.split(",")
    _, root = dotted.setdefault(name, (key, {}))
    node = root
    for p in path[:-1]:
        node = node.setdefault(p, {})
    if append and isinstance(node.get(path[-1]), list):
        node[path[-1]] = node[path[-1]] + value
    else:
        node[path[-1]] = value


def _merge_dotted(
    name: str, spelled: str, value: dict[str, Any], spellings: dict[str, Flag], out: Arguments
) -> None:
    flag = spellings.get(name)
    if flag is None or flag.type is not ValueType.JSON:
        out.issues.append(Issue(Problem.UNKNOWN, spelled, f"{name} is not a JSON flag"))
        return
    base = out.value(flag.dest)
    merged = {**base, **value} if isinstance(base, dict) else value
    out.given[flag.dest] = Given(flag, spelled, merged)
