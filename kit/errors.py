"""The one error type for expected failures: bad input, a wrong path, an unsupported version.

The CLI prints a `KitError` as a single line (`PATH: problem`) and exits 2; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class KitError(Exception):
    """An expected failure with a message a user can act on."""

    def __init__(self, problem: str, path: str | Path | None = None) -> None:
        self.problem = problem
        self.path = None if path is None else str(path)
        super().__init__(f"{self.path}: {problem}" if self.path else problem)


def require_inputs(*paths: str | Path | None) -> None:
    """Every input path given exists. A mistyped path must stop a command at once: otherwise
    `doctor` reads it as "nothing to check" and comes out clean, and `run` fails one notebook per
    step that needed it."""
    for path in paths:
        if path is not None and not Path(path).exists():
            raise KitError("no such file or directory", path)
