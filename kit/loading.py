"""Replay an engine release's draft loading: every key's fate and every parameter's state.

The rules live in `kit.engines.sglang` / `kit.engines.vllm`; this module applies them to a
checkpoint's keys in the order the engines read them (safetensors `keys()` is sorted, so the
first start-up exception reported is the one the engine meets first), checks
shapes the way the engines' weight loaders assert them, applies the worker's post-load
overrides (target embedding / head) and turns the result into findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from kit.checkpoint import Checkpoint
from kit.config import DraftConfig
from kit.engines import ENGINES, EngineRelease, all_releases, parse_engine
from kit.engines.params import (
    CONSUMED,
    DROPPED,
    ERROR,
    FROM_TARGET,
    IGNORED,
    LEFT_AT_INIT,
    LOADED,
    OUTCOMES,
    RANDOM,
    STATE_LOADED,
    UNINITIALIZED,
    WARNED,
    KeyOutcome,
    LoadContext,
    ParamSpec,
    Shard,
)
from kit.findings import Finding, Severity, to_json

__all__ = [
    "OUTCOMES",
    "KeyOutcome",
    "LoadReport",
    "ParamSpec",
    "ParamState",
    "engine_module",
    "engine_params",
    "simulate_keys",
    "simulate_load",
]

SHAPE_CHECK = {
    "sglang": "sglang/srt/model_loader/weight_utils.py:535 default_weight_loader (0.4.6.post1); "
    "layers/vocab_parallel_embedding.py:457-460",
    "vllm": "vllm/model_executor/model_loader/weight_utils.py default_weight_loader; "
    "layers/linear.py weight_loader (shard shape assert)",
}


@dataclass
class ParamState:
    """One engine parameter after load: `loaded`, `from_target` or `left_at_init` (and how)."""

    name: str
    shape: tuple[int, ...]
    state: str
    init: str
    loaded_from: list[str] = field(default_factory=list)
    missing_shards: list[Shard] = field(default_factory=list)
    message: str = ""
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "state": self.state,
            "init": self.init,
            "loaded_from": self.loaded_from,
            "missing_shards": self.missing_shards,
            "message": self.message,
            "source": self.source,
        }


@dataclass
class LoadReport:
    """What one engine release does with one checkpoint."""

    engine: str
    keys: list[KeyOutcome]
    params: list[ParamState]
    findings: list[Finding]
    crashed: bool
    config_supported: bool = True

    def outcome(self, key: str) -> KeyOutcome:
        return next(k for k in self.keys if k.key == key)

    def param(self, name: str) -> ParamState:
        return next(p for p in self.params if p.name == name)

    def with_outcome(self, outcome: str) -> list[KeyOutcome]:
        return [k for k in self.keys if k.outcome == outcome]

    @property
    def errors(self) -> list[str]:
        return [k.message for k in self.keys if k.outcome == ERROR]

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "crashed": self.crashed,
            "config_supported": self.config_supported,
            "keys": [k.to_dict() for k in self.keys],
            "params": [p.to_dict() for p in self.params],
            "findings": to_json(self.findings),
        }


def engine_module(release: EngineRelease) -> ModuleType:
    """The rules package of the release's engine (`kit.engines.sglang`, `kit.engines.vllm`, …)."""
    return ENGINES[release.name]


def _release(release: EngineRelease | str) -> EngineRelease:
    return parse_engine(release) if isinstance(release, str) else release


def engine_params(cfg: DraftConfig, release: EngineRelease | str) -> list[ParamSpec]:
    """The parameters (names, shapes, inits) this engine release builds for the draft config."""
    rel = _release(release)
    return engine_module(rel).engine_params(cfg, rel)


def simulate_keys(
    shapes: dict[str, tuple[int, ...]],
    cfg: DraftConfig,
    release: EngineRelease | str,
    suggest_upgrade: bool = True,
) -> LoadReport:
    """`simulate_load` on key names and shapes alone (used to verify rename plans).

    With `suggest_upgrade`, a drop or crash finding names the first later release that loads
    every tensor, if there is one.
    """
    rel = _release(release)
    eng = engine_module(rel)
    params = {p.name: p for p in eng.engine_params(cfg, rel)}
    names = sorted(shapes)
    ctx = LoadContext(cfg, rel, params, names, dict(shapes))
    findings: list[Finding] = []

    problem = eng.config_problem(cfg, rel)
    if problem:
        findings.append(_unsupported_config(rel, problem, eng))
    fatal = eng.startup_failure(cfg, rel)
    if fatal:
        keys = [KeyOutcome(k, ERROR, message=fatal[0], source=fatal[1]) for k in names]
    else:
        keys = [_checked(eng.resolve_key(k, ctx), shapes[k], params, rel) for k in names]
    if not fatal and not any("d2t" in k for k in names):
        d2t_fail = eng.missing_d2t_failure(rel)
        if d2t_fail:
            fatal = d2t_fail
    states = _param_states(params, keys, eng.from_target(ctx))
    crashed = bool(fatal) or any(k.outcome == ERROR for k in keys)
    upgrade = None
    if suggest_upgrade and (crashed or any(k.outcome in (DROPPED, WARNED) for k in keys)):
        upgrade = _first_clean_release(shapes, cfg, rel)
    findings += _findings(rel, cfg, keys, states, fatal, names, eng, upgrade)
    return LoadReport(str(rel), keys, states, findings, crashed, config_supported=not problem)


def simulate_load(ck: Checkpoint, cfg: DraftConfig, release: EngineRelease | str) -> LoadReport:
    """Replay the release's loader on every tensor of `ck` (headers only; no bytes are read)."""
    return simulate_keys({n: t.shape for n, t in ck.tensors.items()}, cfg, release)


def _first_clean_release(
    shapes: dict[str, tuple[int, ...]], cfg: DraftConfig, rel: EngineRelease
) -> EngineRelease | None:
    """The oldest release after `rel` under which every tensor loads (drops nothing, no crash)."""
    for later in all_releases(rel.name):
        if later.version <= rel.version:
            continue
        r = simulate_keys(shapes, cfg, later, suggest_upgrade=False)
        if not r.crashed and not any(k.outcome in (DROPPED, WARNED) for k in r.keys):
            return later
    return None


def _checked(
    out: KeyOutcome, shape: tuple[int, ...], params: dict[str, ParamSpec], rel: EngineRelease
) -> KeyOutcome:
    """A loaded key whose shape the engine's weight loader rejects becomes a start-up error."""
    if out.outcome not in (LOADED, CONSUMED) or out.param is None:
        return out
    spec = params[out.param]
    want = spec.expected(out.shard)
    if tuple(shape) != want:
        msg = (
            f"AssertionError: Attempted to load weight (torch.Size({list(shape)})) into "
            f"parameter {out.param}"
            + (f" shard {out.shard!r}" if out.shard is not None else "")
            + f" (torch.Size({list(want)}))"
        )
        return KeyOutcome(out.key, ERROR, out.param, out.shard, msg, SHAPE_CHECK[rel.name])
    return out


def _param_states(
    params: dict[str, ParamSpec],
    keys: list[KeyOutcome],
    overrides: dict[str, tuple[str, str]],
) -> list[ParamState]:
    loaded: dict[str, list[KeyOutcome]] = {}
    for k in keys:
        if k.outcome in (LOADED, CONSUMED) and k.param:
            loaded.setdefault(k.param, []).append(k)
    out = []
    for name, spec in params.items():
        got = loaded.get(name, [])
        src = got[0].source if got else ""
        if name in overrides:
            state, (msg, src) = FROM_TARGET, overrides[name]
        elif got:
            state, msg = STATE_LOADED, ""
        else:
            state, msg = LEFT_AT_INIT, f"nothing loads it; stays {spec.init}"
        have = {k.shard for k in got}
        missing = [s for s, _ in spec.shards if s not in have] if got else []
        out.append(
            ParamState(name, spec.shape, state, spec.init, [k.key for k in got], missing, msg, src)
        )
    return out


def _decoder(name: str) -> bool:
    return ".midlayer." in name or ".layers." in name


def _findings(
    rel: EngineRelease,
    cfg: DraftConfig,
    keys: list[KeyOutcome],
    states: list[ParamState],
    fatal: tuple[str, str] | None,
    names: list[str],
    eng: ModuleType,
    upgrade: EngineRelease | None = None,
) -> list[Finding]:
    engine = str(rel)
    out: list[Finding] = []
    at_init = [p for p in states if p.state == LEFT_AT_INIT]
    fix = f"python -m kit fix CKPT --for {engine} (renames the keys)"
    if upgrade is not None:
        fix += f", or upgrade to {rel.name} ≥ {upgrade.version} (loads every tensor as is)"

    dropped = [k for k in keys if k.outcome == DROPPED]
    if dropped:
        layer_at_init = [p for p in at_init if _decoder(p.name)]
        critical = bool(layer_at_init)
        title = f"{len(dropped)} checkpoint tensors are dropped without a warning"
        if critical:
            title += (
                f"; {len(layer_at_init)} decoder-layer parameters stay at init: "
                "expect accept len ≈ 1.00"
            )
        out.append(
            Finding(
                "KEYS_SILENTLY_DROPPED",
                Severity.CRITICAL if critical else Severity.WARNING,
                title,
                tuple(f"{k.key}: {k.message}" for k in dropped)
                + tuple(f"{p.name} left at init ({p.init})" for p in layer_at_init),
                fix,
                engine,
                dropped[0].source,
                root_cause=critical,
                data={"keys": [k.key for k in dropped], "params": [p.name for p in layer_at_init]},
            )
        )

    errors = [k for k in keys if k.outcome == ERROR]
    if fatal or errors:
        first = fatal or (errors[0].message, errors[0].source)
        evidence = tuple(dict.fromkeys(k.message for k in errors)) if not fatal else (fatal[0],)
        out.append(
            Finding(
                "STARTUP_CRASH",
                Severity.ERROR,
                f"{engine} fails at start-up: {first[0]}",
                evidence,
                fix,
                engine,
                first[1],
                data={"exceptions": list(evidence)},
            )
        )

    warned = [k for k in keys if k.outcome == WARNED]
    if warned:
        out.append(
            Finding(
                "KEYS_WARNED",
                Severity.WARNING,
                f"{len(warned)} checkpoint tensors are skipped with a warning in the log",
                tuple(f"{k.key}: {k.message}" for k in warned),
                fix,
                engine,
                warned[0].source,
            )
        )

    has_d2t = any("d2t" in n for n in names)
    if not has_d2t and cfg.effective_draft_vocab < cfg.vocab_size and not fatal:
        out.append(
            Finding(
                "D2T_MISSING",
                Severity.CRITICAL,
                f"no d2t tensor although the draft vocab ({cfg.effective_draft_vocab}) is smaller "
                f"than the target's ({cfg.vocab_size}): draft ids are taken as target ids",
                (f"draft_vocab_size={cfg.draft_vocab_size}", f"vocab_size={cfg.vocab_size}"),
                "add the trainer's d2t (draft→target offsets) to the checkpoint",
                engine,
                eng.d2t_source(rel),
                root_cause=True,
            )
        )

    head = next((p for p in states if p.name == "lm_head.weight"), None)
    if head is not None and head.state == LEFT_AT_INIT:
        out.append(
            Finding(
                "LM_HEAD_MISSING",
                Severity.CRITICAL,
                f"lm_head.weight is never loaded and stays {head.init}: expect accept len ≈ 1.00",
                tuple(f"{k.key}: {k.outcome}" for k in keys if "lm_head" in k.key)
                or ("no lm_head tensor in the checkpoint",),
                "ship the trained lm_head.weight (or set draft_vocab_size: null to borrow the target's)",
                engine,
                keys[0].source if keys else None,
                root_cause=True,
            )
        )

    if cfg.tie_word_embeddings:
        tied = [k for k in keys if "lm_head" in k.key and k.outcome in (DROPPED, IGNORED)]
        if tied:
            out.append(
                Finding(
                    "TIED_HEAD_DROPPED",
                    Severity.WARNING,
                    "tie_word_embeddings is true: the checkpoint's lm_head is discarded and the "
                    "(target's) embedding is used as the head",
                    tuple(f"{k.key}: {k.message}" for k in tied),
                    "set tie_word_embeddings: false if the head was trained separately",
                    engine,
                    tied[0].source,
                )
            )

    for p in states:
        if p.name == "model.embed_tokens.weight" and p.state == FROM_TARGET and p.loaded_from:
            out.append(
                Finding(
                    "EMBED_REPLACED_BY_TARGET",
                    Severity.INFO,
                    "the checkpoint's embed_tokens is loaded, then replaced by the target's",
                    (p.message,),
                    "nothing to do unless the draft was trained with its own embedding",
                    engine,
                    p.source,
                )
            )

    for k in keys:
        if k.outcome == IGNORED and "input_norm" in k.key:
            out.append(
                Finding(
                    "INPUT_NORM_DISCARDED",
                    Severity.ERROR,
                    "the trained input_norm.weight (norm_before_fc) is discarded by a skip rule",
                    (f"{k.key}: {k.message}",),
                    "use a release that reads norm_before_fc for this config",
                    engine,
                    k.source,
                    data={"key": k.key},
                )
            )

    others = [
        p
        for p in at_init
        if p.name not in ("lm_head.weight", "draft_id_to_target_id")
        and not (dropped and _decoder(p.name))
    ]
    partial = [p for p in states if p.missing_shards]
    if (others or partial) and not (fatal or errors):  # after a crash nothing runs at all
        garbage = any(p.init == UNINITIALIZED for p in others) or partial
        out.append(
            Finding(
                "PARAM_LEFT_AT_INIT",
                Severity.CRITICAL if garbage else Severity.WARNING,
                f"{len(others) + len(partial)} engine parameters are not (fully) loaded",
                tuple(f"{p.name} {list(p.shape)} stays {p.init}" for p in others)
                + tuple(f"{p.name} misses shards {p.missing_shards}" for p in partial),
                "ship these tensors in the checkpoint"
                + (
                    " (fc.bias: random init in this release)"
                    if any(p.init == RANDOM for p in others)
                    else ""
                ),
                engine,
                keys[0].source if keys else None,
                root_cause=bool(garbage),
                data={"params": [p.name for p in others + partial]},
            )
        )
    return out


def _unsupported_config(rel: EngineRelease, problem: tuple[str, str], eng: ModuleType) -> Finding:
    fix = eng.CONFIG_FIX
    if rel.name == "vllm" and "speculators" in problem[0]:
        fix = eng.SPECULATORS_FIX
    return Finding(
        "UNSUPPORTED_CONFIG",
        Severity.ERROR,
        f"{rel} refuses this config.json: {problem[0]}",
        (
            "the key-by-key replay below proceeds as if config.json had been rewritten, "
            "so you also see what would happen to the tensors",
        ),
        fix,
        str(rel),
        problem[1],
    )
