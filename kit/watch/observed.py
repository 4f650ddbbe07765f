"""Findings from what the running engine did, as a watch report recorded it.

These rank above every prediction: they are what this engine did with this draft, not what the
kit's tables say a release would do. Each one names the hook it was seen through.
"""

from __future__ import annotations

from typing import Any

from kit.errors import KitError
from kit.findings import Finding, Severity

OBSERVED = "observed in the running engine"
LOAD_HOOK = {
    "vllm": "vllm/model_executor/models/llama_eagle3.py Eagle3LlamaForCausalLM.load_weights "
    "(returns None: model_loader/default_loader.py:562 check skipped)",
    "sglang": "sglang/srt/models/llama_eagle3.py:243 LlamaForCausalLMEagle3.load_weights",
}
FORWARD_HOOK = {
    "vllm": "vllm/v1/spec_decode/llm_base_proposer.py:550 combine_hidden_states (first propose)",
    "sglang": "sglang/srt/models/llama_eagle3.py:176 LlamaModel.forward (first call)",
}
STATS_HOOK = {
    "vllm": "vllm/v1/core/sched/scheduler.py:2961 Scheduler.make_spec_decoding_stats",
    "sglang": "sglang/srt/observability/scheduler_metrics_mixin.py:180 "
    "Scheduler.update_spec_metrics",
}


def engine_of(report: dict[str, Any]) -> tuple[str, str | None]:
    """("vllm", "vllm==0.32.0") from the report's engine section."""
    eng = report.get("engine") or {}
    name = eng.get("name", "vllm")
    ver = str(eng.get("version", "")).split("+")[0]
    return name, (f"{name}=={ver}" if ver and ver != "unknown" else None)


def first_crash(report: dict[str, Any]) -> dict[str, Any] | None:
    """The earliest exception any process saw: the root; the others are it unwinding (a worker
    raises, its engine core reports that the worker failed, the front end that the core did)."""
    crashes = list((report.get("crashes") or {}).values())
    return min(crashes, key=lambda c: c.get("at", 0)) if crashes else None


def crash_findings(report: dict[str, Any]) -> list[Finding]:
    crash = first_crash(report)
    if not crash:
        return []
    name, release = engine_of(report)
    tb = [line for line in crash.get("traceback", "").strip().splitlines() if line.strip()]
    return [
        Finding(
            code="OBSERVED_STARTUP_CRASH",
            severity=Severity.CRITICAL,
            title=f"the engine failed: {crash['type']}: {crash['message']}",
            evidence=(f"{OBSERVED} ({crash.get('where', '?')}, pid {crash.get('pid')})", *tb[-3:]),
            fix="the exception names the key or config field; `python -m kit doctor --draft DIR` "
            "ranks the fix",
            engine=release,
            source=LOAD_HOOK.get(name) if "load_weights" in crash.get("where", "") else None,
            root_cause=True,
            data={"crash": crash},
        )
    ]


def load_findings(report: dict[str, Any]) -> list[Finding]:
    load = report.get("load")
    if not load or load.get("error"):
        return []
    name, release = engine_of(report)
    params = load.get("params", [])
    unwritten = [p for p in params if p["state"] in ("never_written", "partly_written")]
    skipped = [
        k["key"]
        for k in load.get("keys", [])
        if not k["written_to"] and not k.get("consumed_as") and k["key"] != "t2d"
    ]
    out: list[Finding] = []
    if unwritten:
        out.append(_unwritten(unwritten, skipped, load, name, release))
    elif skipped:
        rules = load_rules(load, skipped)
        out.append(
            Finding(
                code="OBSERVED_KEYS_SKIPPED",
                severity=Severity.WARNING,
                title=f"{len(skipped)} checkpoint key(s) reached no parameter: {_names(skipped)}",
                evidence=(f"{OBSERVED}: handed to the loader, nothing written from them", *rules),
                fix="check that the engine's config skips them on purpose (see the disagreement "
                "findings, if any)",
                engine=release,
                source=LOAD_HOOK.get(name),
                data={"keys": skipped},
            )
        )
    return out


def load_rules(load: dict[str, Any], keys: list[str]) -> list[str]:
    """The engine's rule for each skipped key, where the hook could name it."""
    by_key = {k["key"]: k.get("skipped_by") for k in load.get("keys", [])}
    grouped: dict[str, list[str]] = {}
    for k in keys:
        if by_key.get(k):
            grouped.setdefault(by_key[k], []).append(k)
    return [f"{rule}: {_names(names, 3)}" for rule, names in grouped.items()]


def _unwritten(
    unwritten: list[dict[str, Any]],
    skipped: list[str],
    load: dict[str, Any],
    name: str,
    release: str | None,
) -> Finding:
    names = [p["name"] for p in unwritten]
    evidence = [
        f"{OBSERVED}: {len(names)} draft parameter(s) the loader never wrote: {_names(names)}",
    ]
    if skipped:
        evidence.append(f"keys handed in and placed nowhere: {_names(skipped)}")
        evidence += load_rules(load, skipped)[:3]
    if load.get("returned") == "None":
        evidence.append(
            "load_weights returned None, so the engine's own 'weights not initialized from "
            "checkpoint' check never ran"
        )
    evidence.append(
        "an unwritten parameter holds whatever memory torch.empty returned: from NaN (nothing "
        "accepted) to harmless values; no acceptance can be predicted from it"
    )
    return Finding(
        code="OBSERVED_PARAMS_UNWRITTEN",
        severity=Severity.CRITICAL,
        title=f"draft started with {len(names)} parameter(s) never loaded: {_names(names, 3)}",
        evidence=tuple(evidence),
        fix="give the checkpoint the key names this engine places (`python -m kit fix --engine "
        f"{release or name}`), or add the missing tensors",
        engine=release,
        source=LOAD_HOOK.get(name),
        root_cause=True,
        data={"params": names, "skipped_keys": skipped},
    )


def forward_findings(report: dict[str, Any]) -> list[Finding]:
    ff = report.get("first_forward")
    if not ff:
        return []
    name, release = engine_of(report)
    draft = report.get("draft") or {}
    keys = [k["key"] for k in (report.get("load") or {}).get("keys", [])]
    out: list[Finding] = []
    if not ff.get("fc_ran") and any(k.startswith("fc.") or ".fc." in k for k in keys):
        out.append(_fc_not_run(ff, draft, report, name, release))
    if ff.get("nan"):
        out.append(
            Finding(
                code="OBSERVED_DRAFT_NAN",
                severity=Severity.CRITICAL,
                title="the draft's first forward produced NaN: no draft token can be accepted",
                evidence=(f"{OBSERVED}: NaN in the draft model's output at its first forward",),
                fix="an unwritten parameter or a half-precision overflow; see the load findings",
                engine=release,
                source=FORWARD_HOOK.get(name),
                root_cause=True,
            )
        )
    return out


def _fc_not_run(
    ff: dict[str, Any],
    draft: dict[str, Any],
    report: dict[str, Any],
    name: str,
    release: str | None,
) -> Finding:
    hidden = (report.get("capture") or {}).get("target_hidden_size") or draft.get("hidden_size")
    why = []
    if draft.get("use_aux_hidden_state") is False:
        why.append("the engine read use_aux_hidden_state = false from the draft's eagle_config")
    return Finding(
        code="OBSERVED_FC_NOT_RUN",
        severity=Severity.CRITICAL,
        title=f"fc never ran: the draft received width {ff.get('width')} (the target's last "
        "hidden state) instead of the captured aux states it was trained on",
        evidence=(
            f"{OBSERVED}: first draft forward, input width {ff.get('width')}, target hidden "
            f"{hidden}, fc ran: no; the checkpoint's fc weights are unused",
            *why,
        ),
        fix="remove `use_aux_hidden_state: false` from the draft config's eagle_config",
        engine=release,
        source=FORWARD_HOOK.get(name),
        root_cause=True,
        data={"width": ff.get("width"), "fc_ran": False},
    )


def acceptance_findings(report: dict[str, Any]) -> list[Finding]:
    totals = (report.get("acceptance") or {}).get("totals")
    if not totals or not totals.get("drafts"):
        return []
    name, release = engine_of(report)
    drafts, drafted, accepted = totals["drafts"], totals["draft_tokens"], totals["accepted"]
    mean = 1 + accepted / drafts
    evidence = (
        f"{OBSERVED}: {drafts} drafts, {drafted} drafted, {accepted} accepted "
        f"(the scheduler's own counts)",
        *_per_position(totals),
    )
    if name == "sglang":
        evidence += (sglang_log_figures(report, mean, drafts, drafted),)
    if accepted == 0 and drafted:
        return [
            Finding(
                code="OBSERVED_ZERO_ACCEPTANCE",
                severity=Severity.CRITICAL,
                title=f"the engine accepted none of {drafted} drafted tokens",
                evidence=evidence,
                fix="see the load and first-forward findings for the cause",
                engine=release,
                source=STATS_HOOK.get(name),
            )
        ]
    return [
        Finding(
            code="OBSERVED_ACCEPTANCE",
            severity=Severity.INFO,
            title=f"mean acceptance length {mean:.3f} as the engine counted it",
            evidence=evidence,
            engine=release,
            source=STATS_HOOK.get(name),
            data={"mean_acceptance_length": mean, **totals},
        )
    ]


def sglang_log_figures(report: dict[str, Any], mean: float, drafts: int, drafted: int) -> str:
    """The decode log's figures for these counts over the whole run: `accept len` is
    spec_num_accepted_tokens / spec_num_forward_ct, this mean; `accept rate` by the kit's table for
    the release, with D = drafted per step + 1."""
    from packaging.version import InvalidVersion, Version

    from kit.engines.base import EngineRelease, pick
    from kit.engines.sglang.acceptance import ACCEPT_RATE

    line = f"over the whole run, SGLang's decode log would print accept len {mean:.2f}"
    d = drafted // drafts + 1
    try:
        version = Version(str((report.get("engine") or {}).get("version", "")).split("+")[0])
        row = pick(ACCEPT_RATE, EngineRelease("sglang", version))
    except (InvalidVersion, KitError):
        return line + " (no accept-rate rule of the kit's covers this release)"
    if row.value is None:
        return line + f" and no accept rate ({row.source})"
    rate = row.value.rate(mean, d)
    return line + f", accept rate {rate:.2f} ({row.value.expr}, D = {d}; {row.source})"


def _per_position(totals: dict[str, Any]) -> tuple[str, ...]:
    """Acceptance at each draft position, over the drafts the engine counted per request."""
    unsplit = totals.get("unsplit_drafts", 0)
    split = totals["drafts"] - unsplit
    if not split:
        return (f"no per-position counts: the engine counted all {unsplit} drafts in sum only",)
    per_pos = [round(a / split, 3) for a in totals.get("per_position", [])]
    if not unsplit:
        return (f"per-position acceptance: {per_pos}",)
    return (f"per-position acceptance over the {split} drafts counted per request: {per_pos} "
            f"({unsplit} more counted in sum only)",)  # fmt: skip


def healthy_findings(report: dict[str, Any], others: list[Finding]) -> list[Finding]:
    """One quiet line for a draft that loaded whole and ran fc: what `doctor --watch` shows."""
    ff, load = report.get("first_forward"), report.get("load")
    if not (ff and load) or any(f.severity >= Severity.ERROR for f in others):
        return []
    _, release = engine_of(report)
    return [
        Finding(
            code="OBSERVED_HEALTHY",
            severity=Severity.INFO,
            title=f"every draft parameter loaded; first forward: width {ff.get('width')}, fc ran: "
            f"{'yes' if ff.get('fc_ran') else 'no'}, captured layers {ff.get('captured_layers')}",
            evidence=(OBSERVED,),
            engine=release,
            data={"width": ff.get("width"), "fc_ran": ff.get("fc_ran")},
        )
    ]


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" … (+{len(names) - limit})" if len(names) > limit else "")
