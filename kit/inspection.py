"""What `python -m kit inspect` finds in a checkpoint: header facts, format, config and findings.

Everything here reads headers and config.json only, except LOOKS_UNTRAINED and D2T_INVALID,
which read tensor bytes and run only when statistics are asked for (`stats=True`, `--stats`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.checkpoint import (
    FLOAT_DTYPES,
    Checkpoint,
    TensorStats,
    checkpoint_stats,
    looks_untrained,
    open_checkpoint,
)
from kit.config import DraftConfig, TargetConfig, parse_draft_config, parse_target_config, read_json
from kit.findings import Finding, Severity, ranked
from kit.formats import FormatGuess, detect_format, split_key

# The tensors an EAGLE-3 draft may hold (any layout); anything else is an extra key.
_KNOWN_TOP = re.compile(
    r"^(embed_tokens\.weight|fc\.(weight|bias)|norm\.weight|lm_head\.weight|d2t|t2d"
    r"|input_norm\.weight|fc_norm\.\d+\.weight)$"
)
_KNOWN_LAYER = re.compile(
    r"^(self_attn\.[qkvo]_proj\.(weight|bias)|self_attn\.[qk]_norm\.weight"
    r"|mlp\.(gate|up|down)_proj\.weight|(input|post_attention)_layernorm\.weight"
    r"|hidden_norm\.weight)$"
)
_QUANT_SCALE = re.compile(r"(weight|input|output|k|v)_scale(_inv)?$")


@dataclass
class InspectionReport:
    """A checkpoint's tensors, detected format, normalised config and findings."""

    path: Path
    checkpoint: Checkpoint
    format: FormatGuess
    config: DraftConfig | TargetConfig | None
    findings: list[Finding]
    stats: dict[str, TensorStats] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if isinstance(self.config, DraftConfig):
            config = {"kind": "draft", **self.config.to_dict()}
        elif isinstance(self.config, TargetConfig):
            config = {"kind": "target", **self.config.to_dict()}
        out = {
            "path": str(self.path),
            "format": self.format.to_dict(),
            "config": config,
            "tensors": [t.to_dict() for t in self.checkpoint.tensors.values()],
            "findings": [f.to_dict() for f in ranked(self.findings)],
        }
        if self.stats:
            out["stats"] = {n: s.to_dict() for n, s in self.stats.items()}
        return out


def load_config(ck: Checkpoint) -> DraftConfig | TargetConfig | None:
    """The draft config beside the checkpoint; a target's config when it is not a draft's."""
    if ck.config_path is None:
        return None
    raw = read_json(ck.config_path)
    archs = " ".join(map(str, raw.get("architectures") or []))
    is_draft = (
        "transformer_layer_config" in raw
        or "draft_vocab_size" in raw
        or "eagle_config" in raw
        or "eagle" in archs.lower()
        or _looks_like_draft(ck)
    )
    if is_draft:
        return parse_draft_config(raw, ck.config_path)
    return parse_target_config(raw, ck.config_path)


def inspect_checkpoint(path: str | Path, stats: bool = False) -> InspectionReport:
    """Open `path` header-only and check it; `stats=True` also reads bytes (untrained, d2t)."""
    ck = open_checkpoint(path)
    cfg = load_config(ck)
    draft = cfg if isinstance(cfg, DraftConfig) else None
    guess = detect_format(ck, draft)
    findings = [*check_keys(ck, draft, cfg), *check_dtypes(ck)]
    if draft is not None:
        findings += check_shapes(ck, draft)
    tensor_stats: dict[str, TensorStats] = {}
    if stats:
        tensor_stats = checkpoint_stats(ck)
        findings += check_untrained(ck, tensor_stats, draft)
        findings += check_vocab_maps(ck, draft)
    return InspectionReport(Path(path), ck, guess, cfg, findings, tensor_stats)


def _has(ck: Checkpoint, name: str) -> bool:
    return name in ck.tensors or f"model.{name}" in ck.tensors


def _get(ck: Checkpoint, name: str):
    return ck.tensors.get(name) or ck.tensors.get(f"model.{name}")


def check_keys(
    ck: Checkpoint, draft: DraftConfig | None, cfg: DraftConfig | TargetConfig | None
) -> list[Finding]:
    """Missing config, missing vocab map / lm_head / embed_tokens, and keys no draft has."""
    out: list[Finding] = []
    if cfg is None:
        out.append(
            Finding(
                "CONFIG_MISSING",
                Severity.WARNING,
                "No config.json beside the checkpoint: shapes cannot be checked against it",
                (f"looked for {ck.folder.name}/config.json",),
                fix="Put the draft's config.json next to its weights; engines need it to load.",
            )
        )
    if isinstance(cfg, TargetConfig):
        return out  # a target checkpoint: draft-specific checks do not apply
    smaller_vocab = bool(
        draft and draft.draft_vocab_size and draft.draft_vocab_size < draft.vocab_size
    )
    if draft and smaller_vocab and not _has(ck, "d2t"):
        out.append(
            Finding(
                "D2T_MISSING",
                Severity.ERROR,
                "draft vocab is smaller than the target's but there is no d2t map",
                (
                    f"draft_vocab_size {draft.draft_vocab_size} < vocab_size {draft.vocab_size}",
                    "no tensor named d2t",
                ),
                fix="Save d2t (int64 offsets, target_id = i + d2t[i]) from the training vocab "
                "mapping; without it draft id i is read as target id i.",
            )
        )
    if not _has(ck, "lm_head.weight"):
        out.append(
            Finding(
                "LM_HEAD_MISSING",
                Severity.ERROR,
                "no lm_head.weight: the draft cannot produce token logits of its own",
                ("no tensor named lm_head.weight",),
                fix="Export the draft's lm_head [draft_vocab, hidden] with the other weights.",
            )
        )
    if not _has(ck, "embed_tokens.weight"):
        out.append(
            Finding(
                "EMBED_TOKENS_MISSING",
                Severity.INFO,
                "no embed_tokens.weight: engines share the target's embedding",
                ("no tensor named embed_tokens.weight",),
                fix="Nothing to do if draft and target hidden sizes match.",
            )
        )
    extra = [k for k in ck.tensors if not _known_draft_key(k)]
    if extra and (draft is not None or _looks_like_draft(ck)):
        verifier = [k for k in extra if k.startswith("verifier_")]
        out.append(
            Finding(
                "EXTRA_KEYS",
                Severity.WARNING,
                f"{len(extra)} tensor(s) that no EAGLE-3 draft layout defines",
                tuple(extra[:20])
                + (
                    (f"{len(verifier)} verifier_* keys: the target's, saved by mistake",)
                    if verifier
                    else ()
                ),
                fix="Engines drop or reject these; remove them (or rename them if they were meant "
                "to be draft weights).",
                data={"keys": extra},
            )
        )
    return out


def _known_draft_key(key: str) -> bool:
    lk = split_key(key)
    if _QUANT_SCALE.search(key):
        return True
    if lk.index is None:
        return bool(_KNOWN_TOP.match(lk.rest))
    return bool(_KNOWN_LAYER.match(lk.rest))


def _looks_like_draft(ck: Checkpoint) -> bool:
    return _has(ck, "fc.weight")


def check_dtypes(ck: Checkpoint) -> list[Finding]:
    """Floating tensors stored in more than one dtype (ints/bools of d2t/t2d are expected)."""
    by_dtype: dict[str, list[str]] = {}
    for t in ck.tensors.values():
        if t.dtype in FLOAT_DTYPES:
            by_dtype.setdefault(t.dtype, []).append(t.name)
    if len(by_dtype) < 2:
        return []
    evidence = tuple(
        f"{d}: {len(names)} tensors, e.g. {names[0]}" for d, names in sorted(by_dtype.items())
    )
    return [
        Finding(
            "MIXED_DTYPES",
            Severity.WARNING,
            f"floating tensors in {len(by_dtype)} dtypes: {', '.join(sorted(by_dtype))}",
            evidence,
            fix="Cast all floating weights to one dtype (the config's dtype) before serving.",
            data={"dtypes": {d: len(n) for d, n in by_dtype.items()}},
        )
    ]


def expected_shapes(ck: Checkpoint, cfg: DraftConfig) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each tensor's shape as the config implies it, with the reason (for the evidence)."""
    h, hd, kv = cfg.hidden_size, cfg.head_dim, cfg.num_key_value_heads
    q_out = cfg.num_attention_heads * hd
    tw = cfg.target_width
    want: dict[str, tuple[tuple[int, ...], str]] = {
        "fc.weight": (
            (h, cfg.num_aux * tw),
            f"[hidden, num_aux {cfg.num_aux} × target width {tw}]",
        ),
        "norm.weight": ((h,), "[hidden]"),
        "lm_head.weight": ((cfg.effective_draft_vocab, h), "[draft vocab, hidden]"),
        "embed_tokens.weight": ((cfg.vocab_size, h), "[vocab, hidden]"),
        "d2t": ((cfg.effective_draft_vocab,), "[draft vocab]"),
        "t2d": ((cfg.vocab_size,), "[vocab]"),
        "input_norm.weight": ((cfg.num_aux * tw,), "[num_aux × target width]"),
    }
    first = min((lk.index for lk in map(split_key, ck.tensors) if lk.index is not None), default=0)
    for key in ck.tensors:
        lk = split_key(key)
        if lk.index is None:
            continue
        d_in = 2 * h if lk.index == first else h
        why_in = "2 × hidden (embeds ++ hidden)" if lk.index == first else "hidden"
        layer = {
            "self_attn.q_proj.weight": ((q_out, d_in), f"[heads × head_dim, {why_in}]"),
            "self_attn.k_proj.weight": ((kv * hd, d_in), f"[kv heads × head_dim, {why_in}]"),
            "self_attn.v_proj.weight": ((kv * hd, d_in), f"[kv heads × head_dim, {why_in}]"),
            "self_attn.o_proj.weight": ((h, q_out), "[hidden, heads × head_dim]"),
            "mlp.gate_proj.weight": ((cfg.intermediate_size, h), "[intermediate, hidden]"),
            "mlp.up_proj.weight": ((cfg.intermediate_size, h), "[intermediate, hidden]"),
            "mlp.down_proj.weight": ((h, cfg.intermediate_size), "[hidden, intermediate]"),
            "input_layernorm.weight": ((h,), "[hidden]"),
            "post_attention_layernorm.weight": ((h,), "[hidden]"),
            "hidden_norm.weight": ((h,), "[hidden]"),
        }
        if lk.rest in layer:
            want[key] = layer[lk.rest]
    return want


def check_shapes(ck: Checkpoint, cfg: DraftConfig) -> list[Finding]:
    """Tensor shapes and the layer count the config implies, against the header."""
    evidence = []
    for name, (shape, why) in expected_shapes(ck, cfg).items():
        info = _get(ck, name)
        if info is not None and info.shape != shape:
            evidence.append(f"{info.name}: {list(info.shape)}, config implies {list(shape)} {why}")
    layers = {lk.index for lk in map(split_key, ck.tensors) if lk.index is not None}
    if layers and len(layers) != cfg.num_hidden_layers:
        evidence.append(
            f"{len(layers)} decoder layer(s) in the checkpoint {sorted(layers)}, "
            f"num_hidden_layers = {cfg.num_hidden_layers}"
        )
    if not evidence:
        return []
    return [
        Finding(
            "SHAPE_CONTRADICTS_CONFIG",
            Severity.ERROR,
            f"{len(evidence)} shape(s) contradict config.json",
            tuple(evidence),
            fix="Use the config.json the checkpoint was trained with (hidden sizes, aux layer "
            "count, target_hidden_size, draft_vocab_size), or re-export the weights.",
        )
    ]


def check_untrained(
    ck: Checkpoint, stats: dict[str, TensorStats], cfg: DraftConfig | None
) -> list[Finding]:
    """Tensors whose values look like their init (or like uninitialised memory)."""
    init_range = cfg.initializer_range if cfg else 0.02
    reasons = {}
    for name, s in stats.items():
        why = looks_untrained(ck.tensors[name], s, init_range)
        if why:
            reasons[name] = why
    if not reasons:
        return []
    garbage = any("uninitialised" in r or "NaN" in r for r in reasons.values())
    return [
        Finding(
            "LOOKS_UNTRAINED",
            Severity.ERROR if garbage else Severity.WARNING,
            f"{len(reasons)} of {len(stats)} tensors look untrained or uninitialised",
            tuple(f"{n}: {r}" for n, r in reasons.items()),
            fix="Check that training updated these weights and that the exported file is the "
            "trained one (a converter that random-initialises unmatched keys produces this).",
            data={"tensors": reasons},
        )
    ]


def check_vocab_maps(ck: Checkpoint, cfg: DraftConfig | None) -> list[Finding]:
    """d2t holds offsets (target id = i + d2t[i]), sorted and inside the target vocab, and names
    the same ids as t2d (checkpoint-formats.md §3). Absolute ids stored as offsets map draft i to
    2i (verl-SpeCo PR #67)."""
    d2t_info = _get(ck, "d2t")
    if d2t_info is None or cfg is None:
        return []
    import torch

    d2t = ck.read_tensor(d2t_info.name).to(torch.int64).reshape(-1)
    targets = torch.arange(d2t.numel()) + d2t
    vocab = cfg.vocab_size
    evidence = []
    outside = ((targets < 0) | (targets >= vocab)).nonzero().reshape(-1)
    if outside.numel():
        i = int(outside[0])
        evidence.append(
            f"{outside.numel()} draft ids map outside the target vocab [0, {vocab}), "
            f"e.g. draft {i} -> {int(targets[i])} (d2t[{i}] = {int(d2t[i])})"
        )
    if targets.numel() > 1 and not bool((targets[1:] > targets[:-1]).all()):
        evidence.append("target ids i + d2t[i] are not strictly increasing")
    t2d_info = _get(ck, "t2d")
    if t2d_info is not None and not outside.numel():
        chosen = ck.read_tensor(t2d_info.name).reshape(-1).nonzero().reshape(-1)
        if chosen.numel() != targets.numel() or not torch.equal(chosen, targets.sort().values):
            evidence.append(
                f"t2d marks {chosen.numel()} target ids, d2t maps to {targets.numel()}; "
                f"first d2t targets {targets[:4].tolist()}, first t2d ids {chosen[:4].tolist()}"
            )
    if not evidence:
        return []
    return [
        Finding(
            "D2T_INVALID",
            Severity.ERROR,
            "d2t does not map draft ids onto the target vocab the way engines read it",
            tuple(evidence),
            fix="Store d2t as offsets (d2t[i] = target_id(i) - i) over sorted target ids, and "
            "t2d as the mask of those ids; identity is all zeros.",
        )
    ]


def check_pair(target: TargetConfig, draft: DraftConfig) -> list[Finding]:
    """The target-vs-draft checks live in the deployment check (`kit.deployment.configs`);
    this name stays for the callers that compare a pair without a launch line."""
    from kit.deployment.configs import Pair, vocabulary

    return vocabulary(Pair(draft, target))
