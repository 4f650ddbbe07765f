"""What the engine check runs: the user's settings that apply to the bundled pair, and what it
had to drop, each with the reason.

A launch line (or a speculative config) is read under the installed release with the kit's own
flag tables (`kit.deployment.lines.read_served`), then each flag is applied to the engine run on
the pair, dropped with a reason (it names the user's model, a device layout the pair does not
have, a server option that never reaches the engine), or replaced (the pair's paths). The check
also sets a few things itself (the counters it reads, how the engine is held in one process); they
are listed too, so the report says exactly what ran. Engine-specific readers live beside their
runners (`kit.engine_check.vllm`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from kit.engines import EngineRelease


class Status(StrEnum):
    APPLIED = "applied"  # as the line gives it
    DROPPED = "dropped"  # not run, with the reason
    CHECK = "set by the check"  # the check's own setting, with the reason


@dataclass(frozen=True)
class Setting:
    """One flag, key or environment variable, and what became of it in the run."""

    name: (
        str  # as the user wrote it ("--max-num-seqs", "speculative_config.num_speculative_tokens")
    )
    value: Any
    status: Status
    why: str = ""
    key: str | None = None  # where it goes: an engine argument, `env:NAME`, or None

    def __str__(self) -> str:
        shown = "" if self.value is None else f" {self.value}"
        why = f": {self.why}" if self.why else ""
        return f"{self.name}{shown} ({self.status}{why})"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": _plain(self.value), "status": str(self.status),
                "why": self.why}  # fmt: skip


@dataclass(frozen=True)
class RunPlan:
    """One engine run on the pair: the release, the chain, the engine's arguments (for vLLM the
    `vllm.LLM` keyword arguments), its environment, and every setting's fate."""

    engine: str
    release: EngineRelease
    k: int
    engine_args: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    settings: tuple[Setting, ...] = ()
    facts: frozenset[str] = frozenset()  # what ran: known defects' conditions are tested on it
    line_facts: frozenset[str] = frozenset()  # what the user's line runs (dropped flags included)
    launch: str | None = None  # the launch line as given (text or file)

    @property
    def applied(self) -> list[Setting]:
        return [s for s in self.settings if s.status is Status.APPLIED]

    @property
    def dropped(self) -> list[Setting]:
        return [s for s in self.settings if s.status is Status.DROPPED]

    def with_value(self, key: str, value: Any) -> RunPlan:
        """The same run with one argument (`outer.inner` for a key inside a dict argument, or
        `env:NAME`) at `value`; None removes it, leaving the engine's default. Facts are the
        caller's to recompute."""
        args, env = dict(self.engine_args), dict(self.env)
        if key.startswith("env:"):
            if value is None:
                env.pop(key[4:], None)
            else:
                env[key[4:]] = str(value)
        else:
            _assign(args, key, value)
        return replace(self, engine_args=args, env=env)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "release": str(self.release),
            "k": self.k,
            "launch": self.launch,
            "settings": [s.to_dict() for s in self.settings],
            "facts": sorted(self.facts),
            "line_facts": sorted(self.line_facts),
        }


SECRET_WORDS = ("key", "token", "secret", "password")


def launch_text(launch: str | Path | None) -> str | None:
    """The launch as the report names it: a script by its path, a line with credentials hidden."""
    if launch is None:
        return None
    try:
        if Path(launch).is_file():
            return str(launch)
    except OSError:  # a line longer than a file name may be
        pass
    return redacted(str(launch))


def env_settings(
    given: dict[str, str], prefix: str, env: dict[str, str], settings: list[Setting], engine: str
) -> None:
    """The line's environment: the engine's own variables (`prefix`) applied, the others
    dropped by name, never their value (it may be a token)."""
    for name, value in given.items():
        if name.startswith(prefix):
            env[name] = value
            settings.append(Setting(name, value, Status.APPLIED, key=f"env:{name}"))
        else:
            settings.append(Setting(name, None, Status.DROPPED, f"not {engine} setting"))


def redacted(launch: str) -> str:
    """A launch line as the report keeps it: the value of an environment variable that is not
    the engine's, or of a flag named like a credential, replaced by `…` (a report gets shared)."""
    import shlex

    try:
        words = shlex.split(launch, comments=True)
    except ValueError:
        return "(a launch line that does not split as a shell would)"
    out, hide_next = [], False
    for word in words:
        name, eq, _ = word.partition("=")
        secret = any(w in name.lower() for w in SECRET_WORDS)
        foreign = name.isidentifier() and not name.startswith(("VLLM_", "SGLANG_"))
        if hide_next:
            out.append("…")
        elif eq and (foreign or (name.startswith("--") and secret)):
            out.append(f"{name}=…")
        else:
            out.append(word)
        hide_next = word.startswith("--") and not eq and secret
    return shlex.join(out)


def _assign(args: dict[str, Any], key: str, value: Any) -> None:
    """`key` is an argument name or `outer.inner` inside a dict argument; None removes it."""
    outer, _, inner = key.partition(".")
    if not inner:
        if value is None:
            args.pop(outer, None)
        else:
            args[outer] = value
        return
    nested = dict(args.get(outer) or {})
    if value is None:
        nested.pop(inner, None)
    else:
        nested[inner] = value
    args[outer] = nested


def _plain(value: Any) -> Any:
    """A value as JSON holds it (tuples as lists, anything else as text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)
