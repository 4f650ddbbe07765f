"""What a load replay found: every key's fate (`KeyOutcome`) and every parameter's state.

The types the replay (`kit.load.replay`) returns and the findings (`kit.load.findings`) read; they
sit apart so that neither of those two modules needs the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kit.engines.vocab import Init, KeyOutcome, Outcome, Refusal, Shard, State
from kit.findings import Finding, to_json

LOST = (Outcome.DROPPED, Outcome.WARNED, Outcome.ERROR)


@dataclass
class ParamState:
    """One engine parameter after load: `loaded`, `from_target` or `left_at_init` (and how)."""

    name: str
    shape: tuple[int, ...]
    state: State
    init: Init
    loaded_from: list[str] = field(default_factory=list)
    missing_shards: list[Shard] = field(default_factory=list)
    message: str = ""
    source: str = ""
    unused: str = ""  # why the engine never uses it in the forward pass ("": it does)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "state": str(self.state),
            "init": str(self.init),
            "loaded_from": self.loaded_from,
            "missing_shards": self.missing_shards,
            "message": self.message,
            "source": self.source,
            "unused": self.unused,
        }


@dataclass
class LoadReport:
    """What one engine release does with one checkpoint.

    `refusal` is set when the release refuses config.json as saved; `rewritten` is then the
    replay under the config the engine wants (`config_changes` says what differs), whose key
    fates each key carries as `if_config_rewritten`.
    """

    engine: str
    keys: list[KeyOutcome]
    params: list[ParamState]
    findings: list[Finding]
    crashed: bool
    refusal: Refusal | None = None
    rewritten: LoadReport | None = None
    config_changes: list[str] = field(default_factory=list)

    def outcome(self, key: str) -> KeyOutcome:
        return next(k for k in self.keys if k.key == key)

    def param(self, name: str) -> ParamState:
        return next(p for p in self.params if p.name == name)

    def with_outcome(self, outcome: Outcome | str) -> list[KeyOutcome]:
        return [k for k in self.keys if k.outcome == outcome]

    @property
    def errors(self) -> list[str]:
        return [k.message for k in self.keys if k.outcome == Outcome.ERROR]

    @property
    def lost(self) -> list[KeyOutcome]:
        """Keys whose tensor never reaches a parameter against the trainer's intent."""
        return [k for k in self.keys if k.outcome in LOST]

    @property
    def loads_cleanly(self) -> bool:
        """The server starts with config.json as saved and every tensor is loaded or
        deliberately consumed / ignored: the one answer to "does this release load it?"."""
        return self.refusal is None and not self.crashed and not self.lost

    @property
    def as_served(self) -> LoadReport:
        """The replay of the config the release would actually serve: the rewritten one when it
        refuses the config as saved (a server that ran cannot have read that one)."""
        return self.rewritten if self.refusal is not None and self.rewritten else self

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "engine": self.engine,
            "crashed": self.crashed,
            "loads_cleanly": self.loads_cleanly,
            "config_refused": self.refusal.message if self.refusal else None,
            "keys": [k.to_dict() for k in self.keys],
            "params": [p.to_dict() for p in self.params],
            "findings": to_json(self.findings),
        }
        if self.rewritten is not None:
            d["if_config_rewritten"] = {
                "config_changes": self.config_changes,
                "loads_cleanly": self.rewritten.loads_cleanly,
                "params": [p.to_dict() for p in self.rewritten.params],
                "findings": to_json(self.rewritten.findings),
            }
        return d
