"""Run a function right after a module is imported, without importing it ourselves.

The instrumentation is installed in every Python process a command starts, most of which never
load a draft (tokenizer workers, the API front end); importing vLLM's model code there to patch it
would cost start-up time. A finder on `sys.meta_path` lets the real import happen and patches the
module as it finishes executing; a module already imported is patched at once. SGLang's CPU
stand-ins (`kit.engines.sglang.cpu`) use the same finder, with `around`: a context entered while
the module executes.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from types import ModuleType

Patch = Callable[[ModuleType], None]
Around = Callable[[], AbstractContextManager]
_PENDING: dict[str, list[Patch]] = {}
_AROUND: dict[str, list[Around]] = {}


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self.inner = inner
        self.name = name

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        with ExitStack() as stack:
            for enter in _AROUND.pop(self.name, []):
                stack.enter_context(enter())
            self.inner.exec_module(module)
        for patch in _PENDING.pop(self.name, []):
            patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name not in _PENDING and name not in _AROUND:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader, name)
                return spec
        return None


_FINDER = _Finder()


def when_imported(name: str, after: Patch | None = None, around: Around | None = None) -> None:
    """Call `after(module)` once `name` is imported (now, if it already is); enter `around()`
    while it executes (nothing, if it already has)."""
    module = sys.modules.get(name)
    if module is not None:
        if after is not None:
            after(module)
        return
    if after is not None:
        _PENDING.setdefault(name, []).append(after)
    if around is not None:
        _AROUND.setdefault(name, []).append(around)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
