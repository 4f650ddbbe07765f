"""EAGLE-3 debug kit: see what an engine will do with a draft checkpoint before you launch it.

    import kit

    kit.inspect("draft/")                                  # what the checkpoint holds
    kit.simulate("draft/", "sglang==0.5.10")               # every key's fate in one release
    kit.release_matrix("draft/")                           # which engines and releases load it
    kit.fix("draft/", "sglang==0.5.10", out="fixed/")      # renames + config.json, verified
    kit.trace("draft/", "target/", "sglang==0.5.10")       # what reaches the draft, fc or not
    kit.analyze_logs(["server.log"], engine="sglang")      # what the logged figures mean
    kit.probe("http://127.0.0.1:30000")                    # a running server, now
    kit.offline("target/", "draft/", "vllm==0.11.2")       # what the draft should reach
    kit.check_deployment("launch.sh", draft="draft/", target_config="target/")
    kit.doctor("draft/", target_config="target/", engine="sglang==0.5.10", logs=["server.log"])
    kit.run("runs/mine", draft="draft/", engine="sglang==0.5.10")  # notebooks + postmortem
    with kit.watch("kit-watch.json"):                      # an offline vllm.LLM, observed
        llm = vllm.LLM(...)
    kit.engine_check(launch="launch.sh")                   # your engine build, on the bundled pair

Every report has `findings` (`Finding`: code, severity, evidence, fix, engine, source) and
`to_dict()`. Nothing heavy is imported until a call needs it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from kit.api import (
    analyze_logs,
    check_deployment,
    doctor,
    fix,
    inspect,
    offline,
    probe,
    release_matrix,
    run,
    simulate,
    trace,
)
from kit.engine_check import engine_check  # the call; kit.engine_check.* modules import as usual
from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.version import __version__

# Bound after the package is imported, so `kit.watch` is the context manager; the package's
# modules stay reachable as `kit.watch.report` etc. through the import system.
from kit.watch import watch

# The report types, imported on first use: name -> module.
_REPORTS = {
    "InspectionReport": "kit.checkpoint.inspection",
    "LoadReport": "kit.load.report",
    "MatrixRow": "kit.load.replay",
    "FixPlan": "kit.load.rewrite",
    "TraceReport": "kit.tracing.shapes",
    "CaptureReport": "kit.tracing.capture",
    "AcceptanceReport": "kit.acceptance.analysis",
    "ProbeReport": "kit.acceptance.live",
    "OfflineRow": "kit.offline_acceptance",
    "OfflineResult": "kit.offline_acceptance",
    "DeploymentReport": "kit.deployment",
    "Diagnosis": "kit.verdict",
    "Run": "kit.report.runs",
    "EngineCheck": "kit.engine_check.report",
}

__all__ = [
    "Finding",
    "KitError",
    "Severity",
    "__version__",
    "analyze_logs",
    "check_deployment",
    "doctor",
    "engine_check",
    "fix",
    "inspect",
    "offline",
    "probe",
    "release_matrix",
    "run",
    "simulate",
    "trace",
    "watch",
    *_REPORTS,
]


def __getattr__(name: str) -> Any:
    if name in _REPORTS:
        return getattr(import_module(_REPORTS[name]), name)
    raise AttributeError(f"module 'kit' has no attribute {name!r}")
