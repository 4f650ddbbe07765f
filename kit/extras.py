"""Which optional extra provides a module, and the one-line error when it is missing.

The core install (`pip install eagle3-debug-kit`) reads headers, logs, metrics and launch lines
with numpy alone; torch, transformers and the notebook stack come with extras. A command that
reaches for one of them without it gets `MissingExtra`, a `KitError` (one line, exit 2) that
names the `pip install` to run, instead of a traceback ending in `ModuleNotFoundError`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any, TypeVar

from kit.errors import KitError

DISTRIBUTION = "eagle3-debug-kit"
F = TypeVar("F", bound=Callable[..., Any])

# top-level module -> the extra that installs it (pyproject.toml's optional-dependencies)
EXTRA_OF_MODULE: dict[str, str] = {
    "torch": "offline",
    "transformers": "offline",
    "accelerate": "offline",
    "tqdm": "offline",
    "safetensors": "offline",
    "jupyterlab": "notebooks",
    "papermill": "notebooks",
    "jupytext": "notebooks",
    "ipywidgets": "notebooks",
    "plotly": "notebooks",
    "nbformat": "notebooks",
    "nbclient": "notebooks",
    "ipykernel": "notebooks",
    "IPython": "notebooks",
}


class MissingExtra(KitError, ImportError):
    """A module of an extra is not installed. Also an ImportError, so code that already
    catches one keeps working."""

    def __init__(self, module: str, extra: str) -> None:
        self.module, self.extra = module, extra
        KitError.__init__(
            self, f"this needs {module}, which comes with the {extra!r} extra: {install(extra)}"
        )


def install(extra: str) -> str:
    """The command that installs an extra."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def missing_extra(error: ImportError) -> MissingExtra | None:
    """The `MissingExtra` an ImportError stands for, or None when it is not one of an extra's
    modules (then it is a real bug or a broken install, and keeps its traceback)."""
    if isinstance(error, MissingExtra):
        return error
    name = getattr(error, "name", None) or ""
    top = name.split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None or not isinstance(error, ModuleNotFoundError):
        return None
    return MissingExtra(top, extra)


def require(*modules: str) -> None:
    """Stop now, before any output, when a module a command will need is not installed: `run`
    would otherwise start five kernels and fail in each."""
    for module in modules:
        if not installed(module):
            raise MissingExtra(module, EXTRA_OF_MODULE[module])


def names_extras(fn: F) -> F:
    """A public call that raises `MissingExtra` (still an ImportError) where its heavy import
    fails for want of an extra: a notebook or a script gets the same line as the CLI."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ImportError as e:
            extra = missing_extra(e)
            if extra is None:
                raise
            raise extra from None

    return call  # type: ignore[return-value]
