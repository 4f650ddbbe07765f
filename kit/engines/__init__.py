"""Engine releases and version-ranged rules: engine behaviour is data, not `if`s.

`parse_engine("sglang==0.5.10")` gives an `EngineRelease`; a rule table is a list of rows, each
valid for a `VersionRange` and citing the engine file and line it reproduces, and `pick(rows,
release)` returns the row in force. Supporting a new release is adding a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from packaging.version import InvalidVersion, Version

from kit.errors import KitError

# Releases read in the engines' wheels (shared/reference/{sglang,vllm}-eagle3.md).
RELEASES: dict[str, tuple[str, ...]] = {
    "sglang": (
        "0.4.4.post2", "0.4.4.post3", "0.4.4.post4", "0.4.5", "0.4.6.post1", "0.4.7", "0.4.8",
        "0.4.9", "0.4.9.post6", "0.4.10", "0.5.1", "0.5.2", "0.5.3", "0.5.3.post1",
        "0.5.3.post2", "0.5.3.post3", "0.5.4", "0.5.5", "0.5.6", "0.5.7", "0.5.8", "0.5.9",
        "0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14", "0.5.15", "0.5.16", "0.5.17",
        "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23",
    ),
    "vllm": (
        "0.9.2", "0.10.0", "0.10.1.1", "0.10.2", "0.11.0", "0.11.2", "0.12.0", "0.14.0",
        "0.18.0", "0.24.0", "0.28.0", "0.33.0",
    ),
}  # fmt: skip


@dataclass(frozen=True, order=True)
class EngineRelease:
    """One engine at one version, e.g. `sglang==0.5.10`."""

    name: str
    version: Version

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"

    def at_least(self, v: str) -> bool:
        return self.version >= Version(v)

    def below(self, v: str) -> bool:
        return self.version < Version(v)


def supported_range(name: str) -> tuple[str, str]:
    rel = RELEASES[name]
    return rel[0], rel[-1]


def parse_engine(text: str) -> EngineRelease:
    """Parse `sglang==0.5.10` / `vllm==0.11.0`; a clear error names the supported range."""
    name, sep, ver = text.strip().partition("==")
    name = name.strip().lower()
    if name not in RELEASES:
        raise KitError(f"unknown engine {name!r} in {text!r}; use sglang==X or vllm==X")
    if not sep or not ver.strip():
        lo, hi = supported_range(name)
        raise KitError(f"{text!r} has no version; use {name}==X with X in {lo} … {hi}")
    try:
        version = Version(ver.strip())
    except InvalidVersion:
        raise KitError(f"{ver.strip()!r} is not a version number") from None
    lo, hi = supported_range(name)
    if not Version(lo) <= version <= Version(hi):
        raise KitError(f"{name} {version} is outside the supported range {lo} … {hi}")
    return EngineRelease(name, version)


def all_releases(name: str) -> list[EngineRelease]:
    """Every release the kit models for one engine, oldest first (for version matrices)."""
    if name not in RELEASES:
        raise KitError(f"unknown engine {name!r}; use sglang or vllm")
    return [EngineRelease(name, Version(v)) for v in RELEASES[name]]


@dataclass(frozen=True)
class VersionRange:
    """Inclusive `first`, exclusive `until` (None: open-ended)."""

    first: str
    until: str | None = None

    def __contains__(self, release: EngineRelease) -> bool:
        v = release.version
        return v >= Version(self.first) and (self.until is None or v < Version(self.until))

    def __str__(self) -> str:
        return f">={self.first}" + (f",<{self.until}" if self.until else "")


T = TypeVar("T")


@dataclass(frozen=True)
class Row(Generic[T]):
    """One rule: a value in force for a version range, and the engine source it reproduces."""

    versions: VersionRange
    value: T
    source: str


def pick(rows: Sequence[Row[T]], release: EngineRelease) -> Row[T]:
    """The row whose range holds `release` (tables are written to cover their whole range)."""
    for row in rows:
        if release in row.versions:
            return row
    raise KitError(f"no rule covers {release}")  # a gap in a table is a bug in the table
