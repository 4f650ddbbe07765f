"""Engine releases and version-ranged rules: engine behaviour is data, not `if`s.

One package per engine (`kit.engines.sglang`, `kit.engines.vllm`, `kit.engines.lmdeploy`) holds
everything the kit knows about that engine as version-ranged rows citing the engine's source; each package lists the
releases it was read in (`RELEASES`). `parse_engine("sglang==0.5.10")` gives an `EngineRelease`,
and `pick(rows, release)` returns the row in force. Supporting a new release is adding a row;
supporting a new engine is adding a package and naming it in `ENGINES`. `docs/engines.md` tells
each engine's rules in prose, with the same sources.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from packaging.version import Version

from kit.engines import lmdeploy, sglang, tensorrt_llm, vllm
from kit.engines.base import Engine, EngineRelease, Row, VersionRange, pick
from kit.errors import KitError
from kit.findings import Finding, Severity

__all__ = [
    "ENGINES",
    "RELEASES",
    "Engine",
    "EngineRelease",
    "Row",
    "VersionRange",
    "all_releases",
    "parse_engine",
    "pick",
    "release_findings",
    "supported_range",
]

ENGINES: dict[str, Engine] = {
    pkg.ENGINE.NAME: pkg.ENGINE for pkg in (sglang, vllm, lmdeploy, tensorrt_llm)
}

# Releases read in the engines' sources, oldest first, per engine.
RELEASES: dict[str, tuple[str, ...]] = {name: pkg.RELEASES for name, pkg in ENGINES.items()}


def supported_range(name: str) -> tuple[str, str]:
    rel = RELEASES[name]
    return rel[0], rel[-1]


# A release string is one the engines publish: digits and dots (at least major.minor.patch) and an
# optional .postN or rcN (TensorRT-LLM publishes its release candidates); no leading "v", no dev.
_RELEASE = re.compile(r"^\d+\.\d+\.\d+(\.\d+)*(\.post\d+|rc\d+)?$")


def parse_engine(text: str) -> EngineRelease:
    """Parse `sglang==0.5.10` / `vllm==0.11.0`; a clear error names the supported range.

    A release the kit read is used as is. A release between two read ones (or never published)
    is accepted with `assumed_from` set to the latest read release before it, whose behaviour is
    assumed (`release_findings` says so); strings that are not releases are refused.
    """
    name, sep, ver = text.strip().partition("==")
    name, ver = name.strip().lower(), ver.strip()
    if name not in RELEASES:
        hint = did_you_mean(text, RELEASES)
        raise KitError(
            f"unknown engine {name!r} in {text!r}; "
            + (f"did you mean {hint}? " if hint else "")
            + f"use {' or '.join(f'{e}==X' for e in ENGINES)}"
        )
    lo, hi = supported_range(name)
    if not sep or not ver:
        raise KitError(f"{text!r} has no version; use {name}==X with X in {lo} … {hi}")
    if not _RELEASE.match(ver):
        hint = f"; use {name}=={ver[1:]}" if ver[:1] in "vV" and _RELEASE.match(ver[1:]) else ""
        raise KitError(f"{ver!r} is not a {name} release (releases look like {hi}){hint}")
    version = Version(ver)
    if not Version(lo) <= version <= Version(hi):
        raise KitError(f"{name} {version} is outside the supported range {lo} … {hi}")
    read = [Version(v) for v in RELEASES[name]]
    assumed = None if version in read else max(v for v in read if v <= version)
    return EngineRelease(name, version, assumed)


# `vllm=0.11`, `vllm:0.11.0`, `vllm 0.11.0`, `vllm@v0.11.0`, `vllm-0.11.0`, `trtllm>=1.2.0rc2`
_TYPO = re.compile(r"^\s*([A-Za-z][A-Za-z_.\-]*?)\s*(?:[=:@~<>! ]+|-)?\s*[vV]?(\d[\w.]*)\s*$")
_ALIASES = {"trtllm": "tensorrt_llm", "trt_llm": "tensorrt_llm", "tensorrt": "tensorrt_llm",
            "llamacpp": "llama.cpp", "llama_cpp": "llama.cpp"}  # fmt: skip


def did_you_mean(text: str, names: Iterable[str]) -> str | None:
    """`name==X` for an engine and release spelled another way (`vllm=0.11` -> `vllm==0.11.0`, a
    release of two numbers given its `.0`), with the engine name corrected to the closest one
    of `names`; None when the text holds no engine-and-version shape."""
    m = _TYPO.match(text)
    if m is None:
        return None
    name = m.group(1).lower().replace("-", "_")
    name = _ALIASES.get(name, name)
    known = list(names)
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if not close:
            return None
        name = close[0]
    version = m.group(2)
    if re.fullmatch(r"\d+\.\d+", version):
        version += ".0"
    return f"{name}=={version}"


def release_findings(release: EngineRelease) -> list[Finding]:
    """A warning when the release was not read and another one's behaviour is assumed."""
    if release.assumed_from is None:
        return []
    nxt = next((v for v in RELEASES[release.name] if Version(v) > release.version), None)
    return [
        Finding(
            code="RELEASE_ASSUMED",
            severity=Severity.WARNING,
            title=f"{release} was not read by the kit: {release.name}=={release.assumed_from}'s "
            "behaviour is assumed",
            evidence=(
                f"releases read around it: {release.assumed_from}"
                + (f" and {nxt}" if nxt else "")
                + "; a rule that changed between them may be misjudged",
            ),
            fix=f"check the verdict against {release.name}=={release.assumed_from}"
            + (f" and {release.name}=={nxt}" if nxt else ""),
            engine=str(release),
        )
    ]


def all_releases(name: str) -> list[EngineRelease]:
    """Every release the kit models for one engine, oldest first (for version matrices)."""
    if name not in RELEASES:
        raise KitError(f"unknown engine {name!r}; use {', '.join(ENGINES)}")
    return [EngineRelease(name, Version(v)) for v in RELEASES[name]]
