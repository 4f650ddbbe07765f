"""The types every engine's rules are written in: a release, a version range, a cited row.

Kept apart from `kit.engines` (the registry of engines) so that an engine package can import them
while the registry imports the engine packages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from packaging.version import Version

from kit.errors import KitError


@dataclass(frozen=True, order=True)
class EngineRelease:
    """One engine at one version, e.g. `sglang==0.5.10`."""

    name: str
    version: Version
    # the latest release the kit read before `version`, when `version` itself was not read
    assumed_from: Version | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"

    def at_least(self, v: str) -> bool:
        return self.version >= Version(v)

    def below(self, v: str) -> bool:
        return self.version < Version(v)


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
