"""What `python -m kit inspect` finds in a checkpoint: header facts, format, config and findings.

Everything here reads headers and config.json only, except LOOKS_UNTRAINED and D2T_INVALID,
which read tensor bytes. How many is `StatsRead`: by default a bounded sample of each tensor of a
draft (`SAMPLE_BYTES` in evenly spaced windows, about a second for a 2 GB draft) plus d2t / t2d
whole; `--stats` reads every byte; `--header-only` none. A target's checkpoint (its config is a
target's) is read header-only unless every byte is asked for: 600 GB stay milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from kit.checkpoint.config import (
    DraftConfig,
    TargetConfig,
    read_json,
)
from kit.checkpoint.draft import Draft, classify_config, looks_like_draft, open_draft
from kit.checkpoint.files import (
    SAMPLE_BYTES,
    SAMPLE_WINDOWS,
    Checkpoint,
    TensorStats,
    TensorValues,
    checkpoint_stats,
    looks_untrained,
    read_array,
    tensor_values,
)
from kit.checkpoint.formats import FormatGuess, split_key
from kit.checkpoint.header import FLOAT_DTYPES
from kit.findings import Finding, Severity, ranked

# The tensors an EAGLE-3 draft may hold (any layout); anything else is an extra key.
_KNOWN_TOP = re.compile(
    r"^(embed_tokens\.weight|fc\.(weight|bias)|norm\.weight|lm_head\.weight|d2t|t2d"
    r"|input_norm\.weight|fc_norm\.\d+\.weight)$"
)
_KNOWN_LAYER = re.compile(
    r"^(self_attn\.[qkvo]_proj\.(weight|bias)|self_attn\.[qk]_norm\.weight"
    r"|self_attn\.(q_a_proj|q_b_proj|kv_a_proj_with_mqa|kv_b_proj)\.weight"  # MLA
    r"|self_attn\.(q_a|kv_a)_layernorm\.weight"
    r"|mlp\.(gate|up|down)_proj\.weight|(input|post_attention)_layernorm\.weight"
    r"|mlp\.(router|gate)\.(weight|bias)|mlp\.experts\..+"  # a routed MLP
    r"|hidden_norm\.weight)$"
)
_QUANT_SCALE = re.compile(r"(weight|input|output|k|v)_scale(_inv)?$")
_LAYER_MODULE = re.compile(r"^(.*?(?:layers|midlayer|h|blocks)\.\d+)\.")


def module_of(name: str) -> str:
    """The module a tensor belongs to, as `inspect` and notebook 1 group keys: a decoder layer
    whole (`layers.0`, `midlayer`, `model.layers.3`), anything else by its parent
    (`fc.weight` -> `fc`); a bare name (`d2t`) is its own module."""
    m = _LAYER_MODULE.match(name)
    if m:
        return m.group(1)
    if name.startswith("midlayer."):
        return "midlayer"
    return name.rsplit(".", 1)[0] if "." in name else name


class StatsRead(Enum):
    """How much of the tensor bytes an inspection reads."""

    NONE = "none"  # headers and config.json only
    SAMPLED = "sampled"  # SAMPLE_BYTES of each tensor of a draft, d2t / t2d whole
    FULL = "full"  # every byte


@dataclass
class InspectionReport:
    """A checkpoint's tensors, detected format, normalised config and findings."""

    path: Path
    checkpoint: Checkpoint
    format: FormatGuess
    config: DraftConfig | TargetConfig | None
    findings: list[Finding]
    stats: dict[str, TensorStats] = field(default_factory=dict)
    stats_read: StatsRead = StatsRead.NONE  # what was read, not only what was asked for

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
            "stats_read": self.stats_read.value,
        }
        if self.stats:
            out["stats"] = {n: s.to_dict() for n, s in self.stats.items()}
        if self.checkpoint.source is not None:
            out["hub"] = self.checkpoint.source.to_dict()
        return out


def load_config(ck: Checkpoint) -> DraftConfig | TargetConfig | None:
    """The draft config beside the checkpoint; a target's config when it is not a draft's."""
    if ck.config_path is None:
        return None
    return classify_config(read_json(ck.config_path), ck.config_path, ck)


def inspect_checkpoint(
    path: str | Path | Draft, stats: StatsRead = StatsRead.SAMPLED
) -> InspectionReport:
    """Open `path` (or take the draft already opened), check its header and config, and read as
    many tensor bytes as `stats` says (LOOKS_UNTRAINED, D2T_INVALID). SAMPLED reads nothing of a
    checkpoint that is no draft."""
    opened = open_draft(path, weights=True)
    ck, cfg = opened.checkpoint, opened.config
    assert ck is not None  # weights=True: opened as a checkpoint or refused
    draft = cfg if isinstance(cfg, DraftConfig) else None
    guess = opened.format
    findings = [*check_keys(ck, draft, cfg), *check_dtypes(ck)]
    if draft is not None:
        findings += [*check_shapes(ck, draft), *converter_kv_heads(ck, draft)]
    if stats is StatsRead.SAMPLED and draft is None and not looks_like_draft(ck):
        stats = StatsRead.NONE
    tensor_stats: dict[str, TensorStats] = {}
    if stats is not StatsRead.NONE:
        sample = SAMPLE_BYTES if stats is StatsRead.SAMPLED else None
        with tensor_values(ck) as values:  # one handle per file for every value read
            tensor_stats = checkpoint_stats(ck, sample_bytes=sample, values=values)
            findings += check_untrained(ck, tensor_stats, draft)
            findings += check_vocab_maps(ck, draft, values)
    return InspectionReport(opened.path, ck, guess, cfg, findings, tensor_stats, stats)


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
                code="CONFIG_MISSING",
                severity=Severity.WARNING,
                title="No config.json beside the checkpoint: shapes cannot be checked against it",
                evidence=(f"looked for {ck.folder.name}/config.json",),
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
                code="D2T_MISSING",
                severity=Severity.ERROR,
                title="draft vocab is smaller than the target's but there is no d2t map",
                evidence=(
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
                code="LM_HEAD_MISSING",
                severity=Severity.ERROR,
                title="no lm_head.weight: the draft cannot produce token logits of its own",
                evidence=("no tensor named lm_head.weight",),
                fix="Export the draft's lm_head [draft_vocab, hidden] with the other weights.",
            )
        )
    if not _has(ck, "embed_tokens.weight"):
        out.append(
            Finding(
                code="EMBED_TOKENS_MISSING",
                severity=Severity.INFO,
                title="no embed_tokens.weight: engines share the target's embedding",
                evidence=("no tensor named embed_tokens.weight",),
                fix="Nothing to do if draft and target hidden sizes match.",
            )
        )
    extra = [k for k in ck.tensors if not _known_draft_key(k)]
    if extra and (draft is not None or looks_like_draft(ck)):
        verifier = [k for k in extra if k.startswith("verifier_")]
        out.append(
            Finding(
                code="EXTRA_KEYS",
                severity=Severity.WARNING,
                title=f"{len(extra)} tensor(s) that no EAGLE-3 draft layout defines",
                evidence=tuple(extra[:20])
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
            code="MIXED_DTYPES",
            severity=Severity.WARNING,
            title=f"floating tensors in {len(by_dtype)} dtypes: {', '.join(sorted(by_dtype))}",
            evidence=evidence,
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
        layer = (
            _mla_layer(cfg, d_in, why_in)
            if _mla(cfg)
            else {
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
        )
        if lk.rest in layer:
            want[key] = layer[lk.rest]
    return want


def _mla(cfg: DraftConfig) -> bool:
    layer = cfg.raw.get("transformer_layer_config", cfg.raw)
    return isinstance(layer, dict) and layer.get("kv_lora_rank") is not None


def _mla_layer(cfg: DraftConfig, d_in: int, why_in: str) -> dict:
    """An MLA layer's shapes (DeepSeek's names, as ModelOpt's Kimi-K2 export writes them)."""
    r = cfg.raw
    h, heads = cfg.hidden_size, cfg.num_attention_heads
    ql, kvl = r.get("q_lora_rank"), int(r["kv_lora_rank"])
    nope, rope, v = (
        int(r.get(k) or 0) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    )
    inter = cfg.intermediate_size
    out = {
        "self_attn.kv_a_proj_with_mqa.weight": ((kvl + rope, d_in), f"[kv_lora_rank + qk_rope_head_dim, {why_in}]"),
        "self_attn.kv_a_layernorm.weight": ((kvl,), "[kv_lora_rank]"),
        "self_attn.kv_b_proj.weight": ((heads * (nope + v), kvl), "[heads × (qk_nope + v), kv_lora_rank]"),
        "self_attn.o_proj.weight": ((h, heads * v), "[hidden, heads × v_head_dim]"),
        "mlp.gate_proj.weight": ((inter, h), "[intermediate, hidden]"),
        "mlp.up_proj.weight": ((inter, h), "[intermediate, hidden]"),
        "mlp.down_proj.weight": ((h, inter), "[hidden, intermediate]"),
        "input_layernorm.weight": ((h,), "[hidden]"),
        "post_attention_layernorm.weight": ((h,), "[hidden]"),
        "hidden_norm.weight": ((h,), "[hidden]"),
    }  # fmt: skip
    if ql:
        out["self_attn.q_a_proj.weight"] = ((int(ql), d_in), f"[q_lora_rank, {why_in}]")
        out["self_attn.q_a_layernorm.weight"] = ((int(ql),), "[q_lora_rank]")
        out["self_attn.q_b_proj.weight"] = ((heads * (nope + rope), int(ql)), "[heads × (qk_nope + qk_rope), q_lora_rank]")  # fmt: skip
    return out


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
            code="SHAPE_CONTRADICTS_CONFIG",
            severity=Severity.ERROR,
            title=f"{len(evidence)} shape(s) contradict config.json",
            evidence=tuple(evidence),
            fix="Use the config.json the checkpoint was trained with (hidden sizes, aux layer "
            "count, target_hidden_size, draft_vocab_size), or re-export the weights.",
        )
    ]


# speculators' Eagle3Converter writes num_key_value_heads 8 when the source config omits it
# (vllm-project/speculators PR #636, open: `eagle_config.get("num_key_value_heads", 8)` in
# src/speculators/convert/eagle/eagle3_converter.py), where transformers would mean
# num_attention_heads (the model was trained with full multi-head attention).
CONVERTER_KV_DEFAULT = 8


def converter_kv_heads(ck: Checkpoint, cfg: DraftConfig) -> list[Finding]:
    """The converter's default left in a speculators config: k_proj holds a key per attention
    head while the config says 8 KV heads. Every engine refuses the shape at load; the fix is
    the config's number, not the weights."""
    if cfg.source != "speculators" or cfg.num_key_value_heads != CONVERTER_KV_DEFAULT:
        return []
    full = cfg.num_attention_heads * cfg.head_dim
    keys = [k for k in ck.tensors if k.endswith("self_attn.k_proj.weight")]
    rows = {ck.tensors[k].shape[0] for k in keys if ck.tensors[k].shape}
    if not keys or rows != {full} or full == CONVERTER_KV_DEFAULT * cfg.head_dim:
        return []
    return [
        Finding(
            code="KV_HEADS_CONVERTER_DEFAULT",
            severity=Severity.ERROR,
            title=f"num_key_value_heads {CONVERTER_KV_DEFAULT} in config.json, but k_proj holds "
            f"{cfg.num_attention_heads} heads: the converter's default for a source config that "
            "named none",
            evidence=(
                f"{keys[0]}: {list(ck.tensors[keys[0]].shape)}, {full} rows = "
                f"{cfg.num_attention_heads} heads × head_dim {cfg.head_dim}",
                f"transformer_layer_config.num_key_value_heads {CONVERTER_KV_DEFAULT}: "
                f"{CONVERTER_KV_DEFAULT * cfg.head_dim} rows expected; every engine's loader "
                "asserts the shape",
                "speculators' Eagle3Converter defaults the field to 8 where the EAGLE config "
                "omits it (transformers' default is num_attention_heads)",
            ),
            fix=f"set transformer_layer_config.num_key_value_heads to {cfg.num_attention_heads} "
            "in config.json (the weights are right)",
            source="vllm-project/speculators PR #636",
            root_cause=True,
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
            code="LOOKS_UNTRAINED",
            severity=Severity.ERROR if garbage else Severity.WARNING,
            title=f"{len(reasons)} of {len(stats)} tensors look untrained or uninitialised",
            evidence=(_read_note(stats), *(f"{n}: {r}" for n, r in reasons.items())),
            fix="Check that training updated these weights and that the exported file is the "
            "trained one (a converter that random-initialises unmatched keys produces this).",
            data={"tensors": reasons},
        )
    ]


def _read_note(stats: dict[str, TensorStats]) -> str:
    """Whether the statistics behind a finding saw every value or a sample of each tensor."""
    sampled = [s for s in stats.values() if s.sampled]
    if not sampled:
        return "statistics from every value of every tensor"
    return (
        f"statistics of {len(sampled)} larger tensor(s) from a sample: {SAMPLE_BYTES >> 10} KiB "
        f"of each in {SAMPLE_WINDOWS} evenly spaced windows (`inspect --stats` reads every byte)"
    )


class D2tFault(Enum):
    """Ways a d2t map sends draft ids to the wrong target ids, causes before symptoms: the first
    one found titles the finding."""

    ABSOLUTE_IDS = "absolute token ids stored where offsets belong"
    IDENTITY = "all-zero offsets on a reduced vocabulary: the first target ids"
    OUT_OF_RANGE = "targets outside the target vocabulary"
    FEW_TARGETS = "several draft ids share one target id"
    T2D_DISAGREES = "d2t and t2d name different target ids"


def check_vocab_maps(
    ck: Checkpoint, cfg: DraftConfig | None, values: TensorValues | None = None
) -> list[Finding]:
    """d2t holds offsets (every engine computes target id = i + d2t[i]) onto distinct target ids
    inside the target vocab, the same ids t2d marks. In any order: SpecForge and speculators
    sort the kept ids, ModelOpt numbers them by frequency, so its offsets go negative (0.47.0
    `torch/speculative/utils.py:62-76`), and every engine reads each id on its own
    (docs/conventions.md#vocabulary-maps-d2t-and-t2d). Both tensors are read whole: they hold
    one value per token id."""
    d2t_info = _get(ck, "d2t")
    if d2t_info is None or cfg is None:
        return []
    d2t = read_array(ck, d2t_info.name, values).astype(np.int64)
    t2d_info = _get(ck, "t2d")
    t2d = read_array(ck, t2d_info.name, values) if t2d_info is not None else None
    faults = _d2t_faults(d2t, t2d, cfg.vocab_size)
    if not faults:
        return []
    first = next(iter(faults))
    return [
        Finding(
            code="D2T_INVALID",
            severity=Severity.ERROR,
            title=f"d2t does not map draft ids onto the target vocab as engines read it: "
            f"{first.value}",
            evidence=tuple(faults.values()),
            fix="Store d2t as offsets (d2t[i] = target_id(i) - i) over the sorted ids of the "
            "draft vocabulary chosen from the training data, and t2d as the mask of those ids; "
            "all zeros is right only when the draft keeps the whole vocabulary.",
            data={"faults": [f.name for f in faults]},
        )
    ]


def _d2t_faults(d2t: np.ndarray, t2d: np.ndarray | None, vocab: int) -> dict[D2tFault, str]:
    """Each fault found in `d2t` (offsets) against the target vocab size and `t2d` (a mask)."""
    n = d2t.size
    targets = np.arange(n) + d2t
    found: dict[D2tFault, str] = {}
    outside = np.flatnonzero((targets < 0) | (targets >= vocab))
    if outside.size:
        i = int(outside[0])
        found[D2tFault.OUT_OF_RANGE] = (
            f"{outside.size} draft ids map outside the target vocab [0, {vocab}), "
            f"e.g. draft {i} -> {int(targets[i])} (d2t[{i}] = {int(d2t[i])})"
        )
    marked = np.flatnonzero(t2d) if t2d is not None else None
    absolute = _absolute_ids_evidence(d2t, marked, vocab, bool(outside.size))
    if absolute:
        found[D2tFault.ABSOLUTE_IDS] = absolute
    if n < vocab and n > 1 and not bool(d2t.any()):
        found[D2tFault.IDENTITY] = (
            f"every offset is 0 while the draft keeps {n} of {vocab} ids: draft id i is target id "
            f"i, so the draft can only propose target ids 0..{n - 1}, whatever tokens it was "
            "trained to predict (verl-project/verl-SpeCo PR #66)"
        )
    distinct = int(np.unique(targets).size)
    if distinct < n:
        found[D2tFault.FEW_TARGETS] = (
            f"only {distinct} distinct target ids for {n} draft ids: {n - distinct} draft ids "
            "repeat a target another one already proposes (SafeAILab/EAGLE issue #248)"
        )
    comparable = marked is not None and not outside.size and not absolute
    if comparable and not np.array_equal(marked, np.sort(targets)):
        found[D2tFault.T2D_DISAGREES] = (
            f"t2d marks {marked.size} target ids, d2t maps to {n}; first d2t targets "
            f"{targets[:4].tolist()}, first t2d ids {marked[:4].tolist()}"
        )
    return {fault: found[fault] for fault in D2tFault if fault in found}


def _absolute_ids_evidence(
    d2t: np.ndarray, marked: np.ndarray | None, vocab: int, offsets_overflow: bool
) -> str | None:
    """Why d2t looks like it holds target ids themselves (verl-SpeCo PR #67: an `arange` default
    maps draft i to 2i), when the values read as ids fit and something says they are ids."""
    n = d2t.size
    if n < 2 or not bool((d2t[1:] > d2t[:-1]).all()) or int(d2t[0]) < 0 or int(d2t[-1]) >= vocab:
        return None  # not a sorted list of distinct ids inside the vocab
    if marked is not None and np.array_equal(d2t, marked):
        why = "they are exactly the ids t2d marks"
    elif np.array_equal(d2t, np.arange(n)):
        why = f"d2t[i] = i for every i: the ids 0..{n - 1} themselves"
    elif offsets_overflow:
        why = "read as ids they all fit the vocab, read as offsets they do not"
    else:
        return None
    return (
        f"d2t holds target ids, not offsets ({why}); engines add i, so draft id i is read as "
        f"target id i + d2t[i], e.g. draft {n - 1} -> {n - 1 + int(d2t[-1])} instead of "
        f"{int(d2t[-1])} (verl-project/verl-SpeCo PR #67)"
    )


def check_pair(target: TargetConfig, draft: DraftConfig) -> list[Finding]:
    """The target-vs-draft checks live in the deployment check (`kit.deployment.configs`);
    this name stays for the callers that compare a pair without a launch line."""
    from kit.deployment.configs import Pair, vocabulary

    return vocabulary(Pair(draft, target))
