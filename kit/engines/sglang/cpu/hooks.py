"""Patch an SGLang module as it is imported, without importing it ahead of SGLang.

Every process SGLang starts installs the stand-ins at interpreter start-up, long before SGLang
imports the modules they change (and most processes never import them). A finder on
`sys.meta_path` wraps the module's own loader: `around` runs while the module executes, `after`
once it has.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from types import ModuleType

Patch = Callable[[ModuleType], None]
Around = Callable[[], AbstractContextManager]
_AFTER: dict[str, list[Patch]] = {}
_AROUND: dict[str, list[Around]] = {}


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self.inner, self.name = inner, name

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        with ExitStack() as stack:
            for enter in _AROUND.pop(self.name, []):
                stack.enter_context(enter())
            self.inner.exec_module(module)
        for patch in _AFTER.pop(self.name, []):
            patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name not in _AFTER and name not in _AROUND:
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
    """`after(module)` once `name` is imported (now, if it is), `around()` entered while it
    executes (nothing, if it already has)."""
    module = sys.modules.get(name)
    if module is not None:
        if after is not None:
            after(module)
        return
    if after is not None:
        _AFTER.setdefault(name, []).append(after)
    if around is not None:
        _AROUND.setdefault(name, []).append(around)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
