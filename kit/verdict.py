"""`doctor`: every check of the notebooks in one call, without Jupyter, findings ranked.

The same library calls the notebooks make (inspection, load replay, aux-capture trace, log analysis,
offline acceptance), run on whatever inputs are given; a check whose input is absent is listed as
skipped with the reason, so a verdict never hides what it did not look at.

Evidence is reconciled before it is ranked: a server log with acceptance figures proves the server
ran, so a config.json that release would refuse cannot be the one it served. The refusal then
becomes a note (`CONFIG_NOT_SERVED`) and the keys are judged as the release loads them under its
own config form (what `fix --for` writes).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.checkpoint.draft import Draft, open_draft
from kit.differential import Differential, LogPoint, Seen
from kit.engines import EngineRelease
from kit.engines.vocab import Outcome
from kit.errors import KitError, require_inputs
from kit.findings import Finding, Severity, ranked, with_inputs
from kit.release_choice import DEFAULT_ENGINE, ReleaseChoice

if TYPE_CHECKING:
    from kit.checkpoint.config import TargetConfig
    from kit.deployment import Served
    from kit.tracing.capture import CaptureReport
    from kit.verdict_summary import Verdict

__all__ = ["DEFAULT_ENGINE", "Diagnosis", "diagnose"]


@dataclass
class Diagnosis:
    """The findings of every check that ran, root causes first, and the checks that did not."""

    engine: str
    checks: dict[str, list[Finding]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why
    facts: dict[str, Any] = field(default_factory=dict)
    release: ReleaseChoice | None = None  # how `engine` was chosen
    seen: Seen = field(default_factory=Seen)  # the evidence the verdict rests on
    logs: list[LogPoint] = field(default_factory=list)  # each server log, in the order given
    capture: CaptureReport | None = field(default=None, repr=False)  # the hand-over traced

    @property
    def findings(self) -> list[Finding]:
        """Root causes first; what a running engine was seen to do (`doctor --watch`) above
        every prediction."""
        from kit.watch.as_evidence import CHECK, observed_first

        seen: dict[tuple[str, str], Finding] = {}
        for name, found in self.checks.items():
            for f in found if name != CHECK else ():
                seen.setdefault((f.code, f.title), f)
        found = observed_first(ranked(seen.values()), self.checks.get(CHECK, []))
        inputs = {"draft": self.seen.draft, "target": self.seen.target_dir, "release": self.engine}
        return with_inputs(found, inputs)

    @property
    def root_causes(self) -> list[Finding]:
        return [f for f in self.findings if f.root_cause]

    @property
    def differential(self) -> Differential | None:
        """Every cause of the symptom the logs show, confirmed, ruled out or unverified."""
        from kit.differential import diagnose as differential

        return differential(self.findings, self.seen, self.logs)

    @property
    def verdict(self) -> Verdict:
        """The answer in one line, what the checks found right, and what they could not see."""
        from kit.verdict_summary import summarise

        return summarise(self)

    def to_dict(self) -> dict[str, Any]:
        diff = self.differential
        return {
            "engine": self.engine,
            "release": self.release.to_dict() if self.release else None,
            "verdict": self.verdict.to_dict(),
            "differential": diff.to_dict() if diff else None,
            "checks_run": list(self.checks),
            "checks_skipped": self.skipped,
            "facts": self.facts,
            "findings": [f.to_dict() for f in self.findings],
        }


def diagnose(
    draft: str | Path | None = None,
    *,
    target_config: str | Path | None = None,
    draft_config: str | Path | None = None,
    engine: str | None = None,
    logs: Sequence[str | Path] = (),
    baseline_log: str | Path | None = None,
    target_class: str | None = None,
    aux_capture: bool | None = None,
    num_draft_tokens: int | None = None,
    expected_accept_len: float | None = None,
    target: str | Path | None = None,
    num_prompts: int | None = None,
    launch: str | Path | None = None,
    train_tokenizer: str | Path | None = None,
    watch: str | Path | None = None,
) -> Diagnosis:
    """Run every check the inputs allow. A `watch` report (`python -m kit watch`) is evidence
    from the running engine, ranked above every prediction; the draft, target and release it
    names are used where not given. `draft_config` (default: the draft's) is what is traced;
    a transformers `target` adds offline acceptance, whose healthy figure becomes the expected
    accept length the logs are judged against (unless `expected_accept_len` is given). A
    `launch` line adds the deployment check and, without `engine`, names the release."""
    from kit.checkpoint.hub import is_remote
    from kit.cost import priced
    from kit.engines import release_findings
    from kit.load.findings import reconcile
    from kit.tracing.positions import late_positions_finding

    seen = None
    if watch is not None:
        from kit.watch.as_evidence import observed

        seen = observed(watch)
        draft, engine = draft or seen.draft, engine or seen.engine
        target_config = target_config or seen.target
    require_inputs(draft, target_config, draft_config, *logs, baseline_log, target, train_tokenizer)
    served, release_choice, runs = _release(engine, launch, logs, num_draft_tokens)
    release = release_choice.release
    report = Diagnosis(str(release), release=release_choice)
    if seen is not None:
        from kit.watch.as_evidence import CHECK

        report.checks[CHECK] = seen.findings
        report.facts.update(seen.facts)
    if assumed := release_findings(release):
        report.checks["release"] = assumed
    # each input opened once: every check below takes these values, never the paths again
    opened = open_draft(draft) if draft is not None else None
    traced = open_draft(draft_config, weights=False) if draft_config is not None else opened
    # the target's own config.json when only the target folder is given: its capture is traced
    target_cfg = _target_config(
        target_config or (target if target and not is_remote(target) else None)
    )
    ran = any(r.window_count for r in runs)  # a log with acceptance figures: the server ran
    _load(report, opened, release, server_ran=ran)
    graphs = served is not None and "cuda_graph" in served.facts  # decode replays CUDA graphs
    capture = _capture(report, traced, target_cfg, release, target_class, aux_capture, graphs)
    if capture is not None:
        _logged_layers(report, runs, capture)
    remote = [p for p in (draft, target) if is_remote(p)]
    has_weights = opened is not None and opened.checkpoint is not None
    if target is not None and has_weights and not remote:
        k = num_draft_tokens - 1 if num_draft_tokens and num_draft_tokens > 1 else None
        findings, facts = offline(
            opened, target, release, aux_capture, num_prompts, target_class, k, target_cfg
        )
        report.checks["offline"] = reconcile(findings, server_ran=ran)
        report.facts.update(facts)
        for name, found in report.checks.items():  # the costs the offline rows measured
            report.checks[name] = priced(found, facts.get("offline_vs_healthy"))
        if expected_accept_len is None:
            expected_accept_len = report.facts.get("offline_accept_len_healthy")
    elif target is not None and draft is not None and remote:
        report.skipped["offline"] = (
            "needs the weights on disk, not only their Hub headers: --download"
        )
    else:
        report.skipped["offline"] = _offline_missing(draft, target, has_weights)
    named = release_choice.basis != "default"  # a release the inputs name, not the kit's guess
    if named and "offline" not in report.checks and (late := late_positions_finding(release)):
        report.checks.setdefault("release", []).append(late)  # its cost needs the target
    _acceptance(report, runs, baseline_log, num_draft_tokens, expected_accept_len)
    chain = _chain(runs, num_draft_tokens, release)
    if served is not None or (traced is not None and (target_cfg is not None or chain)):
        observed = [r.accept_len.mean for r in runs if r.accept_len.mean is not None]
        deployment(report, served, traced, target_cfg, train_tokenizer, observed, chain)
    else:
        report.skipped["deployment"] = _deployment_missing(traced, target_cfg)
    report.seen = _seen(report, draft, launch, has_weights, capture, seen is not None, aux_capture)
    report.seen = replace(
        report.seen,
        server_ran=ran,
        capture_notes=_capture_elsewhere(report, traced, target_cfg, target_class, ran),
        target_dir=_given(target or target_config),
        tokenizer=_tokenizer_seen(target),
    )
    report.logs = [_point(r, report) for r in runs if r.spec_windows]
    if capture is not None and not report.seen.served_config and aux_capture is None:
        width = report.facts["hidden_width"]
        report.facts["hidden_width"] = f"{width} if the server read the config kit fix writes"
        report.facts["fc_applied"] = f"unverified: {report.seen.served_config_why}"
    return report


def _release(
    engine: str | None, launch: str | Path | None, logs: Sequence[str | Path], ndt: int | None
) -> tuple[Served | None, ReleaseChoice, list]:
    """The launch line, the release judged and the logs, read once each: the release comes from
    `--engine`, else from what the launch line and the logs allow together
    (`kit.release_choice`); the launch line is then read under that release."""
    from kit.release_choice import choose, engine_name, is_release

    served = None
    if launch is not None:
        from kit.deployment.lines import read_served

        served = read_served(launch, engine)
    name = engine_name(engine) or (served.command.engine if served else None)
    runs = _parse_logs(logs, engine if is_release(engine) else name, ndt) if logs else []
    if served is not None and served.release_given:
        choice = choose(engine)
    else:
        launch_engine = served.command.engine if served else None
        fitting = served.fitting if served else None
        choice = choose(engine, launch_engine=launch_engine, launch_fitting=fitting, runs=runs)
        if served is not None:
            served = read_served(launch, str(choice.release))
    return served, choice, runs


def _offline_missing(draft: object, target: object, has_weights: bool) -> str:
    """What offline acceptance lacks, exactly: the target, the draft, or the draft's weights."""
    if target is None and draft is None:
        return "needs --draft (a checkpoint) and --target (a transformers target folder)"
    if target is None:
        return "needs --target (a transformers target folder with weights)"
    if draft is None:
        return "needs --draft (the draft checkpoint)"
    return "needs the draft's weights: the --draft folder holds only a config" * (not has_weights)


def _deployment_missing(traced: Draft | None, target_cfg: TargetConfig | None) -> str:
    if traced is None and target_cfg is None:
        return "needs --launch, or --draft and --target-config"
    return "needs --launch, or " + ("--target-config" if target_cfg is None else "--draft")


def _seen(
    report: Diagnosis,
    draft: str | Path | None,
    launch: str | Path | None,
    has_weights: bool,
    capture: CaptureReport | None,
    watched: bool,
    aux_capture: bool | None,
) -> Seen:
    """The evidence the verdict rests on: what the differential may rule out, and what not."""
    from kit.differential import config_not_served

    why = config_not_served(report.checks.get("capture", []), report.engine)
    if capture is None:
        why = "no draft config and target config traced"
    return Seen(
        weights=has_weights,
        served_config=capture is not None and not why,
        served_config_why=why,
        target=capture is not None,
        launch=launch is not None,
        engine_observed=watched,
        aux_capture_given=aux_capture,
        widths_equal=capture.target_hidden == capture.draft_hidden if capture else None,
        draft=_given(draft),
        launch_text=_runnable(launch),
        release=report.engine,
    )


def _capture_elsewhere(
    report: Diagnosis,
    traced: Draft | None,
    target_cfg: TargetConfig | None,
    target_class: str | None,
    server_ran: bool,
) -> tuple[str, ...]:
    """Where the evidence allows several releases and the target class cannot capture in some
    of them, a server that ran there can only have run with capture off: said, per release."""
    choice = report.release
    if not (server_ran and choice and len(choice.fitting) > 1 and traced and target_cfg):
        return ()
    from kit.engines import parse_engine
    from kit.tracing.capture import simulate_capture

    notes = []
    for version in choice.fitting:
        rel = parse_engine(f"{choice.release.name}=={version}")
        if rel == choice.release:
            continue
        cap = simulate_capture(target_cfg, traced.draft_config, rel, target_class)
        if cap.startup_error:
            notes.append(
                f"on {rel}, which the evidence also allows, {cap.startup_error}: a server that "
                "ran there ran with aux capture off, so fc was bypassed"
            )
    return tuple(notes)


def _tokenizer_seen(target: str | Path | None) -> bool:
    from kit.checkpoint.hub import is_remote
    from kit.checkpoint.tokenizer import has_tokenizer

    return target is not None and not is_remote(target) and has_tokenizer(Path(target))


def _given(path: str | Path | None) -> str | None:
    return str(path) if path is not None else None


def _runnable(launch: str | Path | None) -> str | None:
    """The launch as a command to paste after `kit watch --`: a script run by sh, a line as is."""
    if launch is None:
        return None
    try:
        is_file = Path(launch).is_file()
    except OSError:  # a launch line longer than a file name may be
        is_file = False
    return f"sh {shlex.quote(str(launch))}" if is_file else str(launch)


def _point(run: Any, report: Diagnosis) -> LogPoint:
    """A log's place in the sequence: its mean accept length, and whether acceptance sits at
    the floor there, or below what the draft should reach (the acceptance check's verdicts)."""
    from kit.differential import FLOOR_CODES, LOW_CODES

    said = {f.code for f in report.checks.get("acceptance", []) if f.data.get("run") == run.source}
    low = bool(said & LOW_CODES)
    return LogPoint(Path(run.source).name, run.accept_len.mean, bool(said & FLOOR_CODES), low)


def _parse_logs(logs: Sequence[str | Path], engine: str, num_draft_tokens: int | None) -> list:
    from kit.acceptance import parse_files

    return parse_files([Path(p) for p in logs], engine=engine, num_draft_tokens=num_draft_tokens)


def _chain(runs: list, num_draft_tokens: int | None, release: EngineRelease) -> tuple | None:
    """Drafts per verify step as the logs show them (else as --num-draft-tokens gives them, in
    the release's count), and where they were read: checked against the draft's training."""
    from kit.acceptance.meaning import draft_steps

    shown = [(k, Path(r.source).name) for r in runs if (k := draft_steps(r))]
    if shown:
        k, name = max(shown)
        return k, f"the drafts per step {name} shows"
    if num_draft_tokens:
        k = num_draft_tokens - 1 if release.name == "sglang" else num_draft_tokens
        return (k, f"--num-draft-tokens {num_draft_tokens}") if k > 0 else None
    return None


def _target_config(path: str | Path | None) -> TargetConfig | None:
    from kit.checkpoint.config import load_target_config

    return load_target_config(path) if path is not None else None


def _load(report: Diagnosis, draft: Draft | None, release: EngineRelease, server_ran: bool) -> None:
    """Inspection and the load replay; with proof the server ran, a refused config is
    reconciled (the config given is not the one served)."""
    if draft is None or draft.checkpoint is None:
        why = "no draft checkpoint given" if draft is None else "the draft path holds no weights"
        report.skipped["inspection"] = report.skipped["load"] = why
        return
    from kit.checkpoint.inspection import StatsRead, inspect_checkpoint
    from kit.load.findings import served_findings
    from kit.load.replay import simulate_load

    inspection = inspect_checkpoint(draft, stats=StatsRead.SAMPLED)
    report.checks["inspection"] = list(inspection.findings)
    report.facts["format"] = inspection.format.name
    if draft.raw is None:  # inspection names it (CONFIG_MISSING); no release builds a draft blind
        report.skipped["load"] = "the checkpoint has no config.json beside it"
        return
    load = simulate_load(draft.checkpoint, draft.draft_config, release)
    report.checks["load"] = served_findings(load) if server_ran else list(load.findings)
    report.facts["keys dropped silently"] = len(load.as_served.with_outcome(Outcome.DROPPED))


def _capture(
    report: Diagnosis,
    traced: Draft | None,
    target_cfg: TargetConfig | None,
    release: EngineRelease,
    target_class: str | None,
    aux_capture: bool | None,
    cuda_graph: bool = False,
) -> CaptureReport | None:
    """The hand-over as the release captures it; under CUDA graphs (the launch line does not
    disable them) the layers graph-replayed batches capture, where a release differs there."""
    if target_cfg is None or traced is None:
        report.skipped["capture"] = (
            "no target config given" if target_cfg is None else "no draft or draft config given"
        )
        return None
    from kit.tracing.capture import simulate_capture

    capture = simulate_capture(
        target_cfg, traced.draft_config, release, target_class, aux_capture, cuda_graph
    )
    from kit.load.findings import flags_ignored
    from kit.load.replay import served_config

    report.checks["capture"] = list(capture.findings)
    # a trained flag the release ignores is the trace's finding too (`trace_draft`), so doctor
    # names it when no checkpoint was given for the load replay to find it in
    if "load" not in report.checks:  # what the load replay would have named, the trace names
        from kit.tracing.capture import constructor_crash

        served = served_config(traced.draft_config, release)[0]
        flags, crash = flags_ignored(served, release), constructor_crash(served, release)
        report.checks["capture"] += [f for f in (flags, crash) if f is not None]
    report.facts.update(hidden_width=capture.hidden_width, fc_applied=capture.fc_applied)
    report.capture = capture
    return capture


def _logged_layers(report: Diagnosis, runs: list, capture: CaptureReport) -> None:
    """The aux layers the engine's own log says it captures, against the kit's prediction for
    the release: a disagreement means the kit's table is wrong for this engine (a new release,
    a patched fork), so it is said, naming both."""
    logged = next((r.facts["aux_layers"] for r in runs if "aux_layers" in r.facts), None)
    if logged is None:
        return
    report.facts["aux_layers_logged"] = logged
    if capture.aux_capture and list(logged) != list(capture.engine_layer_ids):
        report.checks["capture"].append(
            Finding(
                code="CAPTURE_MODEL_DISAGREES",
                severity=Severity.ERROR,
                title=f"the engine's log says it captures layers {logged}; the kit predicts "
                f"{capture.engine_layer_ids} for {capture.engine}",
                evidence=(
                    f"logged: Using auxiliary layers from speculative config: {tuple(logged)}",
                    f"the kit's rule for {capture.engine}: {capture.engine_layer_ids}",
                ),
                fix="trust the log: the kit's capture table is wrong for this engine (a newer "
                "release or a patched build); report the release and this line",
                engine=capture.engine,
            )
        )


def _acceptance(
    report: Diagnosis,
    runs: list,
    baseline_log: str | Path | None,
    num_draft_tokens: int | None,
    expected: float | None,
) -> None:
    if not runs:
        report.skipped["acceptance"] = "no server log given"
        return
    from kit.acceptance import analyze

    baseline = None
    if baseline_log is not None:
        baseline = _parse_logs([baseline_log], report.engine, num_draft_tokens)[0]
    analysis = analyze(runs, baseline=baseline, expected_accept_len=expected)
    report.checks["acceptance"] = list(analysis.findings)
    if ci := report.facts.get("offline_accept_len_healthy_ci"):
        report.facts["logs_against_offline_healthy_ci"] = {
            r.source: _against(r.accept_len.mean, ci) for r in runs
        }


def deployment(
    report: Diagnosis,
    served: Served | None,
    draft: str | Path | Draft | None,
    target_config: str | Path | TargetConfig | None,
    train_tokenizer: str | Path | None,
    observed_accept_lens: Sequence[float],
    chain: tuple[int, str] | None = None,
) -> None:
    """The deployment check; an observed near-zero accept length is handed over only when no
    other check already explains it (a quantized target is then a root cause). The draft and
    target config already opened are handed over as they are, not read again."""
    from kit.deployment import check

    explained = any(f.root_cause for found in report.checks.values() for f in found)
    accept_len = min(observed_accept_lens) if observed_accept_lens and not explained else None
    result = check(
        served,
        draft=draft,
        target_config=target_config,
        engine=report.engine,
        train_tokenizer=train_tokenizer,
        accept_len=accept_len,
        chain=chain,
    )
    report.checks["deployment"] = list(result.findings)
    if served is not None:
        report.facts["launch judged as"] = str(served.release)


def _against(logged: float | None, ci: list[float]) -> str:
    """Where a log's mean accept len falls against the offline interval."""
    if logged is None:
        return "no accept len in the log"
    where = "below" if logged < ci[0] else "above" if logged > ci[1] else "within"
    return f"{logged:.3f} is {where} [{ci[0]:.3f}, {ci[1]:.3f}]"


def offline(
    draft: Draft,
    target: str | Path,
    release: Any,
    aux_capture: bool | None,
    num_prompts: int | None = None,
    target_class: str | None = None,
    k: int | None = None,
    target_cfg: TargetConfig | None = None,
) -> tuple[list[Finding], dict[str, Any]]:
    """Offline acceptance as the deployment runs it (the release's load, its capture for the
    target class unless `aux_capture` is False), judged against the healthy wiring; whether the
    config's aux ids are off by one (`aux_shift`); and the gap between raw and chat-template
    prompts when the target's tokenizer has a template.

    Both rows count as the release counts, at the deployment's chain length `k` (default 5).
    `target_cfg`, the config already read for the command, is reused when it is the target's.
    The deployment's findings are its row's (a wiring the release cannot run is its crash
    finding); the facts carry each figure with its interval.
    """
    from kit.offline_acceptance import as_deployed, format_gap_finding, healthy, prompt_format_gap
    from kit.offline_acceptance.aux_shift import aux_shift_finding
    from kit.offline_acceptance.prompts import default_prompts_file, load_prompts
    from kit.offline_acceptance.target import load_target

    target = Path(target)
    prompts = None
    if num_prompts:
        prompts = load_prompts(default_prompts_file(target))[:num_prompts]
    common = {"prompts": prompts, "progress": False, "count_as": str(release), "k": k or 5}
    common["target_config"] = _config_of(target, target_cfg)
    common["target"] = load_target(target)
    ref = healthy(target, draft, **common)
    deployed = as_deployed(
        target,
        draft,
        str(release),
        aux_capture=aux_capture,
        target_class=target_class,
        against=ref,
        **common,
    )
    findings = list(deployed.findings)
    if (shifted := aux_shift_finding(target, draft, ref, **common)) is not None:
        findings.append(shifted)
    facts: dict[str, Any] = {}
    if deployed.vs_healthy is not None:
        facts["offline_vs_healthy"] = deployed.vs_healthy.to_dict()
    for name, row in (("healthy", ref), ("as_deployed", deployed)):
        if row.result is not None:
            facts[f"offline_accept_len_{name}"] = round(row.result.accept_len, 4)
            facts[f"offline_accept_len_{name}_ci"] = row.result.accept_len_ci.to_list()
            if row.result.undetermined:  # a best case: the engine reaches anything down to 1.00
                facts[f"offline_accept_len_{name}_range"] = list(row.result.accept_len_range)
        else:
            facts[f"offline_{name}"] = f"does not run: {row.crash.title if row.crash else '?'}"
    if _has_chat_template(target) and (gap := prompt_format_gap(target, draft, raw=ref, **common)):
        findings.append(format_gap_finding(gap))
        facts["offline_accept_len_chat_template"] = round(gap.b, 4)
    return findings, facts


def _config_of(target: Path, given: TargetConfig | None) -> TargetConfig:
    """The target folder's config: `given` when it was read from that folder, else read now."""
    from kit.checkpoint.config import load_target_config

    if (
        given is not None
        and given.path is not None
        and given.path.resolve().parent == target.resolve()
    ):
        return given
    return load_target_config(target)


def _has_chat_template(target: Path) -> bool:
    """Whether the target's tokenizer has the template a chat endpoint renders requests with
    (the tokenizer the deployment check reads too: `load_tokenizer` loads it once). A folder
    whose tokenizer does not load has none here: the deployment check reports that error."""
    from kit.checkpoint.tokenizer import has_tokenizer, load_tokenizer

    if not has_tokenizer(target):
        return False
    try:
        return bool(load_tokenizer(target).chat_template)
    except KitError:
        return False
