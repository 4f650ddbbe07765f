"""Shape tracing of the target → draft hand-over: capture rules plus the draft's own forward.

`simulate_capture` (kit.tracing.capture) says which target states reach the draft and how wide they are;
`trace_draft` then runs the reference draft module (`kit.tracing.draft`) of the same engine release on
exactly that input and records every hook's shape and dtype. On the `meta` device a full-scale
draft (Kimi-K2.5: H = 7168, vocab 163840) traces with no tensor memory; on `cpu` the same code
runs real small tensors. A step that the engine skips (fc under SGLang's width gate) or that
fails (fc fed the wrong width) is named, so a wrong wiring shows up as a named step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kit.checkpoint.config import DraftConfig, TargetConfig
from kit.engines import EngineRelease, parse_engine
from kit.errors import KitError
from kit.findings import Finding, to_json
from kit.tracing.capture import CaptureReport, Feed, constructor_crash, simulate_capture

__all__ = [
    "HOOK_ORDER",
    "CaptureReport",
    "Feed",
    "HookShape",
    "TraceReport",
    "simulate_capture",
    "trace_draft",
]

# Real tensors on cpu only up to this many parameter bytes; the meta device has no limit.
MAX_CPU_BYTES = 1 << 30

# The data path of one draft step, in order (kit.tracing.draft names; layers ≥ 1 add `layers.i.` names).
HOOK_ORDER = (
    "embeds",
    "aux_hidden_states",
    "fc_in",
    "fc_out",
    "attn_in",
    "qkv",
    "attn_out",
    "mlp_out",
    "residual",
    "norm_out",
    "logits",
    "draft_token_ids",
    "hidden_out",
)


@dataclass(frozen=True)
class HookShape:
    name: str
    shape: tuple[int, ...]
    dtype: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


@dataclass
class TraceReport:
    """The capture, the draft's hook shapes on that input, and where the path breaks."""

    capture: CaptureReport
    hooks: list[HookShape]
    fc_applied: bool  # as the draft module ran it (agrees with the capture rules)
    bypassed_step: str | None  # "fc" when the engine skips it
    failed_step: str | None  # "startup", "fc", "attn_in" …
    error: str | None
    device: str
    tokens: int
    findings: list[Finding] = field(default_factory=list)

    @property
    def captured_layers(self) -> list[int]:
        return self.capture.captured_layers

    @property
    def hidden_width(self) -> int:
        return self.capture.hidden_width

    def to_dict(self) -> dict[str, Any]:
        """The issue's JSON (`captured_layers` … `findings`), then the supporting detail."""
        c = self.capture
        return {
            "captured_layers": c.captured_layers,
            "hidden_width": c.hidden_width,
            "fc_applied": self.fc_applied,
            "hooks": [h.to_dict() for h in self.hooks],
            "findings": to_json(self.findings),
            "engine": c.engine,
            "target_class": c.target_class,
            "feeds": str(c.feeds),
            "engine_layer_ids": c.engine_layer_ids,
            "trained_layers": c.trained_layers,
            "cuda_graph_layers": c.cuda_graph_layers,
            "fc_in_features": c.fc_in_features,
            "startup_error": c.startup_error,
            "bypassed_step": self.bypassed_step,
            "failed_step": self.failed_step,
            "error": self.error,
            "device": self.device,
            "tokens": self.tokens,
        }


def trace_draft(
    target: TargetConfig,
    draft: DraftConfig,
    release: EngineRelease | str,
    target_class: str | None = None,
    aux_capture: bool | None = None,
    cuda_graph: bool = False,
    device: str = "meta",
    tokens: int = 8,
) -> TraceReport:
    """Simulate the capture, then run the release's draft module on what the target hands it."""
    import torch

    from kit.load.findings import flags_ignored
    from kit.load.replay import served_config
    from kit.tracing.draft import build_draft

    if device not in ("meta", "cpu"):
        raise KitError(f"device must be meta or cpu, not {device!r}")
    rel = parse_engine(release) if isinstance(release, str) else release
    cap = simulate_capture(target, draft, rel, target_class, aux_capture, cuda_graph)
    draft, _ = served_config(draft, rel)  # the module the release builds: from the config it reads
    flags = flags_ignored(draft, rel)
    if cap.startup_error:
        return TraceReport(
            cap, [], False, None, "startup", cap.startup_error, device, tokens, list(cap.findings)
        )
    if crash := constructor_crash(draft, rel):  # the release never builds this draft module
        found = [*cap.findings, *([flags] if flags else []), crash]
        return TraceReport(cap, [], False, None, "startup", crash.title, device, tokens, found)
    if device == "cpu":
        torch.set_num_threads(1)
    dtype = _torch_dtype(draft.dtype)
    with torch.device("meta"):
        model = build_draft(draft, rel.name, rel).to(dtype)
    if device == "cpu":
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        if size > MAX_CPU_BYTES:
            raise KitError(
                f"the draft's parameters take {size / 2**30:.1f} GiB: trace it on the meta "
                "device (shapes only, no memory)",
                draft.path,
            )
        with torch.device("cpu"):
            model = build_draft(draft, rel.name, rel).to(dtype)
    gen = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, draft.vocab_size, (tokens,), generator=gen).to(device)
    hidden = torch.randn(tokens, cap.hidden_width, generator=gen, dtype=dtype).to(device)

    error = failed = None
    try:
        with torch.no_grad():
            _, cache = model.run_with_cache(input_ids, hidden)
        shapes = _shapes(cache)
    except (RuntimeError, KitError) as e:  # the forward the engine would run fails here
        shapes = _partial(model, input_ids, hidden)
        error = str(e).splitlines()[0]
        failed = _next_step([h.name for h in shapes], bool(model.fc_applied))
    fc_applied = bool(model.fc_applied)
    bypassed = "fc" if not fc_applied and not failed else None
    findings = [*cap.findings, *([flags] if flags else [])]
    return TraceReport(cap, shapes, fc_applied, bypassed, failed, error, device, tokens, findings)


def _torch_dtype(name: str | None):
    import torch

    dtype = getattr(torch, str(name or "float32").removeprefix("torch."), None)
    return dtype if isinstance(dtype, torch.dtype) else torch.float32


def _shapes(cache: dict[str, Any]) -> list[HookShape]:
    """Hook shapes in firing order (the cache keeps insertion order)."""
    return [
        HookShape(name, tuple(int(d) for d in t.shape), str(t.dtype).removeprefix("torch."))
        for name, t in cache.items()
    ]


def _partial(model, input_ids, hidden) -> list[HookShape]:
    """The hooks that fired before the forward failed (run_with_cache returns none then)."""
    import torch

    cache: dict[str, Any] = {}
    handles = [
        hp.register_forward_hook(lambda _m, _i, out, name=name: cache.__setitem__(name, out))
        for name, hp in model.hook_points().items()
    ]
    try:
        with torch.no_grad():
            model(input_ids, hidden)
    except (RuntimeError, KitError):
        pass
    finally:
        for h in handles:
            h.remove()
    return _shapes(cache)


def _next_step(fired: Sequence[str], fc_ran: bool) -> str:
    """The first step of the data path that did not complete: where the forward broke."""
    if fc_ran and "fc_out" not in fired:
        return "fc"
    skipped = () if fc_ran else ("fc_in", "fc_out")
    return next(s for s in HOOK_ORDER if s not in fired and s not in skipped)
