"""What a load replay means for the user: one small function per finding code.

`findings_for` reads a `kit.load.report.LoadReport` of a config the release accepts; `refused_findings`
speaks for a release that refuses config.json as saved: the refusal first (the server never
starts), then what the keys would do once config.json is rewritten, labelled as such and never
ranked as a root cause of their own.
"""

from __future__ import annotations

from collections.abc import Callable

from kit.checkpoint.config import DraftConfig
from kit.cost import unmeasured
from kit.engines import ENGINES, EngineRelease, all_releases
from kit.engines.classes import Shape, shape_evidence
from kit.engines.vocab import Init, Outcome, Refusal, State, TokenMap
from kit.findings import Finding, Severity
from kit.load.report import LoadReport, ParamState

IF_REWRITTEN = "if config.json is rewritten"
FLAGS = ("norm_before_fc", "fc_norm", "norm_output", "norm_before_residual")


def refused_findings(
    rel: EngineRelease, refusal: Refusal, rewritten: LoadReport, changes: list[str]
) -> list[Finding]:
    """The refusal as the first root cause, then the rewritten replay's findings, conditional."""
    refused = Finding(
        code="UNSUPPORTED_CONFIG",
        severity=Severity.CRITICAL,
        title=f"{rel} refuses this config.json: {refusal.message}; the server does not start",
        evidence=(
            "no key is loaded: every key's outcome is error",
            f"the key-level replay ({IF_REWRITTEN} in this release's own form) follows, "
            + ("and loads every tensor" if rewritten.loads_cleanly else "and finds problems"),
        ),
        fix=_refusal_fix(rel, changes, rewritten),
        engine=str(rel),
        source=refusal.source,
        root_cause=True,
        data={"config_changes": list(changes)},
    )
    return [refused, *(conditional(f) for f in rewritten.findings)]


def _refusal_fix(rel: EngineRelease, changes: list[str], rewritten: LoadReport) -> str:
    """The rewrite this release needs, named (the class it registers for this draft's shape
    among it), when one makes it build the draft; the engine's general advice otherwise."""
    if rewritten.refusal is not None and rewritten.findings:
        return rewritten.findings[0].fix  # no rewrite helps: where the draft can be served
    if not changes:
        return ENGINES[rel.name].CONFIG_FIX
    return "; ".join(changes) + f": python -m kit fix CKPT --engine {rel} writes it"


def conditional(f: Finding) -> Finding:
    """A finding that holds only once config.json is rewritten: labelled, not a root cause."""
    return Finding(
        code=f.code,
        severity=f.severity,
        title=f"{IF_REWRITTEN}: {f.title}",
        evidence=f.evidence,
        fix=f.fix,
        engine=f.engine,
        source=f.source,
        root_cause=False,
        data={**f.data, "condition": IF_REWRITTEN, "root_cause_if_rewritten": f.root_cause},
    )


def unconditional(f: Finding) -> Finding:
    """Back from `conditional`: the finding as it holds when the rewritten config is served."""
    if f.data.get("condition") != IF_REWRITTEN:
        return f
    data = {k: v for k, v in f.data.items() if k not in ("condition", "root_cause_if_rewritten")}
    return Finding(
        code=f.code,
        severity=f.severity,
        title=f.title.removeprefix(f"{IF_REWRITTEN}: "),
        evidence=f.evidence,
        fix=f.fix,
        engine=f.engine,
        source=f.source,
        root_cause=bool(f.data.get("root_cause_if_rewritten")),
        data=data,
    )


def served_findings(load: LoadReport) -> list[Finding]:
    """The findings of a server that ran (see `reconcile`)."""
    return reconcile(load.findings, server_ran=True)


def reconcile(findings: list[Finding], server_ran: bool) -> list[Finding]:
    """Evidence reconciled: a server that ran did not read a config.json its release refuses.
    Then the refusal becomes a note (`CONFIG_NOT_SERVED`) and the findings that held only "if
    config.json is rewritten" hold as they are: the keys are judged as the release loads them
    under its own config form. Without proof that the server ran, nothing changes."""
    refused = next((f for f in findings if f.code == "UNSUPPORTED_CONFIG" and f.root_cause), None)
    if not server_ran or refused is None or "config_changes" not in refused.data:
        return list(findings)
    note = Finding(
        code="CONFIG_NOT_SERVED",
        severity=Severity.WARNING,
        title=f"the config.json given is not the one {refused.engine} served: "
        + refused.title.split(": ", 1)[-1].removesuffix("; the server does not start"),
        evidence=(
            "the server log has acceptance figures, so the server started with another config",
            "the keys are judged as that release loads them under its own config form",
            *(f"assumed rewrite: {c}" for c in refused.data["config_changes"]),
        ),
        fix="pass the config.json the server actually read (--draft-config FILE), or write "
        f"the one it reads: python -m kit fix CKPT --engine {refused.engine} --out CKPT-fixed",
        engine=refused.engine,
        source=refused.source,
    )
    return [note, *(unconditional(f) for f in findings if f is not refused)]


def findings_for(
    r: LoadReport,
    rel: EngineRelease,
    cfg: DraftConfig,
    fatal: Refusal | None,
    upgrade: EngineRelease | None,
) -> list[Finding]:
    """Every finding of a replay, in the order a reader should meet them."""
    if r.refusal is not None:
        return [_still_refused(r, rel, cfg)]
    fix = _fix(r.engine, upgrade)
    checks: list[Callable[[], Finding | None]] = [
        lambda: _class_mismatch(r, rel, cfg),
        lambda: _dropped(r, cfg, fix),
        lambda: _crash(r, fatal, fix),
        lambda: _warned(r, fix),
        lambda: _d2t_missing(r, rel, cfg, fatal),
        lambda: _head_missing(r, rel, cfg),
        lambda: _tied_head(r, cfg),
        lambda: _embed_replaced(r),
        lambda: _input_norm_discarded(r),
        lambda: _norm_unused(r),
        lambda: _module_skipped(r, rel, cfg),
        lambda: _flags_ignored(r, rel, cfg),
        lambda: _left_at_init(r, fatal),
    ]
    return [unmeasured(f) for f in (check() for check in checks) if f is not None]


def _still_refused(r: LoadReport, rel: EngineRelease, cfg: DraftConfig) -> Finding:
    """A rewritten config the release still refuses: only the refusal can be said, and which
    release registers a class for the draft's shape."""
    refusal = r.refusal or Refusal("", "")
    shape, _ = shape_evidence(cfg, [k.key for k in r.keys])
    return Finding(
        code="UNSUPPORTED_CONFIG",
        severity=Severity.CRITICAL,
        title=f"{r.engine} refuses this config.json: {refusal.message}",
        evidence=("no rewrite of config.json makes this release build the draft",),
        fix=no_class_fix(rel, shape),
        engine=r.engine,
        source=refusal.source,
        root_cause=True,
    )


def no_class_fix(rel: EngineRelease, shape: Shape) -> str:
    """Where a draft of this shape can be served, when `rel` has no class for it."""
    eng = ENGINES[rel.name]
    if eng.class_for(shape, rel) is not None:
        return "serve the draft with another engine or release"
    later = [r for r in all_releases(rel.name) if r.version > rel.version]
    first = next((r for r in later if eng.class_for(shape, r) is not None), None)
    if first is None:
        return (
            f"{rel.name} registers no class for {shape.words} drafts: serve it with another engine"
        )
    name = eng.class_for(shape, first).name
    return f"{rel} registers no class for {shape.words} drafts: {rel.name} ≥ {first.version} does ({name})"


NORM_ONLY = {Shape.LLAMA, Shape.QWEN3}


def _class_mismatch(r: LoadReport, rel: EngineRelease, cfg: DraftConfig) -> Finding | None:
    """A draft of one shape served by a class built for another: its attention tensors have no
    parameter to load into. The shape comes from the config's fields and the checkpoint's
    tensors, never from the name that picked the class."""
    eng = ENGINES[rel.name]
    built = eng.draft_class(cfg, rel)
    shape, why = shape_evidence(cfg, [k.key for k in r.keys])
    if built is None or built.shape is shape or {built.shape, shape} == NORM_ONLY:
        return None  # a Qwen3 / Llama difference is two per-head norms: the key replay says it
    want = eng.class_for(shape, rel)
    arch = cfg.architectures[0] if cfg.architectures else "no architectures"
    fix = (
        f"name the class {rel} registers for {shape.words} drafts, {want.name} ({want.source}): "
        f"python -m kit fix CKPT --engine {rel} writes it"
        if want is not None
        else no_class_fix(rel, shape)
    )
    return Finding(
        code="DRAFT_CLASS_MISMATCH",
        severity=Severity.CRITICAL,
        title=f"the draft is {shape.words}, but {r.engine} builds {built.name}, its class for "
        f"{built.shape.words} drafts, for [{arch}]: its layer tensors cannot load",
        evidence=(
            *(f"{shape.value} draft: {w}" for w in why),
            f"[{arch}] -> {built.name} ({built.source})",
        ),
        fix=fix,
        engine=r.engine,
        source=built.source,
        root_cause=True,
        data={"shape": str(shape), "built": built.name, "class": want.name if want else None},
    )


def _fix(engine: str, upgrade: EngineRelease | None) -> str:
    fix = f"python -m kit fix CKPT --engine {engine} --out CKPT-fixed (renames the keys)"
    if upgrade is not None:
        fix += f", or upgrade to {upgrade.name} ≥ {upgrade.version} (loads every tensor as is)"
    return fix


def _decoder(name: str) -> bool:
    return ".midlayer." in name or ".layers." in name


def _used_at_init(r: LoadReport) -> list[ParamState]:
    return [p for p in r.params if p.state == State.LEFT_AT_INIT and not p.unused]


def _dropped(r: LoadReport, cfg: DraftConfig, fix: str) -> Finding | None:
    """Keys dropped without a word; a tied config's head is `TIED_HEAD_DROPPED`'s (no rename
    brings it back)."""
    tied = cfg.tie_word_embeddings
    dropped = [k for k in r.with_outcome(Outcome.DROPPED) if not (tied and "lm_head" in k.key)]
    if not dropped:
        return None
    layer_at_init = [p for p in _used_at_init(r) if _decoder(p.name)]
    critical = bool(layer_at_init)
    title = f"{len(dropped)} checkpoint tensors are dropped without a warning"
    if critical and r.crashed:  # the engine then fails on the parameters they were meant for
        title += f"; {len(layer_at_init)} decoder-layer parameters get no tensor"
    elif critical:
        title += (
            f"; {len(layer_at_init)} decoder-layer parameters stay at init: acceptance falls "
            "toward the floor"
        )
    return Finding(
        code="KEYS_SILENTLY_DROPPED",
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        title=title,
        evidence=tuple(f"{k.key}: {k.message}" for k in dropped)
        + tuple(f"{p.name} left at init ({p.init})" for p in layer_at_init),
        fix=fix,
        engine=r.engine,
        source=dropped[0].source,
        root_cause=critical,
        data={"keys": [k.key for k in dropped], "params": [p.name for p in layer_at_init]},
    )


def _crash(r: LoadReport, fatal: Refusal | None, fix: str) -> Finding | None:
    errors = r.with_outcome(Outcome.ERROR)
    if not (fatal or errors):
        return None
    first = fatal or Refusal(errors[0].message, errors[0].source)
    evidence = (fatal.message,) if fatal else tuple(dict.fromkeys(k.message for k in errors))
    return startup_crash(r.engine, first, fix, evidence)


def startup_crash(
    engine: str, first: Refusal, fix: str, evidence: tuple[str, ...] | None = None
) -> Finding:
    """The release does not start with this draft: the exception it raises, and where. Shared
    by the load replay and the trace (whose draft module the release never builds)."""
    evidence = evidence or (first.message,)
    return Finding(
        code="STARTUP_CRASH",
        severity=Severity.ERROR,
        title=f"{engine} fails at start-up: {first.message}",
        evidence=evidence,
        fix=fix,
        engine=engine,
        source=first.source,
        data={"exceptions": list(evidence)},
    )


def _warned(r: LoadReport, fix: str) -> Finding | None:
    warned = r.with_outcome(Outcome.WARNED)
    if not warned:
        return None
    return Finding(
        code="KEYS_WARNED",
        severity=Severity.WARNING,
        title=f"{len(warned)} checkpoint tensors are skipped with a warning in the log",
        evidence=tuple(f"{k.key}: {k.message}" for k in warned),
        fix=fix,
        engine=r.engine,
        source=warned[0].source,
    )


def _d2t_missing(
    r: LoadReport, rel: EngineRelease, cfg: DraftConfig, fatal: Refusal | None
) -> Finding | None:
    """No d2t: harmless only when the draft vocab is the target's and the engine's token map
    without d2t is the identity; an absolute map (LMDeploy) stays zeros whatever the vocab."""
    token_map = next((p for p in r.params if p.name == "draft_id_to_target_id"), None)
    absolute = ENGINES[rel.name].era(rel).value.token_map is TokenMap.ABSOLUTE and (
        token_map is None or token_map.init != Init.IDENTITY
    )
    has_d2t = any("d2t" in k.key for k in r.keys)
    if has_d2t or fatal or (cfg.effective_draft_vocab >= cfg.vocab_size and not absolute):
        return None
    title = (
        f"no d2t tensor: {r.engine}'s token map stays zeros, so every drafted token becomes "
        "target id 0"
        if absolute
        else f"no d2t tensor although the draft vocab ({cfg.effective_draft_vocab}) is smaller "
        f"than the target's ({cfg.vocab_size}): draft ids are taken as target ids"
    )
    return Finding(
        code="D2T_MISSING",
        severity=Severity.CRITICAL,
        title=title,
        evidence=(f"draft_vocab_size={cfg.draft_vocab_size}", f"vocab_size={cfg.vocab_size}"),
        fix="add the trainer's d2t (draft→target offsets) to the checkpoint",
        engine=r.engine,
        source=ENGINES[rel.name].d2t_source(rel),
        root_cause=True,
    )


def _head_missing(r: LoadReport, rel: EngineRelease, cfg: DraftConfig) -> Finding | None:
    head = next((p for p in r.params if p.name == "lm_head.weight"), None)
    if head is None or head.state != State.LEFT_AT_INIT:
        return None
    if cfg.tie_word_embeddings:
        fix = "set tie_word_embeddings: false so the trained lm_head.weight loads"
    elif ENGINES[rel.name].era(rel).value.own_head_only:
        fix = f"ship the trained lm_head.weight ({r.engine} never borrows the target's)"
    else:
        fix = (
            "ship the trained lm_head.weight (or set draft_vocab_size: null to borrow the target's)"
        )
    return Finding(
        code="LM_HEAD_MISSING",
        severity=Severity.CRITICAL,
        title=f"lm_head.weight is never loaded and stays {head.init}: acceptance near the floor",
        evidence=tuple(
            f"{k.key}: {k.outcome}" + (f" ({k.message})" if k.message else "")
            for k in r.keys
            if "lm_head" in k.key
        )
        or ("no lm_head tensor in the checkpoint",),
        fix=fix,
        engine=r.engine,
        source=r.keys[0].source if r.keys else None,
        root_cause=True,
    )


def _tied_head(r: LoadReport, cfg: DraftConfig) -> Finding | None:
    """A tied config over a trained head: the engine makes the head its embedding (the target's,
    once the worker shares it) and throws the checkpoint's head away, so the draft's logits no
    longer come from what it trained. With a reduced draft vocabulary they do not even range
    over the draft's tokens."""
    tied = [
        k for k in r.keys if "lm_head" in k.key and k.outcome in (Outcome.DROPPED, Outcome.IGNORED)
    ]
    head = next((p for p in r.params if p.name == "lm_head.weight"), None)
    if not (cfg.tie_word_embeddings and tied) or (head and head.state == State.LEFT_AT_INIT):
        return None  # a head nothing fills is LM_HEAD_MISSING: the engine ties nothing
    reduced = cfg.effective_draft_vocab < cfg.vocab_size
    return Finding(
        code="TIED_HEAD_DROPPED",
        severity=Severity.CRITICAL if reduced else Severity.ERROR,
        title="tie_word_embeddings is true over a trained lm_head: the checkpoint's head is "
        "discarded and the (target's) embedding is the head"
        + (
            f", whose {cfg.vocab_size} rows are not the draft's {cfg.effective_draft_vocab} tokens"
            if reduced
            else ""
        ),
        evidence=(
            *(f"{k.key}: {k.message}" for k in tied),
            f"draft_vocab_size {cfg.draft_vocab_size}, vocab_size {cfg.vocab_size}",
        ),
        fix="set tie_word_embeddings: false so the trained head loads (python -m kit fix CKPT "
        f"--engine {r.engine} writes it)",
        engine=r.engine,
        source=tied[0].source,
        root_cause=True,
    )


def _embed_replaced(r: LoadReport) -> Finding | None:
    p = next((p for p in r.params if p.name == "model.embed_tokens.weight"), None)
    if p is None or p.state != State.FROM_TARGET or not p.loaded_from:
        return None
    return Finding(
        code="EMBED_REPLACED_BY_TARGET",
        severity=Severity.INFO,
        title="the checkpoint's embed_tokens is loaded, then replaced by the target's",
        evidence=(p.message,),
        fix="nothing to do unless the draft was trained with its own embedding",
        engine=r.engine,
        source=p.source,
    )


def _input_norm_discarded(r: LoadReport) -> Finding | None:
    k = next((k for k in r.with_outcome(Outcome.IGNORED) if "input_norm" in k.key), None)
    if k is None:
        return None
    return Finding(
        code="INPUT_NORM_DISCARDED",
        severity=Severity.ERROR,
        title="the trained input_norm.weight (norm_before_fc) is discarded by a skip rule",
        evidence=(f"{k.key}: {k.message}",),
        fix="use a release that reads norm_before_fc for this config",
        engine=r.engine,
        source=k.source,
        data={"key": k.key},
    )


def _swapped_norms(r: LoadReport) -> list[tuple[ParamState, ParamState]]:
    """(trained norm loaded but unused, the norm used in its place, left at init) per layer."""
    by_name = {p.name: p for p in r.params}
    pairs = []
    for p in r.params:
        if not (p.unused and p.state == State.LOADED and p.name.endswith("norm.weight")):
            continue
        layer = p.name.rsplit(".", 2)[0]
        for other in ("hidden_norm", "input_layernorm"):
            used = by_name.get(f"{layer}.{other}.weight")
            if used and used is not p and not used.unused and used.state == State.LEFT_AT_INIT:
                pairs.append((p, used))
    return pairs


def _norm_unused(r: LoadReport) -> Finding | None:
    pairs = _swapped_norms(r)
    if not pairs:
        return None
    return Finding(
        code="TRAINED_NORM_UNUSED",
        severity=Severity.ERROR,
        title=f"{len(pairs)} decoder layer(s) open with a norm the checkpoint does not have, while "
        "the trained one is loaded and never used",
        evidence=tuple(
            f"{used.name} stays {used.init} and is used; {unused.name} (from "
            f"{', '.join(unused.loaded_from)}) is loaded but unused"
            for unused, used in pairs
        ),
        fix="rename each later layer's trained input_layernorm to hidden_norm for this engine, "
        "or serve the draft with an engine that opens later layers with input_layernorm",
        engine=r.engine,
        source=pairs[0][0].unused,
        data={"params": [used.name for _, used in pairs], "key_renames": _norm_renames(pairs)},
    )


def _norm_renames(pairs: list[tuple[ParamState, ParamState]]) -> dict[str, str]:
    """The checkpoint renames that load each trained norm into the norm the layer uses."""
    out = {}
    for unused, used in pairs:
        old, new = unused.name.rsplit(".", 2)[1], used.name.rsplit(".", 2)[1]
        for key in unused.loaded_from:
            out[key] = key.replace(f".{old}.", f".{new}.")
    return out


# the tensors of a trained module a norm flag switches on (the others change the forward only)
MODULE_KEYS = {"fc_norm": "fc_norm.", "norm_before_fc": "input_norm."}


def _flags_ignored(r: LoadReport, rel: EngineRelease, cfg: DraftConfig) -> Finding | None:
    skipped = ("norm_before_fc",) if _input_norm_discarded(r) else ()
    return flags_ignored(cfg, rel, skipped + tuple(_skipped_modules(r, rel, cfg)))


def _skipped_modules(r: LoadReport, rel: EngineRelease, cfg: DraftConfig) -> dict[str, list[str]]:
    """Trained modules the release neither builds nor runs: flag -> the checkpoint keys it
    drops (a flag it does not read, with its tensors lost)."""
    runs = ENGINES[rel.name].honours(cfg, rel)
    out = {}
    for flag, prefix in MODULE_KEYS.items():
        if not getattr(cfg, flag) or getattr(runs, flag):
            continue
        keys = [k.key for k in r.lost if k.key.removeprefix("model.").startswith(prefix)]
        if keys:
            out[flag] = keys
    return out


def _module_skipped(r: LoadReport, rel: EngineRelease, cfg: DraftConfig) -> Finding | None:
    """A module the draft was trained with that the release drops: the draft it serves is another
    function than the one trained, a root cause; the cost is what offline acceptance measures
    with the module (healthy) against without it (as this release runs it)."""
    skipped = _skipped_modules(r, rel, cfg)
    if not skipped or r.crashed:
        return None
    runs = ENGINES[rel.name].honours(cfg, rel)
    names = ", ".join(skipped)
    return Finding(
        code="TRAINED_MODULE_SKIPPED",
        severity=Severity.ERROR,
        title=f"{r.engine} skips the trained {names}: its tensors are dropped and the flag is not "
        "read, so the draft runs without a module it was trained with",
        evidence=tuple(
            f"{flag}: {len(keys)} tensors dropped ({', '.join(keys[:3])}); {r.engine} runs "
            f"{flag}={getattr(runs, flag)} ({runs.sources.get(flag, '')})"
            for flag, keys in skipped.items()
        ),
        fix="serve the draft with a release that builds the module; measure what it costs "
        f"offline: python -m kit offline --target TARGET --draft DRAFT --engine {r.engine}",
        engine=r.engine,
        source=runs.sources.get(next(iter(skipped))),
        root_cause=True,
        data={"modules": skipped},
    )


def flags_ignored(
    cfg: DraftConfig, rel: EngineRelease, skipped: tuple[str, ...] = ()
) -> Finding | None:
    """A trained behaviour (norm flag) the release does not implement as trained: the draft then
    computes another function than the one it was trained as. Shared by the load replay and the
    trace, so every analysis names it."""
    runs = ENGINES[rel.name].honours(cfg, rel)
    differ = [f for f in FLAGS if f not in skipped and getattr(cfg, f) != getattr(runs, f)]
    if not differ:
        return None
    engine = str(rel)
    return Finding(
        code="TRAINED_FLAG_IGNORED",
        severity=Severity.WARNING,
        title=f"{engine} runs the draft differently from its training: "
        + ", ".join(f"{f}={getattr(runs, f)} (trained {getattr(cfg, f)})" for f in differ),
        evidence=tuple(
            f"{f}: config says {getattr(cfg, f)}, {engine} runs {getattr(runs, f)} "
            f"({runs.sources.get(f, '')})"
            for f in differ
        ),
        fix="serve the draft with a release that implements these flags, or measure the cost "
        "offline (python -m kit offline --engine …) before deploying",
        engine=engine,
        source=runs.sources.get(differ[0]),
        data={"flags": {f: {"trained": getattr(cfg, f), "runs": getattr(runs, f)} for f in differ}},
    )


def _left_at_init(r: LoadReport, fatal: Refusal | None) -> Finding | None:
    if fatal or r.with_outcome(Outcome.ERROR):  # after a crash nothing runs at all
        return None
    dropped = bool(r.with_outcome(Outcome.DROPPED))
    covered = {used.name for _, used in _swapped_norms(r)} | {
        "lm_head.weight",
        "draft_id_to_target_id",
    }
    others = [
        p for p in _used_at_init(r) if p.name not in covered and not (dropped and _decoder(p.name))
    ]
    partial = [p for p in r.params if p.missing_shards]
    if not (others or partial):
        return None
    garbage = any(p.init == Init.UNINITIALIZED for p in others) or bool(partial)
    random_bias = any(p.init == Init.RANDOM for p in others)
    return Finding(
        code="PARAM_LEFT_AT_INIT",
        severity=Severity.CRITICAL if garbage else Severity.WARNING,
        title=f"{len(others) + len(partial)} engine parameters are not (fully) loaded",
        evidence=tuple(f"{p.name} {list(p.shape)} stays {p.init.left}" for p in others)
        + tuple(f"{p.name} misses shards {p.missing_shards}" for p in partial),
        fix="ship these tensors in the checkpoint"
        + (" (fc.bias: random init in this release)" if random_bias else ""),
        engine=r.engine,
        source=r.keys[0].source if r.keys else None,
        root_cause=garbage,
        data={"params": [p.name for p in others + partial]},
    )
