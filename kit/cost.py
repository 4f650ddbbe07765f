"""What a fault costs: a finding at error says what it was measured to cost, or that it was not.

Some faults stop the server (a refused config, a crash) and their cost is plain. Others leave
it running with a draft that computes another function than the one trained: aux states one
layer off, a trained module skipped, a head replaced. Such a fault costs anything from nothing
measurable to the floor, depending on the draft, so its severity cannot be a constant. A load
replay or a trace cannot measure it: its finding says the cost is unmeasured and how to measure
it. Offline acceptance on the user's own target and draft (`doctor --target`) measures the
deployment against the healthy wiring on the same prompts; the finding's severity then follows
that measurement: a loss beyond the prompts' noise keeps it at error, no such loss makes it a
warning.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kit.findings import Finding, Severity

# Faults that leave the server running with a draft computing otherwise than trained.
COSTED = frozenset(
    {
        "AUX_LAYER_OFFSET",
        "AUX_IDS_IGNORED",
        "TRAINED_MODULE_SKIPPED",
        "INPUT_NORM_DISCARDED",
        "TRAINED_NORM_UNUSED",
        "TIED_HEAD_DROPPED",
        "TRAINED_FLAG_IGNORED",
    }
)
UNMEASURED = "cost unmeasured"
HOW = (
    "python -m kit doctor DRAFT --target TARGET --engine ENGINE==X measures the deployment "
    "against the healthy wiring offline"
)


def unmeasured(f: Finding) -> Finding:
    """`f` at error or above, saying its cost was not measured and how to measure it."""
    if f.code not in COSTED or f.severity < Severity.ERROR or "cost" in f.data:
        return f
    line = f"{UNMEASURED}: what this costs depends on the draft; {HOW}"
    return replace(f, evidence=(*f.evidence, line), data={**f.data, "cost": {"measured": False}})


def priced(findings: list[Finding], vs_healthy: dict[str, Any] | None) -> list[Finding]:
    """The costed findings given the deployment's offline comparison with healthy (a
    `Comparison.to_dict()`); the others unchanged."""
    if vs_healthy is None:
        return list(findings)
    return [_priced(f, vs_healthy) if f.code in COSTED else f for f in findings]


def _priced(f: Finding, c: dict[str, Any]) -> Finding:
    lo, hi = c["difference_ci"]
    figures = (
        f"{c['b']} {c['b_value']:.3f} against {c['a']} {c['a_value']:.3f}: difference "
        f"{c['difference']:+.3f} [{lo:.3f}, {hi:.3f}]"
    )
    lost = c["beyond_noise"] and c["difference"] < 0
    if lost:
        line = f"measured offline: the deployment loses acceptance beyond the prompts' noise ({figures})"
        severity, root = f.severity, f.root_cause
    else:
        line = (
            "measured offline: the deployment as a whole shows no loss beyond the prompts' "
            f"noise ({figures}), so this costs nothing measurable on this pair"
        )
        severity, root = min(f.severity, Severity.WARNING), False
    kept = tuple(e for e in f.evidence if not e.startswith(UNMEASURED))
    cost = {"measured": True, "loss": lost, "comparison": c}
    return replace(
        f, severity=severity, root_cause=root, evidence=(*kept, line), data={**f.data, "cost": cost}
    )
