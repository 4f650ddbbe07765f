"""Arguments several commands share, spelled, parsed and gated in one place."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from kit.findings import Finding, Severity
from kit.verdict import DEFAULT_ENGINE


def severity(text: str) -> Severity:
    """argparse type for `--fail-on`: a bad name is a usage error (exit 2), not a traceback."""
    try:
        return Severity.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_int(text: str) -> int:
    """argparse type for counts (tokens, steps, prompts, workers): 0 or less is a usage error,
    not a value some later step reads as "not given" or divides by."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or above, got {text}")
    return value


def add_sampling_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """How offline acceptance sends prompts and verifies drafts: as the server samples."""
    p.add_argument(
        "--prompt-format",
        choices=["raw", "chat"],
        default="raw",
        help="send prompts raw or through the target's chat template",
    )
    p.add_argument(
        "--temperature",
        type=non_negative_float,
        default=0.0,
        help="0: greedy verification; above: speculative sampling",
    )
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="sampling draws and interval resamples")


def add_fail_on(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fail-on",
        metavar="SEVERITY",
        type=severity,
        help="exit 1 when a finding is at least this severe (info, warning, error, critical)",
    )


def gate(findings: Iterable[Finding], threshold: Severity | None) -> int:
    """The exit code of a CI gate: 1 when a finding reaches the threshold."""
    if threshold is None:
        return 0
    return int(any(f.severity >= threshold for f in findings))


def add_deployment_arguments(p: argparse.ArgumentParser) -> None:
    """What describes a deployment: the draft, the target, the engine release, the logs; any
    subset of them (each check runs on the inputs it needs)."""
    p.add_argument(
        "--draft",
        type=Path,
        help="draft checkpoint (or config) folder, or a Hub repo id org/name[@rev]",
    )
    p.add_argument("--target", type=Path, help="transformers target folder (offline acceptance)")
    p.add_argument(
        "--target-config",
        type=Path,
        help="target config.json (aux-capture trace), or a Hub repo id",
    )
    p.add_argument("--draft-config", type=Path, help="draft config to trace (default: the draft's)")
    p.add_argument(
        "--engine",
        help="engine release, e.g. vllm==0.11.0 (default: the newest release the --launch line "
        f"and the logs allow together, else {DEFAULT_ENGINE}; the verdict's first line says "
        "which and why)",
    )
    p.add_argument(
        "--log",
        dest="logs",
        type=Path,
        nargs="+",
        action="extend",
        default=[],
        help="server logs, in the order they were written (repeat --log or list several)",
    )
    p.add_argument("--target-class", help="model class serving the target")
    p.add_argument(
        "--no-aux-capture",
        dest="aux_capture",
        action="store_const",
        const=False,
        default=None,
        help="the deployment did not capture aux hidden states",
    )
    p.add_argument(
        "--num-draft-tokens", type=positive_int, help="draft tokens per step (default: from logs)"
    )
    p.add_argument(
        "--num-prompts", type=positive_int, help="offline acceptance on the first N prompts"
    )
