"""Replay an engine release's draft loading: every key's fate and every parameter's state.

The rules live in each engine's package (`kit.engines.<engine>`); this module applies them to a
checkpoint's keys in the order the engines read them (safetensors `keys()` is sorted, so the first
start-up exception reported is the one the engine meets first), checks shapes the way the
engines' weight loaders assert them, applies the worker's post-load overrides (target embedding /
head) and turns the result into findings (`kit.load.findings`).

A release that refuses the config.json as saved never starts: every key's outcome is `error` and
the refusal is the first root cause. The key-level story is still told, as the release would load
the keys once config.json is rewritten in its own form (`rewritten`, each key's
`if_config_rewritten`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kit.checkpoint.config import DraftConfig, parse_draft_config
from kit.checkpoint.files import Checkpoint
from kit.engines import (
    ENGINES,
    RELEASES,
    EngineRelease,
    all_releases,
    parse_engine,
    release_findings,
)
from kit.engines.vocab import (
    KeyOutcome,
    LoadContext,
    Outcome,
    ParamSpec,
    Refusal,
    State,
)
from kit.findings import Finding
from kit.load.findings import findings_for, refused_findings
from kit.load.report import LOST, LoadReport, ParamState
from kit.tracing.positions import late_positions_finding

__all__ = [
    "KeyOutcome",
    "MatrixRow",
    "ParamSpec",
    "engine_params",
    "matrix_findings",
    "release_matrix",
    "served_config",
    "simulate_keys",
    "simulate_load",
]


def _release(release: EngineRelease | str) -> EngineRelease:
    return parse_engine(release) if isinstance(release, str) else release


def engine_params(cfg: DraftConfig, release: EngineRelease | str) -> list[ParamSpec]:
    """The parameters (names, shapes, inits) this engine release builds for the draft config."""
    rel = _release(release)
    return ENGINES[rel.name].engine_params(cfg, rel)


def served_config(
    cfg: DraftConfig, release: EngineRelease, keys: Sequence[str] = ()
) -> tuple[DraftConfig, Refusal | None]:
    """The config the release serves: `cfg`, or, when it refuses `cfg` as saved, the rewritten
    form it reads for a checkpoint with these tensor names (what `fix --for` writes), with the
    refusal."""
    refusal = ENGINES[release.name].refuses_config(cfg, release)
    if refusal is None:
        return cfg, None
    raw, _ = ENGINES[release.name].rewritten_config(cfg, release, keys)
    return parse_draft_config(raw, cfg.path), refusal


def simulate_load(ck: Checkpoint, cfg: DraftConfig, release: EngineRelease | str) -> LoadReport:
    """Replay the release's loader on every tensor of `ck` (headers only; no bytes are read)."""
    return simulate_keys({n: t.shape for n, t in ck.tensors.items()}, cfg, release)


def simulate_keys(
    shapes: dict[str, tuple[int, ...]],
    cfg: DraftConfig,
    release: EngineRelease | str,
    suggest_upgrade: bool = True,
) -> LoadReport:
    """`simulate_load` on key names and shapes alone (also used to verify rename plans).

    With `suggest_upgrade`, a drop or crash finding names the first later release that loads
    every tensor with the same config.json, if there is one.
    """
    rel = _release(release)
    refusal = ENGINES[rel.name].refuses_config(cfg, rel)
    if refusal is None:
        report = _replay(shapes, cfg, rel, suggest_upgrade)
        report.findings = release_findings(rel) + report.findings
        return report
    raw, changes = ENGINES[rel.name].rewritten_config(cfg, rel, sorted(shapes))
    rewritten = _replay(shapes, parse_draft_config(raw, cfg.path), rel, suggest_upgrade)
    keys = [
        KeyOutcome(k.key, Outcome.ERROR, message=refusal.message, source=refusal.source,
                   if_config_rewritten=k)
        for k in rewritten.keys
    ]  # fmt: skip
    return LoadReport(
        engine=str(rel),
        keys=keys,
        params=[],
        findings=release_findings(rel) + refused_findings(rel, refusal, rewritten, changes),
        crashed=True,
        refusal=refusal,
        rewritten=rewritten,
        config_changes=changes,
    )


def _replay(
    shapes: dict[str, tuple[int, ...]], cfg: DraftConfig, rel: EngineRelease, suggest: bool
) -> LoadReport:
    """The loader on a config the release accepts (or refuses: then that alone is reported)."""
    eng = ENGINES[rel.name]
    refusal = eng.refuses_config(cfg, rel)
    params = {p.name: p for p in eng.engine_params(cfg, rel)}
    names = sorted(shapes)
    ctx = LoadContext(cfg, rel, params, names, dict(shapes))
    fatal = refusal or eng.constructor_failure(cfg, rel)
    if fatal:
        keys = [
            KeyOutcome(k, Outcome.ERROR, message=fatal.message, source=fatal.source) for k in names
        ]
    else:
        keys = [
            _checked(eng.resolve_key(k, ctx), shapes[k], params, eng.SHAPE_CHECK) for k in names
        ]
        if not any("d2t" in k for k in names):
            fatal = eng.missing_d2t_failure(rel)
    states = [] if refusal else _param_states(params, keys, eng.from_target(ctx))
    if fatal is None and states and not any(k.outcome == Outcome.ERROR for k in keys):
        # met after the keys' own errors; engines that do not fail leave the parameter at init
        fatal = eng.unloaded_failure(ctx, [p.name for p in states if p.state == State.LEFT_AT_INIT])
    crashed = fatal is not None or any(k.outcome == Outcome.ERROR for k in keys)
    report = LoadReport(str(rel), keys, states, [], crashed, refusal=refusal)
    upgrade = None
    if suggest and not report.loads_cleanly:
        upgrade = _first_clean_release(shapes, cfg, rel)
    report.findings = findings_for(report, rel, cfg, fatal, upgrade)
    if crashed:
        report.keys = _failed(keys, fatal)
    return report


def _failed(keys: list[KeyOutcome], fatal: Refusal | None) -> list[KeyOutcome]:
    """A server that fails at start-up reads no key into the draft: a key the replay had loaded,
    consumed or ignored becomes that start-up error (the first one the server meets). Keys
    already lost (dropped, warned, their own error) keep their fate: they fail either way and say
    why the load fails. The findings were drawn before, from each key's own fate."""
    first = fatal or next(Refusal(k.message, k.source) for k in keys if k.outcome == Outcome.ERROR)
    why = f"not loaded: the server fails at start-up ({first.message})"
    return [
        k if k.outcome in LOST else KeyOutcome(k.key, Outcome.ERROR, k.param, k.shard, why,
                                               first.source)
        for k in keys
    ]  # fmt: skip


def _first_clean_release(
    shapes: dict[str, tuple[int, ...]], cfg: DraftConfig, rel: EngineRelease
) -> EngineRelease | None:
    """The oldest release after `rel` that loads every tensor cleanly with this same config."""
    for later in all_releases(rel.name):
        if later.version > rel.version and simulate_keys(shapes, cfg, later, False).loads_cleanly:
            return later
    return None


def _checked(
    out: KeyOutcome, shape: tuple[int, ...], params: dict[str, ParamSpec], shape_check: str
) -> KeyOutcome:
    """A loaded key whose shape the engine's weight loader rejects becomes a start-up error."""
    if out.outcome not in (Outcome.LOADED, Outcome.CONSUMED) or out.param is None:
        return out
    want = params[out.param].expected(out.shard)
    if tuple(shape) == want:
        return out
    msg = (
        f"AssertionError: Attempted to load weight (torch.Size({list(shape)})) into "
        f"parameter {out.param}"
        + (f" shard {out.shard!r}" if out.shard is not None else "")
        + f" (torch.Size({list(want)}))"
    )
    return KeyOutcome(out.key, Outcome.ERROR, out.param, out.shard, msg, shape_check)


def _param_states(
    params: dict[str, ParamSpec],
    keys: list[KeyOutcome],
    overrides: dict[str, tuple[str, str]],
) -> list[ParamState]:
    loaded: dict[str, list[KeyOutcome]] = {}
    for k in keys:
        if k.outcome in (Outcome.LOADED, Outcome.CONSUMED) and k.param:
            loaded.setdefault(k.param, []).append(k)
    out = []
    for name, spec in params.items():
        got = loaded.get(name, [])
        src = got[0].source if got else ""
        if name in overrides:
            state, (msg, src) = State.FROM_TARGET, overrides[name]
        elif got:
            state, msg = State.LOADED, ""
        else:
            state, msg = State.LEFT_AT_INIT, f"nothing loads it; stays {spec.init.left}"
        have = {k.shard for k in got}
        missing = [s for s, _ in spec.shards if s not in have] if got else []
        out.append(
            ParamState(name, spec.shape, state, spec.init, [k.key for k in got], missing, msg,
                       src, spec.unused)
        )  # fmt: skip
    return out


# ---------------------------------------------------------------------------------------------
# Every release at once: which load this draft as trained.


@dataclass
class MatrixRow:
    """Consecutive releases of one engine with the same verdict on this checkpoint: as saved, and
    (where the release refuses config.json) once config.json is rewritten. The counts are the
    keys dropped and the used parameters left at init as the release serves the draft."""

    engine: str
    releases: list[str]
    outcome: str  # "loads fully" | "drops N keys" | "crashes" | "refuses config.json"
    detail: str
    if_config_rewritten: str = ""  # the outcome once config.json is rewritten (refused only)
    dropped: int = 0
    left_at_init: int = 0
    crashed: bool = False  # as served: the server does not start even with the rewritten config
    # RoPE positions the draft steps after the first run late by (0: as trained; None: the
    # engine's rule not read)
    late_positions: int | None = None

    @property
    def span(self) -> str:
        first, last = self.releases[0], self.releases[-1]
        return f"{self.engine} {first}" + ("" if first == last else f" … {last}")

    def key(self) -> tuple:
        return (self.outcome, self.detail, self.if_config_rewritten, self.dropped,
                self.left_at_init, self.crashed, self.late_positions)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "first": self.releases[0],
            "last": self.releases[-1],
            "releases": self.releases,
            "outcome": self.outcome,
            "detail": self.detail,
            "if_config_rewritten": self.if_config_rewritten,
            "dropped silently": self.dropped,
            "left at init": self.left_at_init,
            "crashed": self.crashed,
            "late_positions": self.late_positions,
        }


def summarise(report: LoadReport) -> tuple[str, str]:
    """One release's verdict: (outcome, detail)."""
    if report.refusal is not None:
        return "refuses config.json", report.refusal.message
    if report.crashed:
        exc = next((f.title.split(": ", 1)[-1] for f in report.findings
                    if f.code == "STARTUP_CRASH"), "")  # fmt: skip
        return "crashes", exc
    lost = [k.key for k in report.lost]
    if lost:
        shown = ", ".join(lost[:3]) + (f" … (+{len(lost) - 3})" if len(lost) > 3 else "")
        return f"drops {len(lost)} keys", shown
    at_init = [p.name for p in report.params if p.state == State.LEFT_AT_INIT and not p.unused]
    return "loads fully", ("left at init: " + ", ".join(at_init)) if at_init else ""


def matrix_row(name: str, version: str, report: LoadReport) -> MatrixRow:
    """One release's row of the matrix."""
    outcome, detail = summarise(report)
    served = report.as_served
    positions = ENGINES[name].draft_positions(parse_engine(f"{name}=={version}"))
    return MatrixRow(
        engine=name,
        releases=[version],
        outcome=outcome,
        detail=detail,
        if_config_rewritten=" — ".join(summarise(report.rewritten)) if report.rewritten else "",
        dropped=len(served.with_outcome(Outcome.DROPPED)),
        left_at_init=sum(p.state == State.LEFT_AT_INIT and not p.unused for p in served.params),
        crashed=served.crashed,
        late_positions=None if positions is None else positions.value,
    )


def release_matrix(ck: Checkpoint, cfg: DraftConfig, engines: list[str]) -> list[MatrixRow]:
    """For each engine, its releases grouped by what they do with this checkpoint as saved
    (and, where they refuse config.json, what they would do once it is rewritten)."""
    rows: list[MatrixRow] = []
    for name in engines:
        for rel in all_releases(name):
            row = matrix_row(name, str(rel.version), simulate_load(ck, cfg, rel))
            last = rows[-1] if rows and rows[-1].engine == name else None
            if last and last.key() == row.key():
                last.releases.append(str(rel.version))
            else:
                rows.append(row)
    return rows


def matrix_findings(rows: list[MatrixRow]) -> list[Finding]:
    """What the matrix finds beyond each row's load: per engine, one DRAFT_POSITIONS_LATE for
    the releases whose server starts and runs the draft steps late (unmeasured: no target)."""
    found = []
    for name in dict.fromkeys(r.engine for r in rows):
        late = [r for r in rows if r.engine == name and r.late_positions and not r.crashed]
        if late:
            first = parse_engine(f"{name}=={late[0].releases[0]}")
            found.append(late_positions_finding(first, releases=f"{name} {_spans(late)}"))
    return [f for f in found if f is not None]


def _spans(rows: list[MatrixRow]) -> str:
    """The rows' releases as spans, consecutive rows (in the releases read) joined."""
    read = RELEASES[rows[0].engine]
    spans: list[list[str]] = []
    for r in rows:
        if spans and read.index(r.releases[0]) == read.index(spans[-1][1]) + 1:
            spans[-1][1] = r.releases[-1]
        else:
            spans.append([r.releases[0], r.releases[-1]])
    return ", ".join(a if a == b else f"{a} … {b}" for a, b in spans)
