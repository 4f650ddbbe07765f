"""What reaches the draft in one offline run: its weights, the target's hidden state, its vocab map.

Nothing here is hand-picked: the weights are what a release's loader leaves
(`kit.load.replay.simulate_load`: silently dropped tensors stay at the engine's init), the hidden
state is what that release's target hands over for the target class
(`kit.tracing.capture.simulate_capture`: the aux states when it captures them, else its final post-norm
state, so SGLang's width gate skips `fc`). A wiring the release cannot run at all (a start-up
crash, an `fc` whose width does not match) is planned as such: the row reports the crash as a
finding and is not measured.

A release that refuses config.json as saved is measured as it serves the draft once config.json
is rewritten in its form (`LoadReport.as_served`); its findings keep the refusal.

The healthy wiring is what the draft was trained for: every tensor loaded (as `HEALTHY_RELEASE`,
which reads the speculators layout and config as they are), the states it was trained on
concatenated through `fc`, the `d2t` map used. What-ifs (`aux_layers`, `use_d2t=False`) change
one thing on top of either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.checkpoint.draft import Draft, open_draft
from kit.checkpoint.files import Checkpoint
from kit.checkpoint.hub import require_local
from kit.engines import ENGINES, EngineRelease, all_releases, parse_engine
from kit.engines.aux_ids import aux_flag_key, trained_layers
from kit.engines.vocab import Init, State
from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.load.findings import flags_ignored
from kit.load.replay import served_config, simulate_load
from kit.load.report import LoadReport
from kit.tracing.capture import CaptureReport, Feed, simulate_capture
from kit.tracing.draft import Eagle3Draft, build_draft, load_state
from kit.tracing.positions import positions_late

HEALTHY_RELEASE = "vllm==0.11.2"  # reads speculators configs, layers.0.* keys and top-level ids
# What the measurement puts where the engine's torch.empty memory is (`load_state`'s stand-in).
EMPTY_ASSUMPTION = "as if at PyTorch's default init (U(±1/sqrt(fan_in)), seeded), an assumption"


@dataclass(frozen=True)
class Wiring:
    """What reaches the draft: whose load, which target states, which vocabulary map."""

    release: EngineRelease  # loads the draft (and, unless healthy, captures the target's states)
    healthy: bool
    target_class: str
    aux_capture: bool  # the target captures its aux states
    feeds: Feed
    layers: tuple[int, ...]  # target states (after k layers) concatenated, for Feed.AUX_CONCAT
    use_d2t: bool = True
    aux_capture_given: bool | None = None  # what the deployment said; None: the release's rule
    what_if: tuple[str, ...] = ()  # what differs from the release's own wiring
    fc_applied: bool | None = None  # as measured; None until the draft has run
    # parameters the forward reads that no checkpoint tensor writes (or only some shards of) and
    # that the release builds with torch.empty: their values are whatever memory held, so the
    # measurement stands them in at PyTorch's default init (`EMPTY_ASSUMPTION`)
    empty_params: tuple[str, ...] = ()
    aux_off_reason: str | None = None  # why the release's own rule captures nothing
    # RoPE positions the release runs the chain's draft steps after the first late by
    # (`Engine.draft_positions`); the healthy wiring runs every step where trained
    late_positions: int = 0

    def describe(self) -> tuple[str, ...]:
        """The wiring as evidence lines a reader can scan."""
        feed = str(self.feeds)
        if self.feeds == Feed.AUX_CONCAT:
            feed += f" (target states {list(self.layers)})"
        fc = {True: "applied", False: "bypassed", None: "never runs"}[self.fc_applied]
        if self.aux_capture_given is None:
            why = f"the release's own rule for {self.target_class}"
        elif self.aux_capture == self.aux_capture_given:
            why = "as given for the deployment"
        else:
            why = (
                f"what-if: the deployment was given it {'on' if self.aux_capture_given else 'off'}"
            )
        if self.aux_off_reason and self.aux_capture_given is None:
            why += f": {self.aux_off_reason}"
        lines = [
            "healthy wiring: every tensor loaded, the trained states through fc"
            if self.healthy
            else f"loaded as {self.release}; aux capture {'on' if self.aux_capture else 'off'} "
            f"({why})",
            f"draft fed: {feed}; fc {fc}",
            f"d2t map {'used' if self.use_d2t else 'not used'}",
        ]
        if self.late_positions:
            lines.append(
                f"draft steps after the first run {positions_late(self.late_positions)}, as "
                f"{self.release} runs them"
            )
        if self.empty_params:
            lines.append(
                f"{len(self.empty_params)} parameters never written hold torch.empty memory "
                f"({', '.join(self.empty_params[:4])}"
                + (", …" if len(self.empty_params) > 4 else "")
                + f"): measured {EMPTY_ASSUMPTION}"
            )
        return tuple(lines + [f"what-if: {w}" for w in self.what_if])

    def to_dict(self) -> dict[str, Any]:
        """The healthy wiring names no release: it is the draft as trained, whichever release
        the kit borrows to load every tensor (a matrix for sglang read it as vLLM's wiring)."""
        return {
            "release": None if self.healthy else str(self.release),
            "healthy": self.healthy,
            "target_class": self.target_class,
            "aux_capture": self.aux_capture,
            "aux_capture_given": self.aux_capture_given,
            "feeds": str(self.feeds),
            "layers": list(self.layers) if self.feeds == Feed.AUX_CONCAT else None,
            "use_d2t": self.use_d2t,
            "fc_applied": self.fc_applied,
            "what_if": list(self.what_if),
            "empty_params": list(self.empty_params),
            "late_positions": self.late_positions,
        }


@dataclass
class Plan:
    """A wiring before it runs: the findings of its load and capture, and the crash, if any."""

    wiring: Wiring
    load: LoadReport
    findings: list[Finding] = field(default_factory=list)
    crash: Finding | None = None


def plan_wiring(
    ck: Checkpoint,
    draft_cfg: DraftConfig,
    target_cfg: TargetConfig,
    engine: str | None = None,
    *,
    aux_capture: bool | None = None,
    target_class: str | None = None,
    aux_layers: Sequence[int] | None = None,
    use_d2t: bool = True,
) -> Plan:
    """The healthy wiring (`engine` None) or the one `engine` sets up for the target class.

    `aux_capture`: None follows the release's own rule for the class; False is a deployment
    whose target captures nothing (`--no-aux-capture`).
    """
    release = parse_engine(engine) if engine else healthy_release(ck, draft_cfg)
    cls = target_class or target_cfg.architecture
    load = simulate_load(ck, draft_cfg, release)
    captured: list[Finding] = []
    if engine is None:
        layers = trained_layers(draft_cfg, target_cfg.num_hidden_layers)
        wiring = Wiring(release, True, cls, True, Feed.AUX_CONCAT, tuple(layers), use_d2t)
    else:
        cap = simulate_capture(
            target_cfg, draft_cfg, release, target_class=cls, aux_capture=aux_capture
        )
        captured = list(cap.findings)
        wiring = Wiring(release, False, cls, cap.aux_capture, Feed(cap.feeds),
                        tuple(cap.captured_layers), use_d2t, aux_capture,
                        aux_off_reason=_off_reason(cap, draft_cfg))  # fmt: skip
    wiring = _what_if(wiring, target_cfg, aux_layers)
    if engine is not None:
        wiring = replace(wiring, late_positions=late_positions(release))
    # measured as the release serves the draft: under its own config form when it refuses the
    # config as saved (the findings keep the refusal); only a server that does not start at all
    # even then is a crash
    served = load.as_served
    wiring = replace(wiring, empty_params=empty_params(served))
    crash = _load_crash(served) if served.crashed else None
    if crash is None and wiring.feeds == Feed.CRASH:
        crash = next(f for f in captured if f.severity == Severity.CRITICAL)
    return Plan(wiring, load, list(load.findings) + captured, crash)


def healthy_release(ck: Checkpoint, cfg: DraftConfig) -> EngineRelease:
    """The release whose load the healthy wiring borrows: `HEALTHY_RELEASE`, or, for a draft it
    does not run as trained (fc_norm before vllm 0.24), the first vLLM release that loads every
    tensor and implements every trained flag, so the healthy figure has every trained module."""
    default = parse_engine(HEALTHY_RELEASE)
    for rel in (default, *all_releases("vllm")):
        if flags_ignored(cfg, rel) is None and simulate_load(ck, cfg, rel).as_served.loads_cleanly:
            return rel
    return default


def late_positions(release: EngineRelease) -> int:
    """How many positions late `release` runs the draft steps after the first (0: as trained,
    or the engine's rule not read)."""
    row = ENGINES[release.name].draft_positions(release)
    return row.value if row is not None else 0


def _off_reason(cap: CaptureReport, draft_cfg: DraftConfig) -> str | None:
    """The draft config's switch, when it is what turned the release's capture off."""
    if cap.aux_capture or "use_aux_hidden_state" not in cap.sources:
        return None
    return f"{aux_flag_key(draft_cfg)} is false"


def empty_params(load: LoadReport) -> tuple[str, ...]:
    """Parameters the forward reads that keep (some of) the engine's torch.empty memory."""
    return tuple(
        p.name
        for p in load.params
        if p.init == Init.UNINITIALIZED
        and not p.unused
        and (p.state == State.LEFT_AT_INIT or p.missing_shards)
    )


def check_aux_layers(aux_layers: Sequence[int], target_cfg: TargetConfig) -> None:
    """Layers the target has, or one clear error (read off its config, before it loads)."""
    n = target_cfg.num_hidden_layers
    if any(not 0 <= i < n for i in aux_layers):
        raise KitError(f"aux layers {list(aux_layers)} outside 0 … {n - 1} for a {n}-layer target")


def _what_if(wiring: Wiring, target_cfg: TargetConfig, aux_layers: Sequence[int] | None) -> Wiring:
    changes = []
    if aux_layers is not None:
        check_aux_layers(aux_layers, target_cfg)
        wiring = replace(wiring, feeds=Feed.AUX_CONCAT, layers=tuple(aux_layers))
        changes.append(f"target states {list(aux_layers)} fed instead")
    if not wiring.use_d2t:
        changes.append("draft ids used as target ids (no d2t map)")
    return replace(wiring, what_if=tuple(changes))


def _load_crash(load: LoadReport) -> Finding:
    """The finding that says why the release does not start with this draft."""
    return next((f for f in load.findings if f.code == "STARTUP_CRASH"), None) or max(
        load.findings,
        key=lambda f: f.severity,
        default=Finding(
            code="STARTUP_CRASH",
            severity=Severity.ERROR,
            title=f"{load.engine} fails at start-up with this draft",
            engine=load.engine,
        ),
    )


def load_draft(
    draft: str | Path | Draft, plan: Plan, target=None, device: str = "cpu"
) -> Eagle3Draft:
    """The draft as the plan's release builds and loads it (dropped tensors left at its init)."""
    opened, release = open_draft(draft, weights=True), plan.wiring.release
    cfg, _ = served_config(opened.draft_config, release, sorted(opened.checkpoint.tensors))
    module = build_draft(cfg, release.name, release)
    require_local(opened.path)  # every tensor byte: never by range from the Hub
    load_state(module, opened.checkpoint, plan.load, target=target)
    module.use_d2t = plan.wiring.use_d2t
    return module.to(device).eval()
