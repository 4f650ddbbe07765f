"""Turn the instrumentation on in this process, once, when a report was asked for.

Three ways in, one effect: vLLM's general-plugin entry point (`vllm.general_plugins`, which vLLM
calls in every process it starts, where the kit is installed in the engine's environment), the
`sitecustomize` that `watch` puts first on PYTHONPATH (where it is not, and for SGLang, which has
no plugin entry point), and `kit.watch()` in the calling process.
"""

from __future__ import annotations

import sys

from kit.watch.report import report_path

_installed = False


def install() -> bool:
    """Install every engine's hooks (patched lazily, on import). False when no report is set."""
    global _installed
    if _installed:
        return True
    if report_path() is None:
        return False
    _installed = True
    from kit.watch import sglang_counts, sglang_hooks, vllm_hooks

    vllm_hooks.install()
    sglang_hooks.install()
    sglang_counts.install()
    _chain_excepthook()
    return True


def _chain_excepthook() -> None:
    """An uncaught exception in a process that has not reached the loader (a config the engine
    refuses in its front end) is the start-up crash too."""
    previous = sys.excepthook

    def hook(kind, value, tb):  # type: ignore[no-untyped-def]
        from kit.watch.evidence import record_crash

        if value is not None and not isinstance(value, KeyboardInterrupt):
            record_crash(value, "uncaught in the launched command")
        previous(kind, value, tb)

    sys.excepthook = hook


def vllm_plugin() -> None:
    """The `vllm.general_plugins` entry point: does nothing unless `watch` set a report."""
    install()
