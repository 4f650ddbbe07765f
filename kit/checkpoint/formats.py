"""Which trainer wrote a draft checkpoint, in which key layout, and how to rename between layouts.

Each trainer leaves a recognisable mix of architecture name, decoder-layer key names, present or
absent tensors, file kind and dtypes: the EAGLE reference trainer (SafeAILab/EAGLE
`eagle/traineagle3`) a DeepSpeed `pytorch_model.bin` with a flat `LlamaForCausalLM` config,
SpecForge a `model.safetensors` with `LlamaForCausalLMEagle3`, `midlayer.*` and always d2t + t2d,
and so on. A format is a list of such claims, each about one topic; the guess is the format
whose claims hold best, with the ones that held as evidence, or several formats when the claims
that would tell them apart disagree or cannot be checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kit.checkpoint.config import DraftConfig
from kit.checkpoint.files import Checkpoint
from kit.checkpoint.header import FLOAT_DTYPES
from kit.errors import KitError

# Key layouts of the draft's decoder layer(s).
LAYERS = "layers"  # layers.{i}.*              (speculators, ModelOpt >= Mar 2026)
MIDLAYER = "midlayer"  # midlayer.*            (EAGLE, SpecForge, ModelOpt 1 layer)
MIDLAYER_INDEXED = "midlayer_indexed"  # midlayer.{i}.*  (ModelOpt < Mar 2026, N layers)
MODEL_PREFIXED = "model_prefixed"  # model.layers.{i}.*, model.fc … (HF-style module prefix)
LAYOUTS = (LAYERS, MIDLAYER, MIDLAYER_INDEXED, MODEL_PREFIXED)

# Tensors that sit outside the `model.` prefix in a HF-style (model_prefixed) state dict.
_UNPREFIXED = ("lm_head.", "d2t", "t2d")
# ModelOpt-only fields of eagle_config (hf_spec_configs.py); SpecForge writes only the aux ids.
MODELOPT_EAGLE_FIELDS = frozenset(
    {
        "use_input_layernorm_in_first_layer",
        "use_last_layernorm",
        "use_mtp_layernorm",
        "next_layer_regular",
        "parallel_draft_step",
        "parallel_draft_heads_num_layers",
    }
)
MODELOPT_ARCHS = frozenset({"LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"})

_LAYER_KEY = re.compile(r"^(?:model\.)?(?:layers\.(\d+)|midlayer(?:\.(\d+))?)\.(.+)$")


@dataclass(frozen=True)
class LayerKey:
    """A key split into its decoder-layer index (None: not a layer key) and the rest."""

    index: int | None
    rest: str


def split_key(key: str) -> LayerKey:
    """`layers.0.mlp.up_proj.weight` -> (0, `mlp.up_proj.weight`); `model.fc.weight` -> (None, `fc.weight`)."""
    m = _LAYER_KEY.match(key)
    if m:
        idx = m.group(1) if m.group(1) is not None else m.group(2)
        return LayerKey(int(idx) if idx is not None else 0, m.group(3))
    return LayerKey(None, key.removeprefix("model."))


def detect_layout(keys: Iterable[str]) -> str | None:
    """The decoder-layer key layout, or None when no key names a decoder layer."""
    keys = list(keys)
    if any(k.startswith("model.") and not k.startswith(_UNPREFIXED) for k in keys):
        return MODEL_PREFIXED
    if any(re.match(r"midlayer\.\d+\.", k) for k in keys):
        return MIDLAYER_INDEXED
    if any(k.startswith("midlayer.") for k in keys):
        return MIDLAYER
    if any(re.match(r"layers\.\d+\.", k) for k in keys):
        return LAYERS
    return None


def layer_indices(keys: Iterable[str]) -> list[int]:
    return sorted({lk.index for lk in map(split_key, keys) if lk.index is not None})


def format_key(lk: LayerKey, layout: str) -> str:
    """The name of a split key in `layout`; `KitError` if the layout cannot express it."""
    if lk.index is None:
        if layout == MODEL_PREFIXED and not lk.rest.startswith(_UNPREFIXED):
            return f"model.{lk.rest}"
        return lk.rest
    if layout == LAYERS:
        return f"layers.{lk.index}.{lk.rest}"
    if layout == MODEL_PREFIXED:
        return f"model.layers.{lk.index}.{lk.rest}"
    if layout == MIDLAYER_INDEXED:
        return f"midlayer.{lk.index}.{lk.rest}"
    if layout == MIDLAYER:
        if lk.index != 0:
            raise KitError(
                f"layout 'midlayer' holds one decoder layer; cannot place layer {lk.index}"
            )
        return f"midlayer.{lk.rest}"
    raise KitError(f"unknown layout {layout!r}; use one of {', '.join(LAYOUTS)}")


def rename_plan(keys: Iterable[str], to_layout: str) -> dict[str, str]:
    """Old name -> new name for every key whose name changes in `to_layout` (others stay)."""
    if to_layout not in LAYOUTS:
        raise KitError(f"unknown layout {to_layout!r}; use one of {', '.join(LAYOUTS)}")
    plan: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key in keys:
        new = format_key(split_key(key), to_layout)
        if new in seen:
            raise KitError(f"{seen[new]!r} and {key!r} would both become {new!r}")
        seen[new] = key
        if new != key:
            plan[key] = new
    return plan


# --- trainer detection ----------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What detection looks at, gathered once from the checkpoint and its config."""

    keys: frozenset[str]
    layout: str | None
    layers: tuple[int, ...]
    kind: str  # checkpoint kind: safetensors | sharded | pickle
    float_dtypes: frozenset[str]
    architecture: str | None
    config_source: str | None  # "speculators" | "flat" | None (no config)
    eagle_fields: frozenset[str]

    def has(self, name: str) -> bool:
        return name in self.keys or f"model.{name}" in self.keys


def facts_of(ck: Checkpoint, cfg: DraftConfig | None) -> Facts:
    keys = frozenset(ck.tensors)
    return Facts(
        keys=keys,
        layout=detect_layout(keys),
        layers=tuple(layer_indices(keys)),
        kind=ck.kind,
        float_dtypes=frozenset(t.dtype for t in ck.tensors.values() if t.dtype in FLOAT_DTYPES),
        architecture=(cfg.architectures[0] if cfg and cfg.architectures else None),
        config_source=cfg.source if cfg else None,
        eagle_fields=frozenset(cfg.eagle_config) if cfg else frozenset(),
    )


class Topic(Enum):
    """What a claim is about: two formats that claim different things about one topic can be
    told apart by it."""

    ARCHITECTURE = "architecture"
    CONFIG = "config layout"
    LAYOUT = "key layout"
    EMBED = "embed_tokens"
    VOCAB_MAPS = "d2t / t2d"
    FILE = "file kind"
    DTYPE = "dtype"
    EAGLE_FIELDS = "eagle_config fields"


@dataclass(frozen=True)
class Claim:
    """Something a trainer always writes; `test` says True / False, or None when it needs a
    config.json and there is none."""

    topic: Topic
    text: str
    test: Callable[[Facts], bool | None]


@dataclass(frozen=True)
class TrainerFormat:
    name: str
    description: str
    claims: tuple[Claim, ...]


def _from_config(topic: Topic, text: str, test: Callable[[Facts], bool]) -> Claim:
    return Claim(topic, text, lambda f: None if f.config_source is None else test(f))


def _arch(*names: str) -> Claim:
    return _from_config(
        Topic.ARCHITECTURE,
        f"architectures = {' | '.join(names)}",
        lambda f: f.architecture in names,
    )


def _layout(*layouts: str) -> Claim:
    return Claim(
        Topic.LAYOUT,
        f"decoder-layer keys in layout {' | '.join(layouts)}",
        lambda f: f.layout in layouts,
    )


def _only_floats(dtype: str) -> Claim:
    return Claim(
        Topic.DTYPE, f"floating tensors stored as {dtype}", lambda f: f.float_dtypes == {dtype}
    )


_EMBED = Claim(Topic.EMBED, "embed_tokens present", lambda f: f.has("embed_tokens.weight"))
_NO_EMBED = Claim(
    Topic.EMBED,
    "no embed_tokens (shared with the target)",
    lambda f: not f.has("embed_tokens.weight"),
)
_D2T_T2D = Claim(
    Topic.VOCAB_MAPS, "d2t and t2d both saved", lambda f: f.has("d2t") and f.has("t2d")
)
_NO_T2D = Claim(Topic.VOCAB_MAPS, "no t2d", lambda f: not f.has("t2d"))
_SAFETENSORS = Claim(Topic.FILE, "safetensors file", lambda f: f.kind != "pickle")
_PICKLE = Claim(Topic.FILE, "pytorch_model.bin (torch pickle)", lambda f: f.kind == "pickle")
_NESTED = _from_config(
    Topic.CONFIG,
    "speculators config (transformer_layer_config)",
    lambda f: f.config_source == "speculators",
)
_FLAT = _from_config(Topic.CONFIG, "flat LlamaConfig", lambda f: f.config_source == "flat")
_MODELOPT_EAGLE = _from_config(
    Topic.EAGLE_FIELDS,
    "eagle_config has ModelOpt fields",
    lambda f: bool(f.eagle_fields & MODELOPT_EAGLE_FIELDS),
)
_NOT_MODELOPT_EAGLE = _from_config(
    Topic.EAGLE_FIELDS,
    "eagle_config without ModelOpt fields",
    lambda f: not (f.eagle_fields & MODELOPT_EAGLE_FIELDS),
)

TRAINER_FORMATS: tuple[TrainerFormat, ...] = (
    TrainerFormat(
        "speculators-trainer",
        "speculators >= Dec 2025 trainer (Eagle3DraftModel.save_pretrained)",
        (_arch("Eagle3DraftModel"), _NESTED, _layout(LAYERS), _EMBED, _only_floats("BF16")),
    ),
    TrainerFormat(
        "speculators-converter",
        "speculators `convert --algorithm eagle3` (Eagle3Speculator)",
        (_arch("Eagle3Speculator"), _NESTED, _layout(LAYERS)),
    ),
    TrainerFormat(
        "specforge",
        "SpecForge (sgl-project) export (`specforge export --to sglang`)",
        (
            _arch("LlamaForCausalLMEagle3"),
            _FLAT,
            _layout(MIDLAYER),
            _NO_EMBED,
            _D2T_T2D,
            _SAFETENSORS,
            _NOT_MODELOPT_EAGLE,
        ),
    ),
    # 0.2.0 `export/to_hf.py:92-115` writes the target's embedding in; `to_sglang.py:85` drops it
    TrainerFormat(
        "specforge-hf",
        "SpecForge (sgl-project) export (`specforge export --to hf`)",
        (
            _arch("LlamaForCausalLMEagle3"),
            _FLAT,
            _layout(MIDLAYER),
            _EMBED,
            _D2T_T2D,
            _SAFETENSORS,
            _NOT_MODELOPT_EAGLE,
        ),
    ),
    TrainerFormat(
        "eagle-official",
        "SafeAILab/EAGLE official EAGLE-3 (DeepSpeed pytorch_model.bin)",
        (
            _arch("LlamaForCausalLM"),
            _FLAT,
            _PICKLE,
            _layout(MIDLAYER),
            _NO_EMBED,
            _D2T_T2D,
            _only_floats("F16"),
        ),
    ),
    TrainerFormat(
        "modelopt-midlayer",
        "NVIDIA ModelOpt export before its Mar 2026 switch to layers.{i}",
        (
            _arch(*sorted(MODELOPT_ARCHS)),
            _FLAT,
            _layout(MIDLAYER, MIDLAYER_INDEXED),
            _NO_EMBED,
            _NO_T2D,
            _MODELOPT_EAGLE,
        ),
    ),
    TrainerFormat(
        "modelopt-layers",
        "NVIDIA ModelOpt export from Mar 2026 (layers.{i})",
        (
            _arch(*sorted(MODELOPT_ARCHS)),
            _FLAT,
            _layout(LAYERS),
            _NO_EMBED,
            _NO_T2D,
            _MODELOPT_EAGLE,
        ),
    ),
)


@dataclass(frozen=True)
class FormatGuess:
    """The trainer format(s) the evidence allows, the key layout, and why.

    `candidates` holds one format name when the evidence decides, several (best first) when
    the formats that fit differ only in ways the checkpoint cannot show; `name` is then
    "a or b"."""

    name: str  # a TrainerFormat name, "a or b" when the evidence cannot tell, or "unknown"
    layout: str | None
    evidence: list[str] = field(default_factory=list)
    confidence: float = 0.0  # share of the best format's claims that hold
    description: str = ""
    candidates: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "layout": self.layout,
            "evidence": list(self.evidence),
            "confidence": round(self.confidence, 3),
            "description": self.description,
            "candidates": list(self.candidates),
        }


@dataclass(frozen=True)
class _Fit:
    """How one format's claims fared on a checkpoint."""

    fmt: TrainerFormat
    held: tuple[bool | None, ...]

    @property
    def score(self) -> float:
        return sum(h is True for h in self.held) / len(self.held)

    def on(self, topic: Topic) -> tuple[str, bool | None] | None:
        """This format's claim about `topic` (its text) and how it fared, if it makes one."""
        for claim, ok in zip(self.fmt.claims, self.held, strict=True):
            if claim.topic is topic:
                return claim.text, ok
        return None


def _differing(a: _Fit, b: _Fit) -> list[Topic]:
    """The topics on which the two formats claim different things: only these tell them apart."""
    return [t for t in Topic if (ca := a.on(t)) and (cb := b.on(t)) and ca[0] != cb[0]]


def _beats(a: _Fit, b: _Fit) -> bool:
    """Whether the evidence rules `b` out in favour of `a`: on the topics that tell them apart,
    more claims hold for `a` than for `b`, even if every claim left unchecked (without a
    config.json, the architecture) went `b`'s way."""
    for_a = for_b = unchecked = 0
    for topic in _differing(a, b):
        ok_a, ok_b = a.on(topic)[1], b.on(topic)[1]
        for_a += ok_a is True and ok_b is not True
        for_b += ok_b is True and ok_a is not True
        unchecked += ok_a is None or ok_b is None
    return for_a > for_b + unchecked


def detect_format(ck: Checkpoint, cfg: DraftConfig | None = None) -> FormatGuess:
    """Which trainer wrote `ck`. Evidence lists the claims that held, then marked ones that did
    not (`NOT:`) or could not be checked without a config (`UNKNOWN:`); confidence is the share
    that held. Every format with at least half its claims holding stays a candidate unless a
    claim the two make differently rules it out; when several remain, the guess names them all
    rather than picking one."""
    facts = facts_of(ck, cfg)
    fits = [_Fit(fmt, tuple(c.test(facts) for c in fmt.claims)) for fmt in TRAINER_FORMATS]
    best = max(fits, key=lambda f: f.score)  # the first of equals: the table's order
    layout_note = f"layout: {facts.layout or 'no decoder-layer keys'}" + (
        f" (layers {list(facts.layers)})" if facts.layers else ""
    )
    if best.score < 0.5 or (best.held[0] is not True and facts.layout is None):
        return FormatGuess("unknown", facts.layout, [layout_note, "no trainer's signature fits"])
    plausible = sorted((f for f in fits if f.score >= 0.5), key=lambda f: -f.score)
    kept = [f for f in plausible if not any(_beats(o, f) for o in plausible if o is not f)] or [
        best
    ]
    top = kept[0]
    mark = {True: "", False: "NOT: ", None: "UNKNOWN (no config.json): "}
    evidence = [mark[ok] + c.text for c, ok in zip(top.fmt.claims, top.held, strict=True)]
    names = tuple(f.fmt.name for f in kept)
    if len(kept) > 1:
        evidence.append(f"UNKNOWN: cannot tell {' from '.join(names)}: " + _undecided(kept))
    return FormatGuess(
        " or ".join(names),
        facts.layout,
        [*evidence, layout_note],
        top.score,
        " or ".join(f.fmt.description for f in kept),
        names,
    )


def _undecided(kept: list[_Fit]) -> str:
    """What speaks for each remaining format on the topics that would tell them apart."""
    parts = []
    for fit in kept:
        topics = {t for o in kept if o is not fit for t in _differing(fit, o)}
        claims = [fit.on(t) for t in Topic if t in topics]
        held = [text for text, ok in claims if ok is True] or ["no claim of its own"]
        unknown = [text for text, ok in claims if ok is None]
        why = f"{fit.fmt.name}: {'; '.join(held)}"
        if unknown:
            why += f" (unchecked without config.json: {'; '.join(unknown)})"
        parts.append(why)
    return " vs ".join(parts)


def speculators_config(
    layer_config: dict[str, Any],
    *,
    architecture: str = "Eagle3DraftModel",
    draft_vocab_size: int,
    aux_layer_ids: list[int] | None,
    speculative_tokens: int,
    verifier: dict[str, Any],
    norm_before_residual: bool = False,
) -> dict[str, Any]:
    """The `config.json` the speculators 0.9.0 trainer writes (`Eagle3DraftModel`; the
    converter writes `Eagle3Speculator`), around a transformers `layer_config` dict: the one
    place the kit spells that format when it writes drafts of its own."""
    return {
        "architectures": [architecture],
        "auto_map": {"": "config.Eagle3SpeculatorConfig"},
        "draft_vocab_size": draft_vocab_size,
        "dtype": "bfloat16",
        "eagle_aux_hidden_state_layer_ids": aux_layer_ids,
        "embed_requires_grad": False,
        "fc_norm": False,
        "norm_before_fc": False,
        "norm_before_residual": norm_before_residual,
        "norm_output": False,
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [
                {
                    "accept_tolerance": 0.0,
                    "proposal_type": "greedy",
                    "speculative_tokens": speculative_tokens,
                    "verifier_accept_k": 1,
                }
            ],
            "verifier": verifier,
        },
        "speculators_model_type": "eagle3",
        "speculators_version": "0.9.0",
        "target_hidden_size": None,
        "tie_word_embeddings": False,
        "transformer_layer_config": layer_config,
        "transformers_version": "5.19.0",
    }
