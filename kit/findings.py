"""One vocabulary of findings: every check in the kit returns `Finding`s.

The CLI prints them, notebooks show them, the postmortem collects them and CI gates on them, so
a finding carries everything a reader needs: a stable code, how bad it is, the evidence, which
engine release it holds for (and the engine source line), and the fix.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import IntEnum
from typing import Any


class Severity(IntEnum):
    """Ordered so that `max()` and `>=` work: CRITICAL means speculation cannot work."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    CRITICAL = 3

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            names = ", ".join(s.name.lower() for s in cls)
            raise ValueError(f"unknown severity {text!r}; use one of {names}") from None


@dataclass(frozen=True)
class Finding:
    """A single diagnosis. `root_cause` findings explain a symptom; they are ranked first."""

    code: str
    severity: Severity
    title: str
    evidence: tuple[str, ...] = ()
    fix: str = ""
    engine: str | None = None
    source: str | None = None
    root_cause: bool = False
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["severity"] = self.severity.name.lower()
        d["evidence"] = list(self.evidence)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            code=d["code"],
            severity=Severity.parse(d["severity"]),
            title=d["title"],
            evidence=tuple(d.get("evidence", ())),
            fix=d.get("fix", ""),
            engine=d.get("engine"),
            source=d.get("source"),
            root_cause=bool(d.get("root_cause", False)),
            data=dict(d.get("data", {})),
        )


# Placeholders a fix text may hold, and the input each stands for (`with_inputs`).
PLACEHOLDERS = {"CKPT": "draft", "DRAFT": "draft", "DRAFT_DIR": "draft", "TARGET": "target",
                "TARGET_DIR": "target"}  # fmt: skip
_RELEASE_X = re.compile(r"\b(sglang|vllm|lmdeploy|tensorrt_llm)==X\b")


def with_inputs(findings: Iterable[Finding], inputs: Mapping[str, str | None]) -> list[Finding]:
    """The findings with each fix's placeholders (`CKPT`, `TARGET`, `sglang==X` …) replaced by
    what the user gave (`inputs`: "draft", "target", "release"), quoted for a shell, so a fix is
    a command they can paste. Placeholders for inputs not given stay as they are."""
    release = inputs.get("release") or ""

    def same_engine(m: re.Match[str]) -> str:
        return release if release.startswith(f"{m[1]}==") else m[0]

    out = []
    for f in findings:
        fix = f.fix
        for token, key in PLACEHOLDERS.items():
            if inputs.get(key):
                fix = re.sub(rf"\b{token}\b", shlex.quote(str(inputs[key])), fix)
        fix = _RELEASE_X.sub(same_engine, fix)
        out.append(f if fix == f.fix else replace(f, fix=fix))
    return out


def ranked(findings: Iterable[Finding]) -> list[Finding]:
    """Root causes first, then by severity (worst first); stable otherwise."""
    return sorted(findings, key=lambda f: (not f.root_cause, -int(f.severity)))


def worst(findings: Iterable[Finding]) -> Severity | None:
    return max((f.severity for f in findings), default=None)


def to_json(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in ranked(findings)]


def dumps(obj: Any) -> str:
    """JSON for CLI output; Findings and Severities serialise themselves."""

    def default(o: Any) -> Any:
        if isinstance(o, Finding):
            return o.to_dict()
        if isinstance(o, Severity):
            return o.name.lower()
        if hasattr(o, "to_dict"):
            return o.to_dict()
        raise TypeError(f"not JSON serialisable: {type(o).__name__}")

    return json.dumps(obj, indent=2, default=default)


STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.ERROR: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
}
