"""Put first on PYTHONPATH by `kit.engines.sglang.cpu.launch_env`: installs the kit's CPU
stand-ins in every Python process an SGLang launch starts, then hands over to the next
sitecustomize on the path (the environment's own, or `kit watch`'s)."""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _stand_ins() -> None:
    if os.environ.get("KIT_SGLANG_CPU") != "1":
        return
    root = os.environ.get("KIT_SGLANG_CPU_ROOT")
    if importlib.util.find_spec("kit") is None and root and root not in sys.path:
        sys.path.append(root)  # after the engine's own paths: nothing of theirs is shadowed
    from kit.engines.sglang.cpu import install

    install()


def _next_sitecustomize() -> None:
    """The next one on sys.path after this folder: another sitecustomize doing the same never
    hands back to this one, whichever of the two comes first."""
    here = [i for i, p in enumerate(sys.path) if os.path.abspath(p or ".") == _HERE]
    rest = sys.path[here[-1] + 1 :] if here else sys.path
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_stand_ins()
_next_sitecustomize()
