"""Acceptance-rate analysis: read what SGLang, vLLM, LMDeploy, llama.cpp and TensorRT-LLM print,
say what it means, draw it; or ask a running server.

runs = parse_files(["before.log"], engine="sglang==0.5.10", num_draft_tokens=5)
report = analyze(runs, expected_step0=0.745)
report.findings, report.to_dict()
compare(before_run, after_run)
probe("http://127.0.0.1:30000", requests=8).to_dict()
"""

from kit.acceptance.analysis import (
    AcceptanceReport,
    Comparison,
    Speedup,
    analyze,
    compare,
    expected_speedup,
    interpret,
)
from kit.acceptance.model import Kind, Run, Scope, Window
from kit.acceptance.probe import ProbeReport, probe
from kit.acceptance.reader import parse_files

__all__ = [
    "AcceptanceReport",
    "Comparison",
    "Kind",
    "ProbeReport",
    "Run",
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
