"""What a launch line asks the server for, in one vocabulary for every engine.

The line is read under one release: the one `--engine ENGINE==X` names, else the newest release
of that engine whose parser accepts every flag on the line (the range of such releases is kept,
so a verdict can say which releases it assumed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.deployment.arguments import Arguments
from kit.deployment.launch import Command
from kit.engines import EngineRelease
from kit.engines.serving import Method
from kit.limits import try_loads_file


@dataclass
class Served:
    """The launch line's server settings; None where the line does not set them."""

    command: Command
    arguments: Arguments
    release: EngineRelease
    release_given: bool
    fitting: tuple[str, ...]  # releases whose parser accepts every flag on the line
    method: Method | None = None  # None: the line starts no speculative decoding
    method_text: str | None = None  # as written; None when the engine picked it
    method_source: str = ""  # the flag / key, or the engine rule that picked it
    draft: str | None = None
    target: str | None = None
    tokenizer: str | None = None
    chat_template: str | None = None
    num_steps: int | None = None  # SGLang --speculative-num-steps
    topk: int | None = None
    num_draft_tokens: int | None = None  # SGLang: counts the root
    num_speculative_tokens: int | None = None  # vLLM: drafts per step
    context: int | None = None  # --context-length / --max-model-len
    context_flag: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    kv_cache_dtype: str | None = None  # the target's (and, unless overridden, the draft's)
    draft_kv_cache_dtype: str | None = None  # the draft's own setting, where the line gives one
    draft_quantization: str | None = None  # SGLang --speculative-draft-model-quantization
    spec: dict[str, Any] = field(default_factory=dict)  # vLLM's speculative config as read
    facts: set[str] = field(default_factory=set)  # for known issues (see kit.deployment.serving)

    @property
    def engine(self) -> str:
        return self.release.name

    @property
    def chain(self) -> int | None:
        """Drafts per verify step (vLLM's count; SGLang's steps with topk 1)."""
        return self.num_speculative_tokens if self.engine == "vllm" else self.num_steps

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": str(self.release),
            "release_given": self.release_given,
            "releases_accepting_the_line": _span(self.fitting),
            "entrypoint": self.command.entrypoint,
            "source": self.command.source,
            "env": dict(self.command.env),
            "flags": {d: g.value for d, g in self.arguments.given.items()},
            "method": self.method.value if self.method else None,
            "method_source": self.method_source,
            "draft": self.draft,
            "target": self.target,
            "chain": self.chain,
            "context": self.context,
            "dtype": self.dtype,
            "quantization": self.quantization,
            "tensor_parallel": self.tensor_parallel,
            "pipeline_parallel": self.pipeline_parallel,
            "kv_cache_dtype": self.kv_cache_dtype,
        }


def local_path(value: str | None) -> Path | None:
    """A model / tokenizer argument that names something on this machine (else a hub id)."""
    if not value:
        return None
    try:
        path = Path(value).expanduser()
        return path if path.exists() else None
    except (OSError, ValueError, RuntimeError):  # a name too long, a NUL byte, ~nobody/…
        return None


def local_config(value: str | None) -> dict[str, Any] | None:
    """The config.json of a local model folder (None for a hub id or an unreadable file)."""
    path = local_path(value)
    if path is None or not (path / "config.json").is_file():
        return None
    data = try_loads_file(path / "config.json")
    return data if isinstance(data, dict) else None


def _span(versions: tuple[str, ...]) -> str:
    if not versions:
        return "none"
    return versions[0] if len(versions) == 1 else f"{versions[0]} … {versions[-1]}"
