"""Read-only hooks into SGLang's EAGLE-3 draft (written against sglang 0.5.10's own classes).

- `LlamaForCausalLMEagle3.load_weights` (`sglang/srt/models/llama_eagle3.py:243`): a hand loop
  that drops any name it cannot place without a word (`if param_name in params_dict`), and
  returns None. Run under a `LoadRecorder`: every key, where it went, every parameter unwritten.
- `set_embed_and_head` / `set_embed` (`sglang/srt/models/llama.py:757,768`, called by
  `speculative/eagle_worker.py:167-184`): the parameters the worker then shares from the target.
- `LlamaModel.forward` of the draft (`llama_eagle3.py:148`), first call only: the width of
  `forward_batch.spec_info.hidden_states`, whether `fc` ran (SGLang runs it only when that width
  differs from the embedding's, `llama_eagle3.py:176`), whether the output holds NaN.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from kit.watch import evidence
from kit.watch.lazy import when_imported
from kit.watch.vllm_hooks import _wrap

MODULE = "sglang.srt.models.llama_eagle3"
_state: dict[str, Any] = {"first_forward": False, "load": None}


def install() -> None:
    when_imported(MODULE, _patch)


def _patch(module: ModuleType) -> None:
    cls = module.LlamaForCausalLMEagle3
    _wrap(cls, "load_weights", _load_hook)
    _wrap(cls, "set_embed_and_head", _shared_hook("model.embed_tokens.weight", "lm_head.weight"))
    _wrap(cls, "set_embed", _shared_hook("model.embed_tokens.weight"))
    _wrap(module.LlamaModel, "forward", _forward_hook)


def _engine() -> dict[str, str]:
    import sglang

    return {"name": "sglang", "version": str(getattr(sglang, "__version__", "unknown"))}


def _load_hook(original: Any) -> Any:
    def load_weights(self, weights):  # type: ignore[no-untyped-def]
        from kit.watch.recorder import LoadRecorder

        recorder = LoadRecorder(self.named_parameters())
        try:
            with recorder:
                returned = original(self, recorder.watch(weights))
        except Exception as e:
            evidence.record({"load": {**recorder.evidence(), "error": f"{type(e).__name__}: {e}"}})
            evidence.record_crash(e, "draft load_weights")
            raise
        ev = recorder.evidence()
        for key in ev["keys"]:
            if "d2t" in key["key"]:  # turned into hot_token_id, not written to a parameter
                key["consumed_as"] = "hot_token_id (llama_eagle3.py:258)"
        _state["load"] = {
            **ev,
            "model_class": type(self).__name__,
            "returned": "None" if returned is None else f"{len(returned)} names",
        }
        evidence.record({"engine": _engine(), "load": _state["load"], "draft": draft_config(self)})
        return returned

    return load_weights


def draft_config(model: Any) -> dict[str, Any]:
    """The draft as SGLang built it: class, fc width, vocabulary, aux capture flag."""
    cfg = model.config
    inner = model.model
    return {
        "model_class": type(model).__name__,
        "has_fc": hasattr(inner, "fc"),
        "fc_input_size": getattr(getattr(inner, "fc", None), "in_features", None),
        "hidden_size": getattr(cfg, "hidden_size", None),
        "draft_vocab_size": getattr(cfg, "draft_vocab_size", None),
        "vocab_size": getattr(cfg, "vocab_size", None),
        "use_aux_hidden_state": bool(getattr(model, "capture_aux_hidden_states", True)),
        "aux_layer_ids_in_config": (getattr(cfg, "eagle_config", None) or {}).get(
            "eagle_aux_hidden_state_layer_ids"
        ),
    }


def _shared_hook(*names: str) -> Any:
    def make(original: Any) -> Any:
        def shared(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            out = original(self, *args, **kwargs)
            load = _state.get("load")
            if load is not None:
                for p in load["params"]:
                    if p["name"] in names and p["state"] != "written":
                        p["state"] = "from_target"
                evidence.record({"load": load, "loaded": evidence.process_info("scheduler")})
            return out

        return shared

    return make


def _forward_hook(original: Any) -> Any:
    def forward(self, input_ids, positions, forward_batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        if _state["first_forward"]:
            return original(self, input_ids, positions, forward_batch, *args, **kwargs)
        _state["first_forward"] = True
        import torch

        seen = {"fc_ran": False, "nan": False}
        handle = self.fc.register_forward_hook(lambda m, i, o: seen.update(fc_ran=True))
        try:
            out = original(self, input_ids, positions, forward_batch, *args, **kwargs)
        finally:
            handle.remove()
        first = out[0] if isinstance(out, tuple) else out
        if isinstance(first, torch.Tensor) and first.is_floating_point():
            seen["nan"] = bool(torch.isnan(first).any())
        hidden = forward_batch.spec_info.hidden_states
        evidence.record(
            {
                "first_forward": {
                    "width": int(hidden.shape[-1]),
                    "fc_ran": seen["fc_ran"],
                    "nan": seen["nan"],
                    "captured_layers": None,
                    **evidence.process_info("scheduler"),
                }
            }
        )
        return out

    return forward
