"""Which target hidden states reach an EAGLE-3 draft in one engine release, and whether fc runs.

EAGLE-3 feeds the draft the concatenation of K auxiliary hidden states of the target. Which
layers are captured, how the draft config's ids are read, whether capture happens at all and what
the engine hands the draft instead differ by engine, release and target class: those rules live
in each engine's package (`kit.engines.<engine>.capture`). This module asks them, works out the
width that reaches the draft and whether fc runs or the first batch fails, and says what is wrong
as findings.

Layer ids are states after k decoder layers (HF `output_hidden_states[k]`, the input of layer k;
k = 0 the embedding output, k = n the final pre-norm state); a draft config's ids may be written
in another convention (`DraftConfig.aux_layer_convention`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kit.checkpoint.config import AFTER_K_LAYERS, DraftConfig, TargetConfig
from kit.cost import unmeasured
from kit.engines import ENGINES, EngineRelease, parse_engine, release_findings
from kit.engines.aux_ids import in_loop, trained_layers, trainer_default
from kit.engines.vocab import Capture, FcGate, Feed
from kit.findings import Finding, Severity, to_json

__all__ = ["CaptureReport", "Feed", "simulate_capture"]


@dataclass
class CaptureReport:
    """What the target hands the draft on the draft-extend step after each target pass.

    `captured_layers` is what eager (non-graph) target passes capture; `cuda_graph_layers` what
    batches replayed from CUDA graphs capture when a release differs there (steady-state decode
    runs from graphs). `hidden_width` is 0 when the server does not start.
    """

    engine: str
    target_class: str
    num_target_layers: int
    target_hidden: int
    draft_hidden: int
    aux_capture: bool
    config_layer_ids: list[int] | None  # ids the engine read from the draft config
    engine_layer_ids: list[int]  # the engine's own list (layers_to_capture / aux layers)
    captured_layers: list[int]
    trained_layers: list[int]  # the states the draft was trained on, same convention
    cuda_graph_layers: list[int] | None
    hidden_width: int
    fc_in_features: int
    fc_applied: bool
    feeds: Feed
    startup_error: str | None
    findings: list[Finding] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "target_class": self.target_class,
            "num_target_layers": self.num_target_layers,
            "target_hidden": self.target_hidden,
            "draft_hidden": self.draft_hidden,
            "aux_capture": self.aux_capture,
            "config_layer_ids": self.config_layer_ids,
            "engine_layer_ids": self.engine_layer_ids,
            "captured_layers": self.captured_layers,
            "trained_layers": self.trained_layers,
            "cuda_graph_layers": self.cuda_graph_layers,
            "hidden_width": self.hidden_width,
            "fc_in_features": self.fc_in_features,
            "fc_applied": self.fc_applied,
            "feeds": str(self.feeds),
            "startup_error": self.startup_error,
            "findings": to_json(self.findings),
            "sources": dict(self.sources),
        }


def simulate_capture(
    target: TargetConfig,
    draft: DraftConfig,
    release: EngineRelease | str,
    target_class: str | None = None,
    aux_capture: bool | None = None,
    cuda_graph: bool = False,
) -> CaptureReport:
    """Which target states reach the draft, how wide, and whether `fc` runs.

    `aux_capture=None` follows the release's rules; False is given by the user: the target's
    capture is not active (the incident: the KimiK25 class ran without it); True forces it on.
    """
    from kit.load.replay import served_config

    rel = parse_engine(release) if isinstance(release, str) else release
    given = draft
    draft, refusal = served_config(draft, rel)
    cls = target_class or target.architecture
    n, ht, h = target.num_hidden_layers, target.hidden_size, draft.hidden_size
    cap = ENGINES[rel.name].capture_aux(target, draft, rel, cls, aux_capture, cuda_graph)
    aux_on = cap.aux_on and not cap.startup_error
    captured = in_loop(cap.engine_ids, cap.top_layer) if aux_on else []
    width, fc_applied, feeds = _hand_over(cap, aux_on, len(captured) * ht if aux_on else ht, h)
    report = CaptureReport(
        engine=str(rel),
        target_class=cls,
        num_target_layers=n,
        target_hidden=ht,
        draft_hidden=h,
        aux_capture=aux_on,
        config_layer_ids=cap.config_ids,
        engine_layer_ids=list(cap.engine_ids) if aux_on else [],
        captured_layers=captured,
        trained_layers=trained_layers(draft, n),
        cuda_graph_layers=cap.graph_ids if aux_on else None,
        hidden_width=width,
        fc_in_features=cap.fc_in,
        fc_applied=fc_applied,
        feeds=feeds,
        startup_error=cap.startup_error,
        sources=cap.sources,
    )
    report.findings = release_findings(rel) + _findings(report, cap, draft, given)
    if refusal is not None:
        report.findings.append(_traced_as_rewritten(report, given, refusal.message))
    return report


def constructor_crash(draft: DraftConfig, rel: EngineRelease) -> Finding | None:
    """The start-up exception of a release whose draft class refuses this config (one layer only,
    an unsupported flag): a finding, as the load replay names it, never a failed trace."""
    from kit.load.findings import startup_crash

    failure = ENGINES[rel.name].constructor_failure(draft, rel)
    if failure is None:
        return None
    fix = f"serve the draft with a release that builds it: python -m kit simulate CKPT --engine {rel.name}"
    return startup_crash(str(rel), failure, fix)


def _hand_over(cap: Capture, aux_on: bool, width: int, draft_width: int) -> tuple[int, bool, Feed]:
    """(width handed over, whether fc runs, what the draft is fed). SGLang runs fc iff the width
    differs from the draft's; vLLM always, unless the config switched it off."""
    if cap.startup_error:
        return 0, False, Feed.CRASH
    if cap.fc_gate is FcGate.WIDTH:
        fc_applied = width != draft_width
    else:
        fc_applied = cap.fc_gate is FcGate.ALWAYS
    crashes = width != cap.fc_in if fc_applied else width != draft_width
    if crashes:
        return width, fc_applied, Feed.CRASH
    return width, fc_applied, Feed.AUX_CONCAT if aux_on else Feed.FINAL_HIDDEN_POST_NORM


# ----------------------------------------------------------------------------------------------
# Findings: one function per code, most fundamental first.


def _layers(ids: Sequence[int] | None) -> str:
    return "[" + ", ".join(str(i) for i in ids or ()) + "]"


def _findings(
    r: CaptureReport, cap: Capture, draft: DraftConfig, given: DraftConfig
) -> list[Finding]:
    """What is wrong with the hand-over. A target that cannot capture stops the story there.
    `draft` is the config as the release serves it, `given` the one the trainer wrote."""
    if r.startup_error:
        return [_unsupported(r, cap)]
    checks = (
        _unverified(r, cap),
        _fc_bypassed(r, cap),
        _width_mismatch(r, cap),
        _layer_offset(r, cap, draft, given),
        _ids_ignored(r, cap, draft),
        _ids_defaulted(r, cap, draft, given),
        _cuda_graph_layers(r, cap),
    )
    return [unmeasured(f) for f in checks if f is not None]


def _trained_width(r: CaptureReport) -> int:
    return len(r.trained_layers) * r.target_hidden


def _unsupported(r: CaptureReport, cap: Capture) -> Finding:
    src = cap.sources
    return Finding(
        code="AUX_CAPTURE_UNSUPPORTED",
        severity=Severity.CRITICAL,
        title=f"{r.target_class} cannot capture aux hidden states in {r.engine}: "
        "the server does not start",
        evidence=(
            r.startup_error or "",
            "EAGLE-3 needs the target to capture its aux hidden states "
            f"({len(r.trained_layers)} × {r.target_hidden} = {_trained_width(r)} wide)",
        ),
        fix="use an engine release in which the target class implements aux capture "
        "(see source), or serve the target through a class that does",
        engine=r.engine,
        source=src.get("set_eagle3_layers_to_capture")
        or src.get("target_class")
        or src.get("target_module")
        or src.get("target_allow_list"),
        root_cause=True,
        data={"target_class": r.target_class},
    )


def _traced_as_rewritten(r: CaptureReport, given: DraftConfig, refusal: str) -> Finding:
    return Finding(
        code="TRACED_AS_REWRITTEN",
        severity=Severity.INFO,
        title=f"{r.engine} refuses config.json as saved; traced as it reads the config once "
        "rewritten in its own form",
        evidence=(
            f"refused: {refusal}",
            f"given: {given.path or 'config.json'} ({given.source} format)",
        ),
        fix=f"python -m kit fix CKPT --engine {r.engine} writes the config traced here",
        engine=r.engine,
    )


def _unverified(r: CaptureReport, cap: Capture) -> Finding | None:
    if not cap.unverified:
        return None
    return Finding(
        code="AUX_CAPTURE_UNVERIFIED",
        severity=Severity.INFO,
        title=f"aux capture support of {r.target_class} in {r.engine} is assumed",
        evidence=(cap.unverified,),
        fix="check that the target class implements aux capture in this release, or "
        "pass --target-class with the class the engine will build",
        engine=r.engine,
    )


def _fc_bypassed(r: CaptureReport, cap: Capture) -> Finding | None:
    trained_w = _trained_width(r)
    if r.fc_applied or r.feeds == Feed.CRASH or trained_w == r.draft_hidden:
        return None
    gate = (
        f"fc gate: hidden_states.shape[-1] ({r.hidden_width}) != embeds.shape[-1] "
        f"({r.draft_hidden}) is False, so fc is skipped"
        if cap.fc_gate is FcGate.WIDTH
        else "combine_hidden_states returns its input unchanged: fc is skipped"
    )
    return Finding(
        code="FC_BYPASSED",
        severity=Severity.CRITICAL,
        title="fc bypassed: the draft sees input unlike its training",
        evidence=(
            f"target aux capture is off: {cap.aux_off_reason}",
            "the target hands the draft its final hidden state after the final norm: "
            f"width {r.hidden_width}",
            gate,
            f"the draft was trained on {len(r.trained_layers)} target states "
            f"{_layers(r.trained_layers)} concatenated: {trained_w} wide, projected by fc "
            f"to {r.draft_hidden}",
        ),
        fix=cap.fixes.get("FC_BYPASSED", _capture_fix(r, cap)),
        engine=r.engine,
        source=cap.sources.get("fc_gate"),
        root_cause=True,
        data={"hidden_width": r.hidden_width, "expected_width": trained_w},
    )


def _capture_fix(r: CaptureReport, cap: Capture) -> str:
    """What turns capture back on: the config switch when it is what turned it off; else the
    target class's hook in this release (with its source), and the command that observes it."""
    if cap.aux_off_reason and cap.aux_off_reason.endswith("is false"):
        return f"set {cap.aux_off_reason.removesuffix(' is false')} to true (or remove it)"
    hook = cap.sources.get("set_eagle3_layers_to_capture")
    where = f" ({hook})" if hook else ""
    return (
        f"make the target capture its aux hidden states: in {r.engine}, {r.target_class} "
        f"implements set_eagle3_layers_to_capture{where}, so check the served config "
        "(eagle_config.use_aux_hidden_state true or absent) and watch the running engine: "
        "python -m kit watch -- <launch command>"
    )


def _width_mismatch(r: CaptureReport, cap: Capture) -> Finding | None:
    if r.feeds != Feed.CRASH:
        return None
    expected = r.fc_in_features if r.fc_applied else r.draft_hidden
    handed = (
        f"({len(r.captured_layers)} captured states {_layers(r.captured_layers)} "
        f"× {r.target_hidden})"
        if r.aux_capture
        else f"(its final hidden state; {cap.aux_off_reason})"
    )
    evidence = [
        f"the target hands the draft {r.hidden_width} values per token {handed}",
        f"fc expects {r.fc_in_features} inputs"
        if r.fc_applied
        else f"the draft layer expects {r.draft_hidden}",
    ]
    lost = sorted(set(r.engine_layer_ids) - set(r.captured_layers))
    if lost:
        evidence.append(
            f"layer ids {_layers(lost)} are outside the target's capture loop "
            f"(states 0 … {cap.top_layer}, n = {r.num_target_layers}) and are never captured"
        )
    return Finding(
        code="AUX_WIDTH_MISMATCH",
        severity=Severity.CRITICAL,
        title=f"fc would crash: {r.hidden_width} wide input, {expected} expected",
        evidence=tuple(evidence),
        fix="capture exactly the layers the draft was trained on, with the target width "
        "the draft's fc was built for (target_hidden_size)",
        engine=r.engine,
        source=cap.sources.get("fc_gate"),
        root_cause=True,
        data={"hidden_width": r.hidden_width, "expected": expected},
    )


def _layer_offset(
    r: CaptureReport, cap: Capture, draft: DraftConfig, given: DraftConfig
) -> Finding | None:
    if not (r.aux_capture and cap.config_ids and r.captured_layers != r.trained_layers):
        return None
    convention = (draft.aux_layer_convention or AFTER_K_LAYERS).replace("_", " ")
    return Finding(
        code="AUX_LAYER_OFFSET",
        severity=Severity.ERROR,
        title="the target captures other layers than the draft was trained on",
        evidence=(
            f"draft ids {_layers(cap.config_ids)} ({draft.aux_ids_location}) were written as "
            f"{convention}: trained on states after {_layers(r.trained_layers)} layers",
            f"{r.engine} reads them with {cap.id_rule!r}: captures the states after "
            f"{_layers(r.captured_layers)} layers",
        ),
        fix=_ids_fix(r, given),
        engine=r.engine,
        source=cap.sources.get("id_rule"),
        data={"trained": r.trained_layers, "captured": r.captured_layers},
    )


def _ids_fix(r: CaptureReport, given: DraftConfig) -> str:
    """The ids to write and the command that writes them, when `kit fix` rewrites them for this
    release; else what to write, in words."""
    rel = parse_engine(r.engine)
    _, changes = ENGINES[rel.name].rewritten_config(given, rel)
    moved = next((c for c in changes if "ids" in c), None)
    if moved is not None:
        return f"{moved}: python -m kit fix CKPT --engine {r.engine} --out CKPT-fixed"
    return (
        f"write ids that {r.engine} reads as the states after {_layers(r.trained_layers)} layers "
        "(SGLang: output of layer k in eagle_config, +1 applied; vLLM: state after k layers, "
        "verbatim)"
    )


def _ids_ignored(r: CaptureReport, cap: Capture, draft: DraftConfig) -> Finding | None:
    if not (r.aux_capture and cap.ignored_ids):
        return None
    differs = r.captured_layers != r.trained_layers
    return Finding(
        code="AUX_IDS_IGNORED",
        severity=Severity.ERROR if differs else Severity.INFO,
        title=f"{r.engine} does not read the draft's aux layer ids; it captures its "
        "defaults" + (", which differ from the draft's training" if differs else ""),
        evidence=(
            f"draft ids {_layers(cap.ignored_ids)} at {draft.aux_ids_location} "
            f"(trained on states after {_layers(r.trained_layers)} layers)",
            f"captured: states after {_layers(r.captured_layers)} layers",
        ),
        fix=cap.fixes.get(
            "AUX_IDS_IGNORED",
            "put the ids where this release reads them (SGLang: eagle_config, output-of-"
            "layer convention; vLLM ≥0.11.1: top level, verbatim; TensorRT-LLM: the speculative "
            "config's eagle3_layers_to_capture, output-of-layer ids: "
            f"{{{', '.join(str(i - 1) for i in r.trained_layers)}}})",
        )
        if differs
        else "",
        engine=r.engine,
        source=cap.sources.get("ids_source"),
    )


def _ids_defaulted(
    r: CaptureReport, cap: Capture, draft: DraftConfig, given: DraftConfig
) -> Finding | None:
    """A config that names no aux ids (SpecForge's exports never do) leaves the choice to the
    engine: say what it captures and whether that is the trainer's own default."""
    if not r.aux_capture or draft.aux_layer_ids or cap.config_ids or cap.ignored_ids:
        return None
    known = trainer_default(given, r.num_target_layers)
    if known is None:
        return None
    trainer, trained, source = known
    differs = r.captured_layers != trained
    return Finding(
        code="AUX_IDS_DEFAULT",
        severity=Severity.ERROR if differs else Severity.INFO,
        title=f"the draft config names no aux layer ids: {r.engine} captures its default "
        f"states after {_layers(r.captured_layers)} layers, "
        + ("not the ones" if differs else "the ones")
        + f" {trainer} trains on by default",
        evidence=(
            f"{r.engine} captures the states after {_layers(r.captured_layers)} layers "
            f"({cap.sources.get('default_ids', 'its default')})",
            f"{trainer}'s default: {source}",
            "a run that set its own ids leaves no trace in this config: compare with the "
            "training run's settings",
        ),
        fix="write the ids the draft was trained on into the config, where this release reads them"
        if differs
        else "",
        engine=r.engine,
        source=cap.sources.get("default_ids"),
        data={"trained": trained, "captured": r.captured_layers},
    )


def _cuda_graph_layers(r: CaptureReport, cap: Capture) -> Finding | None:
    if r.cuda_graph_layers is None or r.cuda_graph_layers == r.captured_layers:
        return None
    return Finding(
        code="AUX_LAYERS_DIFFER_UNDER_CUDA_GRAPH",
        severity=Severity.ERROR,
        title="CUDA-graph replays capture the default layers, eager passes the configured ones",
        evidence=(
            f"eager (prefill / extend / --disable-cuda-graph): {_layers(r.captured_layers)}",
            f"replayed from CUDA graphs (decode / verify): {_layers(r.cuda_graph_layers)}",
            "the graphs are captured before the configured ids are set",
        ),
        fix="upgrade to sglang ≥0.5.11, use the default ids, or --disable-cuda-graph",
        engine=r.engine,
        source=cap.sources.get("cuda_graph"),
        data={"eager": r.captured_layers, "cuda_graph": r.cuda_graph_layers},
    )
