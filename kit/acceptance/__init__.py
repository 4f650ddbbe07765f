"""Acceptance-rate analysis: read what SGLang, vLLM, LMDeploy, llama.cpp and TensorRT-LLM print,
say what it means, draw it; or ask a running server.

runs = parse_files(["before.log"], engine="sglang==0.5.10", num_draft_tokens=5)
report = analyze(runs, expected_step0=0.745)
report.findings, report.to_dict()
compare(before_run, after_run)
probe("http://127.0.0.1:30000", requests=8).to_dict()
"""

from importlib import import_module
from typing import Any

from kit.acceptance.model import Kind, LogRun, Scope, Window
from kit.acceptance.reader import parse_files

# Loaded on first use: reading a log needs neither the analysis nor the HTTP client.
_LAZY = {
    "AcceptanceReport": "analysis",
    "Comparison": "analysis",
    "Speedup": "analysis",
    "analyze": "analysis",
    "compare": "analysis",
    "expected_speedup": "analysis",
    "interpret": "analysis",
    "ProbeReport": "live",
    "probe": "live",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'kit.acceptance' has no attribute {name!r}")
    return getattr(import_module(f"kit.acceptance.{_LAZY[name]}"), name)


__all__ = [
    "AcceptanceReport",
    "Comparison",
    "Kind",
    "LogRun",
    "ProbeReport",
    "Scope",
    "Speedup",
    "Window",
    "analyze",
    "compare",
    "expected_speedup",
    "interpret",
    "parse_files",
    "probe",
]
