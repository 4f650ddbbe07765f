"""Read-only hooks into vLLM's EAGLE-3 path (written against vllm 0.32.0's own classes).

- `Eagle3LlamaForCausalLM.load_weights` (`vllm/model_executor/models/llama_eagle3.py`): returns
  None, so `DefaultModelLoader.load_weights` (`model_loader/default_loader.py:562`) never runs
  its "weights were not initialized from checkpoint" check for the draft. The hook runs the
  loader under a `LoadRecorder`: every key handed in, the parameter it was written to, every
  parameter never written.
- `SpecDecodeBaseProposer.load_model` (`v1/spec_decode/llm_base_proposer.py:1319`): the draft as
  the engine resolved it, and which parameters it then shares from the target.
- `GPUModelRunner._setup_eagle3_aux_hidden_state_outputs` (`v1/worker/gpu_model_runner.py`,
  also run by the CPU runner): the target layers whose states are captured.
- `SpecDecodeBaseProposer.propose` (`llm_base_proposer.py:512`), first call only: the width handed
  to `combine_hidden_states`, whether `fc` ran, whether the draft's output holds NaN.
- `Scheduler.make_spec_decoding_stats` (`v1/core/sched/scheduler.py:2961`): the acceptance
  counts per request step, whether or not stats logging is on (offline `LLM` turns it off).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from types import ModuleType
from typing import Any

from kit.watch import evidence
from kit.watch.lazy import when_imported

EAGLE3_MODULES = (
    "vllm.model_executor.models.llama_eagle3",
    "vllm.model_executor.models.qwen3_eagle3",
    "vllm.model_executor.models.deepseek_eagle3",
)
_MARK = "__kit_watch__"
_state: dict[str, Any] = {"first_forward": False, "target": None, "load": None}


def install() -> None:
    """Patch each hook point as its module is imported (idempotent)."""
    for name in EAGLE3_MODULES:
        when_imported(name, _patch_draft_classes)
    when_imported("vllm.v1.spec_decode.llm_base_proposer", _patch_proposer)
    when_imported("vllm.v1.worker.gpu_model_runner", _patch_runner)
    when_imported("vllm.v1.core.sched.scheduler", _patch_scheduler)
    when_imported("vllm.logger", _watch_engine_log)


def _wrap(owner: Any, attr: str, make: Any) -> None:
    original = getattr(owner, attr, None)
    if original is None or getattr(original, _MARK, False):
        return
    wrapped = functools.wraps(original)(make(original))
    setattr(wrapped, _MARK, True)
    setattr(owner, attr, wrapped)


def _patch_draft_classes(module: ModuleType) -> None:
    for name in dir(module):
        cls = getattr(module, name)
        if isinstance(cls, type) and name.startswith("Eagle3") and "load_weights" in vars(cls):
            _wrap(cls, "load_weights", _load_weights_hook)


def _load_weights_hook(original: Any) -> Any:
    def load_weights(self, weights):  # type: ignore[no-untyped-def]
        from kit.watch.recorder import LoadRecorder

        recorder = LoadRecorder(self.named_parameters())
        started = time.time()
        try:
            with recorder:
                returned = original(self, recorder.watch(weights))
        except Exception as e:
            _state["load"] = {**recorder.evidence(), "error": f"{type(e).__name__}: {e}"}
            evidence.record({"load": _state["load"]})
            evidence.record_crash(e, "draft load_weights")
            raise
        ev = recorder.evidence()
        for key in ev["keys"]:
            if not key["written_to"] and (rule := skip_rule(self, key["key"])):
                key["skipped_by"] = rule
        _state["load"] = {
            **ev,
            "model_class": type(self).__name__,
            "returned": "None" if returned is None else f"{len(returned)} names",
            "seconds": round(time.time() - started, 3),
        }
        return returned

    return load_weights


def skip_rule(model: Any, key: str) -> str | None:
    """The rule of 0.32's `Eagle3LlamaForCausalLM.load_weights` that drops this key, read off
    the model's own flags (the loader keeps no record of what it skipped)."""
    inner = getattr(model, "model", model)
    rules = [
        ("t2d", True, "llama_eagle3.py:426 drops names containing 't2d'"),
        ("mask_hidden", not getattr(model, "use_parallel_drafting", False),
         "llama_eagle3.py:431 skips mask_hidden without parallel drafting"),
        ("fc.", not getattr(inner, "use_aux_hidden_state", True),
         "llama_eagle3.py:463 maps 'fc.' to nothing: use_aux_hidden_state is false"),
        ("input_norm.", not getattr(inner, "norm_before_fc", False),
         "llama_eagle3.py:465 maps 'input_norm.' to nothing: norm_before_fc is false"),
    ]  # fmt: skip
    return next((why for sub, on, why in rules if on and sub in key), None)


def _patch_proposer(module: ModuleType) -> None:
    cls = module.SpecDecodeBaseProposer
    _wrap(cls, "load_model", _proposer_load_hook)
    _wrap(cls, "propose", _propose_hook)


def _proposer_load_hook(original: Any) -> Any:
    def load_model(self, target_model):  # type: ignore[no-untyped-def]
        original(self, target_model)
        load = _state.get("load")
        if load is None:
            return
        shared = {id(p) for p in target_model.parameters()}
        now = {n: id(p) for n, p in self.model.named_parameters()}
        for p in load["params"]:
            if now.get(p["name"]) in shared:
                p["state"] = "from_target"
        _state["config"] = resolved_config(self)
        evidence.record({"load": load, "draft": _state["config"]})

    return load_model


def resolved_config(proposer: Any) -> dict[str, Any]:
    """The draft as this engine resolved it: class, aux flags, norms, vocabulary, chain."""
    model = proposer.model
    inner = getattr(model, "model", model)
    spec = proposer.speculative_config
    hf = spec.draft_model_config.hf_config
    eagle = dict(getattr(hf, "eagle_config", None) or {})
    return {
        "model_class": type(model).__name__,
        "method": spec.method,
        "draft_path": str(spec.draft_model_config.model),
        "target_path": str(proposer.vllm_config.model_config.model),
        "cwd": os.getcwd(),
        "num_speculative_tokens": spec.num_speculative_tokens,
        "use_aux_hidden_state": bool(getattr(inner, "use_aux_hidden_state", True)),
        "proposer_use_aux_hidden_state": bool(
            getattr(proposer, "eagle3_use_aux_hidden_state", True)
        ),
        "eagle_config": eagle,
        "aux_layer_ids_in_config": getattr(hf, "eagle_aux_hidden_state_layer_ids", None)
        or eagle.get("eagle_aux_hidden_state_layer_ids"),
        "norm_before_fc": bool(getattr(inner, "norm_before_fc", False)),
        "fc_norm": getattr(inner, "fc_norm", None) is not None,
        "norm_before_residual": bool(getattr(hf, "norm_before_residual", False)),
        "norm_output": bool(getattr(inner, "norm_output", False)),
        "fc_input_size": getattr(inner, "fc_input_size", None),
        "has_fc": hasattr(inner, "fc"),
        "hidden_size": getattr(hf, "hidden_size", None),
        "draft_vocab_size": getattr(hf, "draft_vocab_size", None),
        "vocab_size": getattr(hf, "vocab_size", None),
        "dtype": str(proposer.vllm_config.model_config.dtype),
    }


def _patch_runner(module: ModuleType) -> None:
    _wrap(module.GPUModelRunner, "_setup_eagle3_aux_hidden_state_outputs", _aux_setup_hook)


def _aux_setup_hook(original: Any) -> Any:
    def setup(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = original(self, *args, **kwargs)
        if _state.get("config") is not None:
            layers = _captured_layers(self.model)
            _state["aux_layers"] = layers
            evidence.record(
                {
                    "engine": _engine(),
                    "capture": {
                        "aux_layers": layers,
                        "use_aux_hidden_state_outputs": bool(
                            getattr(self, "use_aux_hidden_state_outputs", False)
                        ),
                        "target_hidden_size": getattr(
                            self.model_config.hf_config, "hidden_size", None
                        ),
                    },
                    "loaded": evidence.process_info("worker"),
                }
            )
        return out

    return setup


def _captured_layers(model: Any) -> list[int] | None:
    for m in model.modules():
        layers = getattr(m, "aux_hidden_state_layers", None)
        if layers:
            return [int(i) for i in layers]
    return None


def _engine() -> dict[str, str]:
    import vllm

    return {"name": "vllm", "version": str(getattr(vllm, "__version__", "unknown"))}


def _propose_hook(original: Any) -> Any:
    def propose(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if _state["first_forward"]:
            return original(self, *args, **kwargs)
        _state["first_forward"] = True
        return _first_propose(original, self, args, kwargs)

    return propose


def _first_propose(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    """The first draft forward, observed: forward hooks that only read, removed afterwards."""
    import torch

    hidden = kwargs.get("target_hidden_states", args[3] if len(args) > 3 else None)
    seen: dict[str, Any] = {"fc_ran": False, "nan": False}
    model = self.model
    inner = getattr(model, "model", model)
    handles = []
    fc = getattr(inner, "fc", None)
    if isinstance(fc, torch.nn.Module):
        handles.append(fc.register_forward_hook(lambda m, i, o: seen.update(fc_ran=True)))

    def check_nan(module, inputs, output):  # type: ignore[no-untyped-def]
        first = output[0] if isinstance(output, tuple) else output
        if isinstance(first, torch.Tensor) and first.is_floating_point():
            seen["nan"] = seen["nan"] or bool(torch.isnan(first).any())

    handles.append(model.register_forward_hook(check_nan))
    try:
        out = original(self, *args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    record_first_forward(hidden, seen, out)
    return out


def record_first_forward(hidden: Any, seen: dict[str, Any], draft_ids: Any) -> None:
    import torch

    width = int(hidden.shape[-1]) if isinstance(hidden, torch.Tensor) else None
    evidence.record(
        {
            "first_forward": {
                "captured_layers": _state.get("aux_layers"),
                "width": width,
                "fc_ran": seen["fc_ran"],
                "nan": seen["nan"],
                "tokens": int(hidden.shape[0]) if width is not None else None,
                "draft_tokens_shape": list(getattr(draft_ids, "shape", [])),
                **evidence.process_info("worker"),
            }
        }
    )


def _patch_scheduler(module: ModuleType) -> None:
    _wrap(module.Scheduler, "make_spec_decoding_stats", _stats_hook)


def _stats_hook(original: Any) -> Any:
    def make_spec_decoding_stats(self, stats, num_draft_tokens, num_accepted_tokens, *rest, **kw):  # type: ignore[no-untyped-def]
        if num_draft_tokens:
            invalid = rest[0] if rest else kw.get("num_invalid_spec_tokens")
            request = rest[1] if len(rest) > 1 else kw.get("request_id")
            drafted = num_draft_tokens - ((invalid or {}).get(request, 0))
            evidence.count_draft(drafted, num_accepted_tokens)
        return original(self, stats, num_draft_tokens, num_accepted_tokens, *rest, **kw)

    return make_spec_decoding_stats


class _CrashHandler(logging.Handler):
    """vLLM logs a start-up failure with its exception ("EngineCore failed to start.") before
    the process dies; the report keeps that exception."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None and record.levelno >= logging.ERROR:
            evidence.record_crash(record.exc_info[1], record.getMessage())


def _watch_engine_log(module: ModuleType) -> None:
    log = logging.getLogger("vllm")
    if not any(isinstance(h, _CrashHandler) for h in log.handlers):
        log.addHandler(_CrashHandler(logging.ERROR))
