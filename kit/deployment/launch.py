"""The server command inside a launch line: which engine it starts, its environment, its arguments.

A launch line is what was typed or put in a script: `python -m sglang.launch_server …`,
`vllm serve MODEL …`, `python -m vllm.entrypoints.openai.api_server …`, possibly behind
`VAR=value` assignments, `export` lines, `env`, `&&` or shell line continuations. It is split as
a POSIX shell would split it (`shlex`), never run.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from kit.engines import ENGINES
from kit.errors import KitError

_SEPARATORS = {"&&", "||", ";", "|", "&"}
_WRAPPERS = {"env", "exec", "nohup", "time", "uv", "run", "uvx"}


@dataclass(frozen=True)
class Command:
    """The server command found in a launch line."""

    engine: str  # a name in kit.engines.ENGINES
    entrypoint: str  # as written: "python -m sglang.launch_server", "vllm serve"
    argv: tuple[str, ...]  # the arguments after the entrypoint
    env: dict[str, str] = field(default_factory=dict)  # VAR=value before it, export lines
    source: str = "launch line"  # the file it was read from, or "launch line"


def read_launch(text_or_file: str | Path) -> Command:
    """The server command in `text_or_file` (a path to a script or the command line itself)."""
    source, text = launch_text(text_or_file)
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    try:
        tokens = shlex.split(joined, comments=True, posix=True)
    except ValueError as e:
        raise KitError(f"cannot split the launch line as a shell would: {e}", source) from None
    env: dict[str, str] = {}
    for segment in _segments(tokens):
        words = _strip_env(segment, env)
        found = _entrypoint(words)
        if found is not None:
            engine, length = found
            return Command(engine, " ".join(words[:length]), tuple(words[length:]), env, source)
    expected = "python -m sglang.launch_server, sglang serve, vllm serve or python -m " + (
        "vllm.entrypoints.openai.api_server"
    )
    raise KitError(f"no server command in the launch line (expected {expected})", source)


def launch_text(text_or_file: str | Path) -> tuple[str, str]:
    """A path that exists is read; text with a space or a newline is a command line; anything
    else was meant as a file that is not there."""
    candidate = str(text_or_file)
    if "\n" not in candidate and len(candidate) < 4096:
        path = _as_path(candidate)
        if path is None:  # not a name the filesystem takes (too long, a NUL byte): a line
            return "launch line", candidate
        if path.is_file():
            try:
                return str(path), path.read_text()
            except (OSError, UnicodeDecodeError) as e:
                raise KitError(f"cannot read the launch file ({e})", path) from None
        if path.is_dir():
            raise KitError("is a folder, not a launch line or a script", path)
        if " " not in candidate.strip():
            raise KitError("no such file (and not a command line)", path)
    return "launch line", candidate


def _segments(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for t in tokens:
        if t in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(t)
    return [s for s in out if s]


def _strip_env(words: list[str], env: dict[str, str]) -> list[str]:
    """Leading VAR=value words (and `export VAR=value` segments) go to `env`."""
    i = 1 if words and words[0] == "export" else 0
    while i < len(words) and (_assignment(words[i]) or words[i] in _WRAPPERS):
        if _assignment(words[i]):
            name, _, value = words[i].partition("=")
            env[name] = value
        i += 1
    return words[i:]


def _assignment(word: str) -> bool:
    name, sep, _ = word.partition("=")
    return bool(sep) and name.isidentifier() and not word.startswith("-")


def _entrypoint(words: list[str]) -> tuple[str, int] | None:
    """(engine, number of words the entrypoint spans) for the first command that starts a
    server: a console script (`vllm serve`) or `python -m MODULE`."""
    if not words:
        return None
    for name, pkg in ENGINES.items():
        flags = getattr(pkg, "flags", None)
        if flags is None:
            continue
        for command in flags.COMMANDS:
            if tuple(Path(w).name for w in words[: len(command)]) == command:
                return name, len(command)
        python_m = Path(words[0]).name.startswith("python") and words[1:2] == ["-m"]
        if python_m and len(words) > 2 and words[2] in flags.MODULES:
            return name, 3
    return None


def _as_path(text: str) -> Path | None:
    """`text` as a path when the filesystem can look it up."""
    try:
        path = Path(text).expanduser()
        path.stat()
    except FileNotFoundError:
        return path
    except (OSError, ValueError, RuntimeError):
        return None
    return path
