"""The types every engine's rules are written in: a release, a version range, a cited row.

Kept apart from `kit.engines` (the registry of engines) so that an engine package can import them
while the registry imports the engine packages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

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


class EngineRules(Protocol):
    """What every engine package (`kit.engines.<engine>`) provides: the one small interface the
    engine-independent code (`kit.load.replay`, `kit.tracing.capture`, `kit.tracing.draft`, `kit.load.rewrite`) asks.

    Each name is a function of the draft config and the release, backed by version-ranged rows
    in the package's modules (`config`, `params`, `load`, `capture`, `forward`, `acceptance`).
    Optional: `unloaded_failure(ctx, names) -> Refusal | None`, for an engine whose loader fails
    on a parameter no checkpoint tensor fills (without it such a parameter stays at its init);
    `UNWRITTEN`, the source that says such a parameter keeps its `torch.empty` memory silently.
    """

    NAME: str
    RELEASES: tuple[str, ...]  # releases read in the engine's source, oldest first
    CONFIG_FIX: str  # what to do when `refuses_config` says no
    SHAPE_CHECK: str  # where the engine's weight loaders assert shapes
    acceptance: Any  # module: STOP_COUNTING rows (and the engine's log / metrics formats)

    def refuses_config(self, cfg: Any, release: EngineRelease) -> Any: ...  # Refusal | None
    def constructor_failure(self, cfg: Any, release: EngineRelease) -> Any: ...  # Refusal | None
    def rewritten_config(self, cfg: Any, release: EngineRelease) -> tuple[dict, list[str]]: ...
    def num_aux(self, cfg: Any, release: EngineRelease) -> int: ...
    def honours(self, cfg: Any, release: EngineRelease) -> Any: ...  # Honoured
    def engine_params(self, cfg: Any, release: EngineRelease) -> list: ...  # [ParamSpec]
    def resolve_key(self, key: str, ctx: Any) -> Any: ...  # KeyOutcome
    def from_target(self, ctx: Any) -> dict[str, tuple[str, str]]: ...
    def missing_d2t_failure(self, release: EngineRelease) -> Any: ...  # Refusal | None
    def d2t_source(self, release: EngineRelease) -> str: ...
    def capture_aux(self, target: Any, draft: Any, release: EngineRelease, target_class: str,
                    aux_override: bool | None, cuda_graph: bool) -> Any: ...  # Capture  # fmt: skip
    def era(self, release: EngineRelease) -> Row: ...  # Row[Era]
