"""Acceptance-rate analysis: read what SGLang and vLLM print, say what it means, draw it.

runs = parse_files(["before.log"], engine="sglang==0.5.10", num_draft_tokens=5)
report = analyze(runs, expected_step0=0.745)
report.findings, report.to_dict()
compare(before_run, after_run)
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
from kit.acceptance.model import Run, Window
from kit.acceptance.reader import parse_files

__all__ = [
    "AcceptanceReport",
    "Comparison",
    "Run",
    "Speedup",
    "Window",
    "analyze",
    "compare",
    "expected_speedup",
    "interpret",
    "parse_files",
]
