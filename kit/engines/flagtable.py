"""A server's launch flags per release, as read from the engine's own argument definitions.

Each engine package ships its table as data (`kit/engines/<engine>/flags.json`, written by
`data/make_flag_tables.py` from the released wheels) and loads it with `load_table`. A row is one
flag as a run of consecutive releases define it: its spellings, whether it takes a value, the
value's type and choices, the argparse default, and the file:line it was read from.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kit.engines.base import EngineRelease, VersionRange


class FlagKind(StrEnum):
    """How argparse consumes a flag (what a launch-line reader must skip over)."""

    VALUE = "value"  # --flag X
    SWITCH = "switch"  # --flag (store_true, store_const, a custom nargs=0 action)
    BOOL_OPTIONAL = "bool_optional"  # --flag / --no-flag
    MULTI = "multi"  # --flag X [Y ...]
    OPTIONAL_VALUE = "optional_value"  # --flag [X]
    POSITIONAL = "positional"  # vllm serve MODEL


class ValueType(StrEnum):
    INT = "int"
    HUMAN_INT = "human_int"  # 32k, 1M, 128K: the engine's human_readable_int
    FLOAT = "float"
    STR = "str"
    JSON = "json"
    BOOL = "bool"


@dataclass(frozen=True)
class Flag:
    """One flag over a run of releases (first and last release read where it reads so)."""

    names: tuple[str, ...]
    dest: str
    kind: FlagKind
    type: ValueType
    choices: tuple[str, ...] | None
    default: Any
    versions: VersionRange
    last: str
    source: str  # "<first release> <file inside the wheel>:<line>"

    @property
    def name(self) -> str:
        return self.names[0]


@dataclass(frozen=True)
class ParserRules:
    """What an engine's argument parser accepts beyond the exact spellings."""

    abbreviations: bool  # argparse allow_abbrev: an unambiguous prefix of a long flag
    underscores: bool  # `--max_model_len` reads as `--max-model-len`
    dotted_json: bool  # `--speculative-config.method X` sets one key of a JSON flag
    human_int: Callable[[str], int]  # the engine's human_readable_int (32k, 1Ki, 1K …)


@dataclass(frozen=True)
class ReleaseRead:
    """One wheel the table was read from."""

    version: str
    wheel: str
    sha256: str
    transformers: str | None  # the wheel's transformers requirement (Requires-Dist)
    history: bool  # read for flags removed before the modelled range only


@dataclass(frozen=True)
class FlagTable:
    engine: str
    releases: tuple[ReleaseRead, ...]  # oldest first
    rows: tuple[Flag, ...]
    _at: dict[str, dict[str, Flag]] = field(default_factory=dict, compare=False, repr=False)
    _bounds: list[tuple[Version, Version | None]] = field(
        default_factory=list, compare=False, repr=False
    )

    def flags_at(self, release: EngineRelease) -> dict[str, Flag]:
        """Every spelling the release accepts -> its flag (aliases included)."""
        key = str(release.version)
        if key not in self._at:
            v = release.version
            self._at[key] = {
                n: f
                for f, (first, until) in zip(self.rows, self.bounds(), strict=True)
                if first <= v and (until is None or v < until)
                for n in f.names
            }
        return self._at[key]

    def bounds(self) -> list[tuple[Version, Version | None]]:
        """Each row's range as parsed versions, parsed once (36 releases × 1,000 rows)."""
        if not self._bounds:
            self._bounds.extend(
                (Version(f.versions.first), Version(f.versions.until) if f.versions.until else None)
                for f in self.rows
            )
        return self._bounds

    def named(self, spelling: str) -> list[Flag]:
        """The rows of every release that spelled a flag so (oldest first)."""
        return [f for f in self.rows if spelling in f.names]

    def read_in(self, release: EngineRelease) -> ReleaseRead | None:
        return next((r for r in self.releases if Version(r.version) == release.version), None)

    def reads_transformers5(self, release: EngineRelease) -> bool | None:
        """Whether the release's transformers requirement admits only 5.x (True), only 4.x
        (False), or both (None: it depends on what is installed)."""
        read = self.read_in(release)
        if read is None or not read.transformers:
            return None
        spec = SpecifierSet(read.transformers)
        v4 = any(spec.contains(v) for v in _V4)
        v5 = any(spec.contains(v) for v in _V5)
        return None if v4 == v5 else v5


_V4 = ("4.40.0", "4.48.2", "4.51.1", "4.55.2", "4.57.1", "4.99.0")
_V5 = ("5.0.0", "5.3.0", "5.5.3", "5.12.1", "5.19.0", "5.99.0")


def load_table(path: Path) -> FlagTable:
    """Read a committed flags.json (the generator's output) into rows."""
    data = json.loads(path.read_text())
    releases = sorted(
        (
            ReleaseRead(v, r["wheel"], r["sha256"], r.get("transformers"), r["history"])
            for v, r in data["releases"].items()
        ),
        key=lambda r: Version(r.version),
    )
    rows = tuple(
        Flag(
            names=tuple(r["names"]),
            dest=r["dest"],
            kind=FlagKind(r["kind"]),
            type=ValueType(r["type"]),
            choices=tuple(r["choices"]) if r["choices"] else None,
            default=r["default"],
            versions=VersionRange(r["first"], r["until"]),
            last=r["last"],
            source=r["source"],
        )
        for r in data["flags"]
    )
    return FlagTable(data["engine"], tuple(releases), rows)
