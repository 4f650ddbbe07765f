"""The vocabulary both engine rule modules speak: parameter specs, key outcomes, the load context.

Kept apart from `kit.loading` so that `kit.engines.sglang` / `kit.engines.vllm` (the rules) and
`kit.loading` (the replay that applies them) do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kit.config import DraftConfig
from kit.engines.base import EngineRelease

# What an engine does with one checkpoint key.
LOADED = "loaded"  # copied into an engine parameter (shard id for merged qkv / gate_up)
CONSUMED = "consumed"  # d2t turned into the engine's token map
IGNORED = "ignored"  # t2d, skip rules: deliberate, documented
DROPPED = "dropped_silently"  # unmatched and discarded without a word
WARNED = "warned"  # unmatched, the engine logs a warning and goes on
ERROR = "error"  # the engine raises at start-up
OUTCOMES = (LOADED, CONSUMED, IGNORED, DROPPED, WARNED, ERROR)

# What state an engine parameter is in after load and the worker's post-load overrides.
STATE_LOADED = "loaded"
FROM_TARGET = "from_target"
LEFT_AT_INIT = "left_at_init"

# How an engine initialises a parameter nothing loads.
UNINITIALIZED = "uninitialized"  # torch.empty: whatever was in memory
ONES = "ones"  # RMSNorm weight
RANDOM = "random"  # PyTorch default init (nn.Linear weight / bias)
ZEROS = "zeros"  # e.g. vLLM's draft_id_to_target_id

Shard = str | int | None


@dataclass(frozen=True)
class ParamSpec:
    """One engine parameter: its name and shape as the engine builds them, and its init.

    `shards` lists (shard id, rows) for merged parameters (qkv_proj: q/k/v, gate_up_proj: 0/1);
    `rows` is the unpadded row count of a vocab-padded embedding / head (the loader checks
    the checkpoint tensor against it, not against the padded shape).
    """

    name: str
    shape: tuple[int, ...]
    init: str
    shards: tuple[tuple[Shard, int], ...] = ()
    rows: int | None = None

    def expected(self, shard: Shard) -> tuple[int, ...]:
        """The checkpoint tensor shape the engine's weight loader accepts for this parameter."""
        if shard is not None and self.shards:
            return (dict(self.shards)[shard], *self.shape[1:])
        if self.rows is not None:
            return (self.rows, *self.shape[1:])
        return self.shape


@dataclass
class KeyOutcome:
    """The fate of one checkpoint key in one engine release."""

    key: str
    outcome: str
    param: str | None = None
    shard: Shard = None
    message: str = ""
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "outcome": self.outcome,
            "param": self.param,
            "shard": self.shard,
            "message": self.message,
            "source": self.source,
        }


@dataclass
class LoadContext:
    """What a key rule may look at: the config, the release, the parameters, all key names."""

    cfg: DraftConfig
    release: EngineRelease
    params: dict[str, ParamSpec]
    keys: list[str]
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def pad64(n: int) -> int:
    """Vocab rows after the engines' padding of embeddings / heads to a multiple of 64."""
    return (n + 63) // 64 * 64
