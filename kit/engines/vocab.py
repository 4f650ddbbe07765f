"""The vocabulary every engine's rules are written in, and the engine-independent code reads.

Loading: what an engine does with one checkpoint key (`Outcome`), the state a parameter ends in
(`State`) and how an engine initialises one nothing loads (`Init`); a parameter as the engine
builds it (`ParamSpec`), one key's fate (`KeyOutcome`), what a key rule may look at
(`LoadContext`). Running: which config flags a release honours (`Honoured`), how it builds the
draft module (`Era`), and what the target hands the draft (`Capture`, `Feed`, `FcGate`).

Kept apart from the engine packages and from `kit.load.replay` / `kit.tracing.capture` / `kit.tracing.draft`, so
that the rules and the code that applies them do not import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease


class Outcome(StrEnum):
    """What an engine does with one checkpoint key."""

    LOADED = "loaded"  # copied into an engine parameter (shard id for merged qkv / gate_up)
    CONSUMED = "consumed"  # d2t turned into the engine's token map
    IGNORED = "ignored"  # t2d, skip rules: deliberate, documented
    DROPPED = "dropped_silently"  # unmatched and discarded without a word
    WARNED = "warned"  # unmatched, the engine logs a warning and goes on
    ERROR = "error"  # the engine raises at start-up (or never starts: a refused config)


class State(StrEnum):
    """The state of an engine parameter after load and the worker's post-load overrides."""

    LOADED = "loaded"
    FROM_TARGET = "from_target"
    LEFT_AT_INIT = "left_at_init"


class Init(StrEnum):
    """How an engine initialises a parameter nothing loads."""

    UNINITIALIZED = "uninitialized"  # torch.empty: whatever was in memory
    ONES = "ones"  # RMSNorm weight
    RANDOM = "random"  # PyTorch default init (nn.Linear weight / bias)
    ZEROS = "zeros"  # e.g. vLLM's draft_id_to_target_id
    IDENTITY = "identity"  # arange: draft id i is target id i (LMDeploy's MLA token map)

    @property
    def left(self) -> str:
        """What a parameter nothing loads holds, in words: torch.empty is no init at all."""
        if self is Init.UNINITIALIZED:
            return "torch.empty memory (never written: no value to predict from)"
        return str(self)


class Refusal(NamedTuple):
    """Why an engine release does not start: the exception it raises, and where."""

    message: str
    source: str


Shard = str | int | None

# Every engine's `stacked_params_mapping` (fused parameter, checkpoint shard, shard id): q, k, v
# load into qkv_proj, gate and up into gate_up_proj, in all four engines' loaders.
STACKED: tuple[tuple[str, str, Shard], ...] = (
    (".qkv_proj", ".q_proj", "q"),
    (".qkv_proj", ".k_proj", "k"),
    (".qkv_proj", ".v_proj", "v"),
    (".gate_up_proj", ".gate_proj", 0),
    (".gate_up_proj", ".up_proj", 1),
)


def stacked(name: str) -> tuple[str, Shard]:
    """The fused parameter a checkpoint name loads into and its shard id; the name itself and
    None when it is no shard of a fused parameter."""
    for fused, shard, sid in STACKED:
        if shard in name:
            return name.replace(shard, fused), sid
    return name, None


@dataclass(frozen=True)
class ParamSpec:
    """One engine parameter: its name and shape as the engine builds them, and its init.

    `shards` lists (shard id, rows) for merged parameters (qkv_proj: q/k/v, gate_up_proj: 0/1);
    `rows` is the unpadded row count of a vocab-padded embedding / head (the loader checks
    the checkpoint tensor against it, not against the padded shape). `unused` says why a
    parameter the engine builds and loads never takes part in the forward pass.
    """

    name: str
    shape: tuple[int, ...]
    init: Init
    shards: tuple[tuple[Shard, int], ...] = ()
    rows: int | None = None
    unused: str = ""

    def expected(self, shard: Shard) -> tuple[int, ...]:
        """The checkpoint tensor shape the engine's weight loader accepts for this parameter."""
        if shard is not None and self.shards:
            return (dict(self.shards)[shard], *self.shape[1:])
        if self.rows is not None:
            return (self.rows, *self.shape[1:])
        return self.shape


@dataclass
class KeyOutcome:
    """The fate of one checkpoint key in one engine release.

    `if_config_rewritten` is the fate the same key would meet once config.json is rewritten in
    the engine's own form, when the release refuses the config as saved (every key is then an
    `error`: the server never starts).
    """

    key: str
    outcome: Outcome
    param: str | None = None
    shard: Shard = None
    message: str = ""
    source: str = ""
    if_config_rewritten: KeyOutcome | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "key": self.key,
            "outcome": str(self.outcome),
            "param": self.param,
            "shard": self.shard,
            "message": self.message,
            "source": self.source,
        }
        if self.if_config_rewritten is not None:
            alt = self.if_config_rewritten
            d["if_config_rewritten"] = {
                "outcome": str(alt.outcome),
                "param": alt.param,
                "shard": alt.shard,
                "message": alt.message,
            }
        return d


@dataclass
class LoadContext:
    """What a key rule may look at: the config, the release, the parameters, all key names."""

    cfg: DraftConfig
    release: EngineRelease
    params: dict[str, ParamSpec]
    keys: list[str]
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def untie_trained_head(raw: dict[str, Any], cfg: DraftConfig, keys: Sequence[str]) -> list[str]:
    """A tied config over a checkpoint that ships its own `lm_head.weight`: the head was trained
    apart from the embedding (a tied model saves no head), so an engine that ties throws it
    away. Sets `tie_word_embeddings: false` in `raw` and says so."""
    if not (cfg.tie_word_embeddings and "lm_head.weight" in keys):
        return []
    for section in (raw, raw.get("transformer_layer_config")):
        if isinstance(section, dict) and section.get("tie_word_embeddings"):
            section["tie_word_embeddings"] = False
    return [
        "tie_word_embeddings: true -> false (the checkpoint ships its own trained lm_head.weight, "
        "which a tied head discards)"
    ]


def pad64(n: int) -> int:
    """Vocab rows after the engines' padding of embeddings / heads to a multiple of 64."""
    return (n + 63) // 64 * 64


# --- running the draft ------------------------------------------------------------------------


@dataclass(frozen=True)
class Honoured:
    """The trained behaviours (config flags) a release implements for one config, each with the
    source that says so; a flag the config sets and the release does not honour makes the draft
    compute another function than the one it was trained as."""

    norm_before_fc: bool
    fc_norm: bool
    norm_output: bool
    norm_before_residual: bool
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def nothing(cls, no_flags: str, residual: str) -> Honoured:
        """A release that reads none of the flags: `no_flags` says so for the norms, `residual`
        where its input layer takes its residual from."""
        sources = dict.fromkeys(("norm_before_fc", "fc_norm", "norm_output"), no_flags)
        return cls(False, False, False, False, sources | {"norm_before_residual": residual})


class FcGate(StrEnum):
    """When the engine runs the draft's `fc` on the hidden state it is handed."""

    WIDTH = "width"  # SGLang: iff hidden_states.shape[-1] != embeds.shape[-1]
    ALWAYS = "always"  # vLLM: combine_hidden_states on the target's states, every step 0
    SKIPPED = "skipped"  # vLLM ≥0.12 with eagle_config.use_aux_hidden_state false


class TokenMap(StrEnum):
    """How the engine turns a drafted id into a target id with the checkpoint's `d2t` offsets."""

    OFFSETS = "offsets"  # target = id + d2t[id]; without d2t the identity (SGLang, vLLM)
    ABSOLUTE = "absolute"  # map[id] = id + d2t[id]; without d2t all zeros: id 0 (LMDeploy)


@dataclass(frozen=True)
class Era:
    """How a range of releases runs the draft module's forward pass (its parameters are
    `engine_params`): when fc runs, which norm opens decoder layers after the first, how drafted
    ids become target ids, and whether the head can be other than the draft's own `lm_head`."""

    fc_gate: FcGate
    # "hidden_norm" (SGLang ≥0.5.12) | "input_layernorm" (vLLM) | EVERY_LAYER_READS_EMBEDS
    later_input_norm: str
    token_map: TokenMap = TokenMap.OFFSETS
    # True: logits always come from the draft's own lm_head parameter, never tied to the
    # embedding, whatever tie_word_embeddings / draft_vocab_size say (LMDeploy, vLLM; vLLM may
    # fill that parameter from the target's head after load)
    own_head_only: bool = False


# TensorRT-LLM: every decoder layer is an EAGLE-3 input layer; layers after the first add the
# previous residual to their input and read [input_layernorm(embeds) ‖ hidden_norm(h)] again.
EVERY_LAYER_READS_EMBEDS = "embeds_and_hidden_norm"


class Feed(StrEnum):
    """What the target hands the draft on the draft-extend step after each target pass."""

    AUX_CONCAT = "aux_concat"  # healthy: cat(aux states) -> fc
    FINAL_HIDDEN_POST_NORM = "final_hidden_post_norm"  # no capture: the final normed state
    CRASH = "crash"  # start-up error, or fc / the draft's width assert fails on the first batch


@dataclass
class Capture:
    """The engine-specific half of a capture report, before widths and findings.

    Layer ids are states after k decoder layers (k = 0 the embeddings, k = n the final pre-norm
    state), the convention both engines keep their own lists in.
    """

    aux_on: bool
    config_ids: list[int] | None  # ids the engine read from the draft config
    ignored_ids: list[int] | None  # ids the draft declares where this release does not read
    engine_ids: list[int]  # the engine's own list (layers_to_capture / aux layers)
    top_layer: int  # the highest state the target's capture loop can append (n - 1 or n)
    id_rule: str | None  # how config ids became engine ids
    graph_ids: list[int] | None  # what CUDA-graph replays capture, when it differs
    startup_error: str | None
    aux_off_reason: str | None
    fc_in: int
    fc_gate: FcGate
    unverified: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    # finding code -> this engine's fix, where the generic fix names another engine's mechanism
    fixes: dict[str, str] = field(default_factory=dict)
