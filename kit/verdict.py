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

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.checkpoint.draft import Draft, open_draft
from kit.engines import EngineRelease
from kit.engines.vocab import Outcome
from kit.errors import KitError, require_inputs
from kit.findings import Finding, Severity, ranked

if TYPE_CHECKING:
    from kit.checkpoint.config import TargetConfig
    from kit.deployment import Served
    from kit.tracing.capture import CaptureReport

DEFAULT_ENGINE = "sglang==0.5.10"


@dataclass
class Diagnosis:
    """The findings of every check that ran, root causes first, and the checks that did not."""

    engine: str
    checks: dict[str, list[Finding]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        """Root causes first; what a running engine was seen to do (`doctor --watch`) above
        every prediction."""
        from kit.watch.as_evidence import CHECK, observed_first

        seen: dict[tuple[str, str], Finding] = {}
        for name, found in self.checks.items():
            for f in found if name != CHECK else ():
                seen.setdefault((f.code, f.title), f)
        return observed_first(ranked(seen.values()), self.checks.get(CHECK, []))

    @property
    def root_causes(self) -> list[Finding]:
        return [f for f in self.findings if f.root_cause]

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
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
    from kit.engines import parse_engine, release_findings
    from kit.load.findings import reconcile

    seen = None
    if watch is not None:
        from kit.watch.as_evidence import observed

        seen = observed(watch)
        draft, engine = draft or seen.draft, engine or seen.engine
        target_config = target_config or seen.target
    require_inputs(draft, target_config, draft_config, *logs, baseline_log, target, train_tokenizer)
    served = None
    if launch is not None:
        from kit.deployment.lines import read_served

        served = read_served(launch, engine)
    release = served.release if served else parse_engine(engine or DEFAULT_ENGINE)
    report = Diagnosis(str(release))
    if seen is not None:
        from kit.watch.as_evidence import CHECK

        report.checks[CHECK] = seen.findings
        report.facts.update(seen.facts)
    if assumed := release_findings(release):
        report.checks["release"] = assumed
    # each input opened once: every check below takes these values, never the paths again
    opened = open_draft(draft) if draft is not None else None
    traced = open_draft(draft_config, weights=False) if draft_config is not None else opened
    target_cfg = _target_config(target_config)
    runs = _parse_logs(logs, report.engine, num_draft_tokens) if logs else []
    ran = any(r.window_count for r in runs)  # a log with acceptance figures: the server ran
    _load(report, opened, release, server_ran=ran)
    capture = _capture(report, traced, target_cfg, release, target_class, aux_capture)
    if capture is not None:
        _logged_layers(report, runs, capture)
    remote = [p for p in (draft, target) if is_remote(p)]
    if target is not None and opened is not None and opened.checkpoint is not None and not remote:
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
        report.skipped["offline"] = "needs a draft checkpoint and --target"
    _acceptance(report, runs, baseline_log, num_draft_tokens, expected_accept_len)
    if served is not None or (target_cfg is not None and traced is not None):
        observed = [r.accept_len.mean for r in runs if r.accept_len.mean is not None]
        deployment(report, served, traced, target_cfg, train_tokenizer, observed)
    else:
        report.skipped["deployment"] = "no launch line, or no target config and draft given"
    return report


def _parse_logs(logs: Sequence[str | Path], engine: str, num_draft_tokens: int | None) -> list:
    from kit.acceptance import parse_files

    return parse_files([Path(p) for p in logs], engine=engine, num_draft_tokens=num_draft_tokens)


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
) -> CaptureReport | None:
    if target_cfg is None or traced is None:
        report.skipped["capture"] = (
            "no target config given" if target_cfg is None else "no draft or draft config given"
        )
        return None
    from kit.tracing.capture import simulate_capture

    capture = simulate_capture(
        target_cfg, traced.draft_config, release, target_class=target_class, aux_capture=aux_capture
    )
    report.checks["capture"] = list(capture.findings)
    report.facts.update(hidden_width=capture.hidden_width, fc_applied=capture.fc_applied)
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
