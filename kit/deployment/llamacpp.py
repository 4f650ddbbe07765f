"""llama.cpp's server launch line (`llama-server …`): whether it speculates at all, and how its
drafter stops.

llama.cpp publishes builds (b9235), not releases the kit reads flag by flag: the line is read for
the few flags these rules need, each rule citing the build or pull request that set the default
it depends on. Recent builds spell the flags `--spec-type`, `--spec-draft-n-max`,
`--spec-draft-p-min`; older ones `--draft-max`, `--draft-p-min`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from kit.findings import Finding, Severity

BINARIES = ("llama-server",)
DRAFT = ("-md", "--model-draft", "--spec-draft-model")
SPEC_TYPE = ("--spec-type",)
P_MIN = ("--spec-draft-p-min", "--draft-p-min")
N_MAX = ("--spec-draft-n-max", "--draft-max", "--draft-n", "--draft")


@dataclass
class LlamaServer:
    """The flags of a llama-server line these rules read (None: not given)."""

    argv: tuple[str, ...]
    values: dict[str, str | None] = field(default_factory=dict)

    def get(self, names: tuple[str, ...]) -> str | None:
        return next((self.values[n] for n in names if n in self.values), None)

    def given(self, names: tuple[str, ...]) -> bool:
        return any(n in self.values for n in names)


def read(text: str) -> LlamaServer | None:
    """The llama-server command in a launch line or script text; None when it holds none."""
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    try:
        words = shlex.split(joined, comments=True)
    except ValueError:
        return None
    for i, word in enumerate(words):
        if Path(word).name in BINARIES:
            argv = tuple(words[i + 1 :])
            return LlamaServer(argv, _values(argv))
    return None


def _values(argv: tuple[str, ...]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for i, word in enumerate(argv):
        if not word.startswith("-"):
            continue
        key, eq, inline = word.partition("=")
        nxt = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        out[key] = inline if eq else nxt
    return out


def findings(server: LlamaServer) -> list[Finding]:
    return [*no_spec_type(server), *p_min_zero(server)]


def no_spec_type(s: LlamaServer) -> list[Finding]:
    """A draft model given without `--spec-type`: recent builds load it and never draft."""
    kind = s.get(SPEC_TYPE)
    if not s.given(DRAFT) or (kind is not None and kind != "none"):
        return []
    return [
        Finding(
            code="LLAMACPP_SPECULATION_OFF",
            severity=Severity.ERROR,
            title="llama-server loads the draft model but does not speculate: --spec-type is "
            f"{'none' if kind else 'not given (default none)'}",
            evidence=(
                f"{next(n for n in DRAFT if n in s.values)} {s.get(DRAFT)}",
                "--spec-type defaults to none; -md alone no longer turns drafting on (since the "
                "EAGLE-3 init refactor)",
            ),
            fix="add --spec-type draft-eagle3 for an EAGLE-3 draft (draft-simple for a plain "
            "draft model)",
            source="ggml-org/llama.cpp issue #25345; PR #24850",
            root_cause=True,
        )
    ]


def p_min_zero(s: LlamaServer) -> list[Finding]:
    """`--spec-draft-p-min` 0.0 (its default since build b9235): the drafter never stops on an
    unsure token, every round drafts n_max, and the acceptance ratio falls with it."""
    kind = s.get(SPEC_TYPE)
    if kind in (None, "none"):
        return []
    value = s.get(P_MIN)
    try:
        p_min = float(value) if value is not None else 0.0
    except ValueError:
        return []
    if p_min > 0:
        return []
    given = "given as 0" if value is not None else "not given: default 0.0"
    return [
        Finding(
            code="LLAMACPP_DRAFT_P_MIN_ZERO",
            severity=Severity.WARNING,
            title="--spec-draft-p-min is 0: every round drafts the full n_max, so the logged "
            "acceptance ratio falls though the tokens accepted per round do not",
            evidence=(
                f"--spec-draft-p-min {given}; n_max {s.get(N_MAX) or 'default'}",
                "measured on one pair: ratio 0.94 with p-min 0.75 against 0.30 with 0.0 (build "
                "b9222 against b9235, which made 0.0 the default)",
                "at n_max 64 the ratio fell to 0.07 and speculation ran slower than plain decoding",
            ),
            fix="--spec-draft-p-min 0.75 stops drafting on an unsure token (the ratio then "
            "reflects the draft); keep 0.0 only where long drafts are cheap",
            source="ggml-org/llama.cpp issues #25792 (bisected to b9235, PR #23269), #25908, "
            "#23544",
        )
    ]
