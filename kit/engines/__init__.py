"""Engine releases and version-ranged rules: engine behaviour is data, not `if`s.

One package per engine (`kit.engines.sglang`, `kit.engines.vllm`, …) holds everything the kit
knows about that engine as version-ranged rows citing the engine's source; each package lists the
releases it was read in (`RELEASES`). `parse_engine("sglang==0.5.10")` gives an `EngineRelease`,
and `pick(rows, release)` returns the row in force. Supporting a new release is adding a row;
supporting a new engine is adding a package and naming it in `ENGINES`.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from kit.engines import sglang, vllm
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.errors import KitError

__all__ = [
    "ENGINES",
    "RELEASES",
    "EngineRelease",
    "Row",
    "VersionRange",
    "all_releases",
    "parse_engine",
    "pick",
    "supported_range",
]

ENGINES = {"sglang": sglang, "vllm": vllm}

# Releases read in the engines' sources, oldest first, per engine.
RELEASES: dict[str, tuple[str, ...]] = {name: pkg.RELEASES for name, pkg in ENGINES.items()}


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
