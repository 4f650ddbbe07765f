"""One engine release for a verdict, taken from the evidence, never guessed in silence.

A user who does not name the release still hands the kit evidence of it: a launch line parses
under some releases and not others (`Served.fitting`), and a log's line format and accept-rate
arithmetic narrow it to a version range (`kit.acceptance.release`). The release judged is the
newest one every piece of evidence allows, in this order of authority: `--engine`, then the
launch line and the logs together, then the documented default. The choice and what it rests
on are stated first in every verdict, so a reader sees what the verdict holds for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from kit.engines import RELEASES, EngineRelease, parse_engine

if TYPE_CHECKING:
    from kit.acceptance.model import LogRun

DEFAULT_ENGINE = "sglang==0.5.10"  # the incident's release; `--help` documents it


@dataclass(frozen=True)
class ReleaseChoice:
    """The release judged, how it was chosen, and every release the evidence left open."""

    release: EngineRelease
    basis: str  # "given" | "evidence" | "default"
    evidence: tuple[str, ...] = ()  # what each input allows, one line each
    fitting: tuple[str, ...] = ()  # every release of the engine the evidence allows
    conflicts: tuple[str, ...] = field(default=())

    @property
    def summary(self) -> str:
        """The verdict's first words: the release and why it is the one."""
        return summary(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {
            "release": str(self.release),
            "basis": self.basis,
            "evidence": list(self.evidence),
            "fitting": list(self.fitting),
            "conflicts": list(self.conflicts),
        }


def summary(choice: dict[str, Any]) -> str:
    """A choice (`ReleaseChoice.to_dict()`, as a run records it) in words."""
    release, evidence, fitting = choice["release"], choice["evidence"], choice["fitting"]
    if choice["basis"] == "given":
        return f"{release} (given)"
    if choice["basis"] == "default":
        return f"{release} (the default: {evidence[0]})"
    where = "; ".join(evidence)
    if len(fitting) > 1:
        return f"{release}, the newest of {_span(fitting)} that the evidence allows ({where})"
    return f"{release}, the one release the evidence allows ({where})"


def _span(versions: Sequence[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]} … {versions[-1]}"


def engine_name(engine: str | None) -> str | None:
    """The engine named by `--engine` (a release or a bare name), else None. A name no engine
    has is refused as `parse_engine` refuses it, with the spelling that works (`vllm=0.11`: did
    you mean vllm==0.11.0?), not judged silently under the default."""
    if not engine:
        return None
    name = engine.partition("==")[0].strip().lower()
    return name if name in RELEASES else parse_engine(engine).name


def is_release(engine: str | None) -> bool:
    return bool(engine) and "==" in engine


def choose(
    engine: str | None,
    *,
    launch_engine: str | None = None,
    launch_fitting: Sequence[str] | None = None,
    runs: Sequence[LogRun] = (),
) -> ReleaseChoice:
    """The release to judge by: `engine` when it names one; else the newest release of the
    engine the launch line or the logs name that every one of them allows; else the default."""
    if is_release(engine):
        return ReleaseChoice(parse_engine(engine), "given")
    name = engine_name(engine) or launch_engine or _logged_engine(runs)
    if name is None or name not in RELEASES:
        return _default("no release given, and no launch line or log names one")
    known = list(RELEASES[name])
    evidence, conflicts = [], []
    allowed = known
    if launch_fitting is not None:
        allowed = [v for v in allowed if v in launch_fitting]
        evidence.append(f"the launch line parses under {_span(launch_fitting) or 'none'}")
    for (rng, why), sources in _by_range(runs, name).items():
        inside = [v for v in known if EngineRelease(name, Version(v)) in rng]
        label = f"{_names(sources)} {'fits' if len(sources) == 1 else 'fit'} {rng}{why}"
        narrowed = [v for v in allowed if v in inside]
        if not narrowed:
            conflicts.append(f"{label}, which no other evidence allows")
            continue
        allowed = narrowed
        evidence.append(label)
    if not evidence:
        return _default(f"no launch line or log narrows the {name} release", name)
    release = parse_engine(f"{name}=={allowed[-1]}")
    return ReleaseChoice(release, "evidence", tuple(evidence), tuple(allowed), tuple(conflicts))


def _by_range(runs: Sequence[LogRun], name: str) -> dict[tuple[Any, str], list[str]]:
    """The logs of `name` grouped by the range they fit and what narrowed it, in order."""
    groups: dict[tuple[Any, str], list[str]] = {}
    for run in runs:
        if run.engine_name == name and run.release_range is not None:
            groups.setdefault((run.release_range, _why(run)), []).append(Path(run.source).name)
    return groups


def _names(sources: Sequence[str]) -> str:
    return sources[0] if len(sources) == 1 else f"{', '.join(sources[:-1])} and {sources[-1]}"


def _why(run: LogRun) -> str:
    """What in a log narrowed its range: the line format, the accept-rate arithmetic, or both."""
    parts = ["line format"] if run.formats else []
    if run.formula is not None and run.formula.value is not None:
        parts.append(f"accept rate = {run.formula.value.expr}")
    return f" ({'; '.join(parts)})" if parts else ""


def _logged_engine(runs: Sequence[LogRun]) -> str | None:
    names = {r.engine_name for r in runs if r.engine_name}
    return names.pop() if len(names) == 1 else None


def _default(why: str, name: str | None = None) -> ReleaseChoice:
    if name is not None and name != engine_name(DEFAULT_ENGINE):
        newest = RELEASES[name][-1]
        return ReleaseChoice(parse_engine(f"{name}=={newest}"), "default", (f"{why}; its newest",))
    return ReleaseChoice(parse_engine(DEFAULT_ENGINE), "default", (why,))
