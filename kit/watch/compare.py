"""Where the engine's behaviour differs from what the kit's tables predict for its release.

The kit's load replay (`kit.simulate`) and trace (`kit.trace`) are run on the same draft for the
release the engine reported; every key, parameter and capture fact the two disagree on becomes a
finding that names both sides. A new release, or a patched fork, then shows up as a disagreement
instead of being misjudged by tables written for another one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.watch.observed import LOAD_HOOK, engine_of, first_crash

CODE = "KIT_MODEL_DISAGREES"


def _path(report: dict[str, Any], key: str) -> Path | None:
    draft = report.get("draft") or {}
    value = draft.get(key)
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute() and draft.get("cwd"):
        path = Path(draft["cwd"]) / path
    return path if path.exists() else None


def disagreements(report: dict[str, Any]) -> list[Finding]:
    """Findings for each fact the engine did differently from the kit's prediction."""
    name, release = engine_of(report)
    draft = _path(report, "draft_path")
    if release is None or draft is None:
        return []
    from kit.checkpoint.config import load_draft_config
    from kit.checkpoint.files import open_checkpoint
    from kit.load.replay import simulate_load

    try:
        ck, cfg = open_checkpoint(draft), load_draft_config(draft)
        predicted = simulate_load(ck, cfg, release).as_served
    except KitError as e:
        return [_disagree(release, "could not replay the load", [f"kit: {e}"], name)]
    out = []
    lines = _key_differences(report, predicted) + _crash_difference(report, predicted)
    assumed = [f.title for f in predicted.findings if f.code == "RELEASE_ASSUMED"]
    if lines and assumed:
        lines.append(f"(the kit's tables: {assumed[0]})")
    if lines:
        out.append(_disagree(release, "how the draft's keys were loaded", lines, name))
    target = _path(report, "target_path")
    if target is not None and report.get("first_forward"):
        lines = _capture_differences(report, draft, target, release)
        if lines:
            out.append(_disagree(release, "what reached the draft", lines, name))
    return out


def _disagree(release: str, what: str, lines: list[str], name: str) -> Finding:
    return Finding(
        code=CODE,
        severity=Severity.WARNING,
        title=f"the kit's model of {release} disagrees with this engine on {what}",
        evidence=tuple(lines[:8]) + ((f"… {len(lines) - 8} more",) if len(lines) > 8 else ()),
        fix="trust the observed behaviour; the kit's tables for this release need a row "
        "(docs/engines.md)",
        engine=release,
        source=LOAD_HOOK.get(name),
        data={"differences": lines},
    )


def _key_differences(report: dict[str, Any], predicted: Any) -> list[str]:
    load = report.get("load") or {}
    if load.get("error"):
        return []
    by_key = {k.key: k for k in predicted.keys}
    lines = []
    for seen in load.get("keys", []):
        pred = by_key.get(seen["key"])
        if pred is None:
            continue
        want = {pred.param} if pred.param and str(pred.outcome) in ("loaded", "consumed") else set()
        got = set(seen["written_to"])
        if want != got:
            kit_says = f"{pred.outcome} into {pred.param}" if want else f"{pred.outcome}"
            engine = f"written to {', '.join(sorted(got))}" if got else "placed nowhere"
            lines.append(f"{seen['key']}: kit predicts {kit_says}; engine: {engine}")
    states = {p.name: str(p.state) for p in predicted.params}
    for p in load.get("params", []):
        kit_state = states.get(p["name"])
        unwritten = p["state"] in ("never_written", "partly_written")
        if kit_state is not None and unwritten != (kit_state == "left_at_init"):
            lines.append(f"{p['name']}: kit predicts {kit_state}; engine: {p['state']}")
    return lines


def _crash_difference(report: dict[str, Any], predicted: Any) -> list[str]:
    crashed = bool(report.get("crashes"))
    if crashed == bool(predicted.crashed) or not (report.get("load") or crashed):
        return []
    if crashed:
        c = first_crash(report) or {}
        return [f"kit predicts a clean start; engine: {c['type']}: {c['message']}"]
    return [f"kit predicts a start-up crash ({'; '.join(predicted.errors[:1])}); engine: started"]


def _capture_differences(
    report: dict[str, Any], draft: Path, target: Path, release: str
) -> list[str]:
    from kit.checkpoint.config import load_draft_config, load_target_config
    from kit.tracing.shapes import trace_draft

    try:
        cfg, target_cfg = load_draft_config(draft), load_target_config(target)
        traced = trace_draft(target_cfg, cfg, release, None, None, False, "meta")
    except KitError as e:
        return [f"kit could not trace: {e}"]
    ff = report["first_forward"]
    lines = []
    if bool(traced.fc_applied) != bool(ff.get("fc_ran")):
        lines.append(
            f"fc: kit predicts {'applied' if traced.fc_applied else 'bypassed'}; engine: "
            f"{'ran' if ff.get('fc_ran') else 'not run'}"
        )
    if ff.get("width") is not None and traced.hidden_width != ff["width"]:
        lines.append(f"input width: kit predicts {traced.hidden_width}; engine: {ff['width']}")
    seen = ff.get("captured_layers")
    if seen is not None and list(traced.captured_layers) != list(seen):
        lines.append(f"captured layers: kit predicts {traced.captured_layers}; engine: {seen}")
    return lines
