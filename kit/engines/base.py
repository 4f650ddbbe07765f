"""The types every engine's rules are written in: a release, a version range, a cited row, and
the `Engine` every engine package registers as.

Kept apart from `kit.engines` (the registry of engines) so that an engine package can import them
while the registry imports the engine packages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import import_module
from types import ModuleType
from typing import Any, Generic, TypeVar

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


class DraftProposal(StrEnum):
    """What a release's verification at a temperature is given for each drafted token d.

    SAMPLED: the draft draws d from its distribution q and the target accepts it with probability
    min(1, p(d)/q(d)) (speculative sampling as Leviathan et al. 2023 write it). ARGMAX: the draft
    proposes its most likely token and the target accepts it with probability p(d), q taken as
    one-hot (vLLM's rejection sampler given no draft probabilities; SGLang's target-only kernel at
    its default accept thresholds). Both emit text distributed as the target's own sampling; ARGMAX accepts a token only
    when the target's sample is the draft's argmax, so it accepts less whenever p is spread.
    """

    SAMPLED = "sampled"
    ARGMAX = "argmax"


@dataclass(frozen=True)
class Engine:
    """One engine as the engine-independent code asks it (`kit.load.replay`, `kit.tracing`,
    `kit.load.rewrite`, `kit.deployment`): its name, the releases read, and its rule modules.

    An engine package (`kit.engines.<engine>`) lists its releases and registers itself with
    `Engine.register(__name__, RELEASES)`; the rules stay in its modules (`config`, `params`,
    `load`, `capture`, `forward`, `acceptance`, optional `flags`) as version-ranged rows, and each
    method below names the module function it asks. Optional in `load`:
    `unloaded_failure(ctx, names)`, for an engine whose loader fails on a parameter no checkpoint
    tensor fills (without it such a parameter stays at its init); `UNWRITTEN`, the source that
    says such a parameter keeps its `torch.empty` memory without a word. Optional in `forward`:
    `draft_positions(release)`, how many positions late the draft decode runs the chain's steps
    after the first (without it they run where the draft was trained).
    """

    NAME: str
    RELEASES: tuple[str, ...]  # releases read in the engine's source, oldest first
    config: ModuleType
    params: ModuleType
    load: ModuleType
    capture: ModuleType
    forward: ModuleType
    # STOP_COUNTING rows, optional DRAFT_PROPOSAL rows (DraftProposal; without them the kit
    # verifies as the papers write it), the engine's log / metrics formats
    acceptance: ModuleType
    # the draft classes each release registers (`kit.engines.classes`): `draft_class(cfg,
    # release)` the one it builds for a config, `for_shape(shape, release)` the one to write
    registry: ModuleType
    flags: ModuleType | None = None  # launch flags by release, for engines that have a table

    @classmethod
    def register(cls, package: str, releases: tuple[str, ...]) -> Engine:
        """The engine of package `kit.engines.<name>`, its modules imported."""
        modules = {m: import_module(f"{package}.{m}") for m in _MODULES}
        try:
            flags = import_module(f"{package}.flags")
        except ModuleNotFoundError:
            flags = None
        return cls(package.rsplit(".", 1)[1], releases, **modules, flags=flags)

    @property
    def CONFIG_FIX(self) -> str:
        return self.config.CONFIG_FIX

    @property
    def SHAPE_CHECK(self) -> str:
        return self.load.SHAPE_CHECK

    def refuses_config(self, cfg: Any, release: EngineRelease) -> Any:  # Refusal | None
        return self.config.refuses_config(cfg, release)

    def constructor_failure(self, cfg: Any, release: EngineRelease) -> Any:  # Refusal | None
        return self.config.constructor_failure(cfg, release)

    def rewritten_config(
        self, cfg: Any, release: EngineRelease, keys: Sequence[str] = ()
    ) -> tuple[dict, list[str]]:
        """The config.json this release reads, for a checkpoint with these tensor names."""
        return self.config.rewritten_config(cfg, release, keys)

    def draft_class(self, cfg: Any, release: EngineRelease) -> Any:  # DraftClass | None
        """The registered class this release builds for the config; None where it does not
        build the draft (a refused config, a constructor that fails first)."""
        if self.refuses_config(cfg, release) or self.constructor_failure(cfg, release):
            return None
        return self.registry.draft_class(cfg, release)

    def class_for(self, shape: Any, release: EngineRelease) -> Any:  # DraftClass | None
        return self.registry.for_shape(shape, release)

    def num_aux(self, cfg: Any, release: EngineRelease) -> int:
        return self.config.num_aux(cfg, release)

    def honours(self, cfg: Any, release: EngineRelease) -> Any:  # Honoured
        return self.config.honours(cfg, release)

    def engine_params(self, cfg: Any, release: EngineRelease) -> list:  # [ParamSpec]
        return self.params.engine_params(cfg, release)

    def resolve_key(self, key: str, ctx: Any) -> Any:  # KeyOutcome
        return self.load.resolve_key(key, ctx)

    def from_target(self, ctx: Any) -> dict[str, tuple[str, str]]:
        return self.load.from_target(ctx)

    def missing_d2t_failure(self, release: EngineRelease) -> Any:  # Refusal | None
        return self.load.missing_d2t_failure(release)

    def d2t_source(self, release: EngineRelease) -> str:
        return self.load.d2t_source(release)

    def unloaded_failure(self, ctx: Any, names: list[str]) -> Any:  # Refusal | None
        check = getattr(self.load, "unloaded_failure", None)
        return check(ctx, names) if check else None

    def capture_aux(
        self, target: Any, draft: Any, release: EngineRelease, target_class: str,
        aux_override: bool | None, cuda_graph: bool,
    ) -> Any:  # Capture  # fmt: skip
        return self.capture.capture(target, draft, release, target_class, aux_override, cuda_graph)

    def era(self, release: EngineRelease) -> Row:  # Row[Era]
        return self.forward.era(release)

    def draft_positions(self, release: EngineRelease) -> Row | None:  # Row[int]
        """How many RoPE positions late the release runs a chain's draft steps after the first,
        with its source; None where the kit has not read the engine's rule."""
        rule = getattr(self.forward, "draft_positions", None)
        return rule(release) if rule else None


_MODULES = ("config", "params", "load", "capture", "forward", "acceptance", "registry")
