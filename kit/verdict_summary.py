"""The verdict's first lines: the answer, what holds, and what was not seen.

A list of findings tells a team what is wrong; a healthy deployment deserves an answer too, said
as positively as the evidence allows ("loads fully on sglang==0.5.12, fc runs on 3 target states,
aux ids match training, expected accept length 3.07 [2.94, 3.19]"), each clause only where a check
saw it, and every part it could not check named with the input that would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kit.findings import Severity

if TYPE_CHECKING:
    from kit.differential import Differential
    from kit.report.runs import Run, StepResult
    from kit.verdict import Diagnosis

# Findings of the hand-over that contradict "aux ids match training".
AUX_CODES = frozenset({"AUX_LAYER_OFFSET", "AUX_IDS_SHIFTED", "AUX_IDS_IGNORED", "AUX_IDS_DEFAULT"})


@dataclass(frozen=True)
class Verdict:
    headline: str
    healthy: bool
    holds: tuple[str, ...]  # what the checks found right
    unchecked: tuple[str, ...]  # what they could not see, and the input that would show it

    def to_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "healthy": self.healthy,
            "holds": list(self.holds),
            "unchecked": list(self.unchecked),
        }


def summarise(report: Diagnosis) -> Verdict:
    holds, unchecked = [], []
    for part in (_load, _capture, _offline):
        held, missing = part(report)
        holds += held
        unchecked += missing
    faults = [f for f in report.findings if f.root_cause or f.severity >= Severity.ERROR]
    healthy = report.differential is None and not faults and bool(holds)
    return Verdict(_headline(report, healthy, holds), healthy, tuple(holds), tuple(unchecked))


def _headline(report: Diagnosis, healthy: bool, holds: list[str]) -> str:
    diff = report.differential
    if diff is not None:
        return _floor_headline(diff)
    if healthy:
        warned = list(
            dict.fromkeys(f.code for f in report.findings if f.severity >= Severity.WARNING)
        )
        caveat = f" ({_count(warned, 'warning')} below)" if warned else ""
        return "healthy: " + "; ".join(holds) + caveat
    causes = list(dict.fromkeys(f.code for f in report.findings if f.root_cause))
    if causes:
        return _count(causes, "root cause")
    serious = [f for f in report.findings if f.severity >= Severity.WARNING]
    if serious:
        return (
            f"no root cause; {len(serious)} finding{'s' * (len(serious) > 1)} at warning or above"
        )
    return "nothing wrong found in what was checked; " + "; ".join(report.skipped.values())


def _count(names: list[str], noun: str) -> str:
    return f"{len(names)} {noun}{'s' * (len(names) > 1)}: {', '.join(names)}"


def _load(report: Diagnosis) -> tuple[list[str], list[str]]:
    if "load" not in report.checks:
        return [], ["how the release loads the weights: give the draft checkpoint (--draft DIR)"]
    bad = [f for f in report.checks["load"] if f.severity >= Severity.WARNING]
    if bad:
        return [], []
    return [f"loads fully on {report.engine}: no key dropped, no parameter left at init"], []


def _capture(report: Diagnosis) -> tuple[list[str], list[str]]:
    cap = report.capture
    if cap is None:
        return [], ["what the target hands the draft: give the target's config (--target-config)"]
    if not report.seen.served_config:
        return [], [f"whether fc runs as served: {report.seen.served_config_why}"]
    found = {f.code for f in report.checks.get("capture", []) if f.severity >= Severity.WARNING}
    held = []
    if cap.fc_applied and cap.aux_capture and not found:
        held.append(
            f"fc runs on {len(cap.captured_layers)} target states {cap.captured_layers} "
            f"({cap.hidden_width} → {cap.draft_hidden} wide)"
        )
    if cap.aux_capture and not found & AUX_CODES and cap.captured_layers == cap.trained_layers:
        held.append(f"aux ids match training (states {cap.trained_layers})")
    return held, []


def _offline(report: Diagnosis) -> tuple[list[str], list[str]]:
    facts = report.facts
    if "offline_accept_len_healthy" not in facts:
        why = report.skipped.get("offline", "offline acceptance did not run")
        return [], [f"the expected accept length: {why}"]
    lo, hi = facts["offline_accept_len_healthy_ci"]
    held = [
        f"expected accept length {facts['offline_accept_len_healthy']:.2f} [{lo:.2f}, {hi:.2f}]"
    ]
    deployed = facts.get("offline_accept_len_as_deployed")
    if deployed is not None and lo <= deployed <= hi:
        held.append(f"as deployed {deployed:.2f}, within the healthy interval")
    return held, []


def summarise_run(run: Run) -> Verdict:
    """The same verdict for a notebook run (`kit run`), from the executed notebooks' records."""
    holds, unchecked = [], []
    engine = run.inputs.get("engine")
    load = run.ran("02_load_weights_simulation")
    if load is None:
        unchecked.append("how the release loads the weights: give the draft checkpoint (--draft)")
    elif not any(f.severity >= Severity.WARNING for f in load.findings):
        holds.append(f"loads fully on {engine}: no key dropped, no parameter left at init")
    trace, seen = run.ran("03_hidden_state_tracing"), run.seen()
    if trace is None:
        unchecked.append("what the target hands the draft: give the target's config")
    elif not seen.served_config:
        unchecked.append(f"whether fc runs as served: {seen.served_config_why}")
    else:
        holds += _traced(trace)
    offline = run.ran("05_offline_acceptance")
    if offline is None:
        step = run.step("05_offline_acceptance")
        unchecked.append(f"the expected accept length: {step.reason if step else 'not run'}")
    else:
        holds += _measured(offline.records.get("summary", {}), offline.records)
    faults = [f for f in run.findings if f.root_cause or f.severity >= Severity.ERROR]
    diff = run.differential
    healthy = diff is None and not faults and bool(holds)
    if diff is not None:
        headline = _floor_headline(diff)
    elif healthy:
        headline = "healthy: " + "; ".join(holds)
    elif faults:
        headline = _count(list(dict.fromkeys(f.code for f in faults)), "finding")
    else:
        headline = "no root cause found in what was checked"
    return Verdict(headline, healthy, tuple(holds), tuple(unchecked))


def _traced(trace: StepResult) -> list[str]:
    s = trace.records.get("summary", {})
    codes = {f.code for f in trace.findings if f.severity >= Severity.WARNING}
    held = []
    if s.get("fc_applied") and not codes:
        held.append(
            f"fc runs on {len(s['captured_layers'])} target states {s['captured_layers']} "
            f"({s['hidden_width']} → {s.get('draft_hidden')} wide)"
        )
    matched = s.get("captured_layers") and s["captured_layers"] == s.get("trained_layers")
    if matched and not codes & AUX_CODES:
        held.append(f"aux ids match training (states {s['trained_layers']})")
    return held


def _measured(summary: dict[str, Any], records: dict[str, Any]) -> list[str]:
    """The healthy figure with its interval, and the deployment's beside it."""
    healthy = summary.get("expected accept len (healthy)")
    if healthy is None:
        return []
    lo, hi = records.get("expected_accept_len_ci", [healthy, healthy])
    held = [f"expected accept length {healthy:.2f} [{lo:.2f}, {hi:.2f}]"]
    deployed = summary.get("accept len as deployed")
    if deployed is not None and lo <= deployed <= hi:
        held.append(f"as deployed {deployed:.2f}, within the healthy interval")
    return held


def _floor_headline(diff: Differential) -> str:
    confirmed = [a.cause.short for a in diff.confirmed]
    parts = [_count(confirmed, "confirmed cause") if confirmed else "no cause confirmed"]
    if diff.leading is not None:
        parts.append(f"leading remaining suspect: {diff.leading.cause.short} (unverified)")
    where = (
        "acceptance at the floor" if diff.floor else "accept len below what the draft should reach"
    )
    return f"{where}; {'; '.join(parts)}"
