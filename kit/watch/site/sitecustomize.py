"""Put first on PYTHONPATH by `python -m kit watch`: instruments every Python process the command
starts, where the kit is not installed in the engine's environment (and for SGLang, which has no
plugin entry point). Then hands over to the environment's own sitecustomize, if it has one."""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _kit_watch() -> None:
    root = os.environ.get("KIT_WATCH_ROOT")
    if importlib.util.find_spec("kit") is None and root and root not in sys.path:
        sys.path.append(root)  # after the engine's own paths: nothing of theirs is shadowed
    try:
        from kit.watch.boot import install

        install()
    except Exception as e:  # never stop the engine from starting
        print(f"eagle3-kit: watch not active in pid {os.getpid()}: {e}", file=sys.stderr)


def _next_sitecustomize() -> None:
    """The next one on sys.path after this folder: another sitecustomize doing the same never
    hands back to this one, whichever of the two comes first."""
    here = [i for i, p in enumerate(sys.path) if os.path.abspath(p or ".") == _HERE]
    rest = sys.path[here[-1] + 1 :] if here else sys.path
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_kit_watch()
_next_sitecustomize()
