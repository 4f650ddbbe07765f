"""Draft and target `config.json`s from every trainer, normalised into one shape.

Trainers disagree on where fields live (speculators nests the layer config under
`transformer_layer_config`; SpecForge, EAGLE and ModelOpt write a flat LlamaConfig, ModelOpt and
SpecForge add `eagle_config`) and transformers 4 and 5 spell fields differently (`rope_theta` vs
`rope_parameters`, `torch_dtype` vs `dtype`). Engines read particular spellings, so the raw dict
is kept beside the normalised view.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import KitError

# How an aux layer id is meant. vLLM stores id k as the state after k decoder layers and reads a
# config's ids verbatim (0.11.1 v1/worker/gpu_model_runner.py:3395-3420; target side 0.9.2
# model_executor/models/llama.py:387-391); speculators writes that convention. SGLang adds 1 to the
# ids it reads from eagle_config (0.5.10 models/llama.py:783), so SpecForge and ModelOpt write
# them as the output of layer k.
AFTER_K_LAYERS = "after_k_layers"  # vLLM / speculators / EAGLE: state after k decoder layers
OUTPUT_OF_LAYER = "output_of_layer"  # SGLang explicit / SpecForge / ModelOpt: output of layer k


@dataclass
class DraftConfig:
    """What an engine needs to know about an EAGLE-3 draft, whichever trainer wrote it."""

    source: str  # "speculators" | "flat" (SpecForge / EAGLE / ModelOpt LlamaConfig)
    architectures: list[str]
    model_type: str
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    draft_vocab_size: int | None  # None: JSON null or absent (see draft_vocab_size_key)
    draft_vocab_size_key: bool  # whether config.json has the key at all
    target_hidden_size: int | None
    num_hidden_layers: int
    aux_layer_ids: list[int] | None
    aux_layer_convention: str | None  # AFTER_K_LAYERS | OUTPUT_OF_LAYER | None (engine default)
    aux_ids_location: str | None  # "top_level" | "eagle_config" | None
    use_aux_hidden_state: bool
    norm_before_residual: bool
    norm_before_fc: bool
    fc_norm: bool
    norm_output: bool
    tie_word_embeddings: bool
    bias: bool
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    dtype: str | None
    num_speculative_tokens: int | None
    verifier: str | None
    eagle_config: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    path: Path | None = None
    # normalised field -> the config.json key it was read from (absent: a default was used)
    provenance: dict[str, str] = field(default_factory=dict)

    @property
    def target_width(self) -> int:
        """Width of one target hidden state (`target_hidden_size` or the draft's own)."""
        return self.target_hidden_size or self.hidden_size

    @property
    def num_aux(self) -> int:
        return len(self.aux_layer_ids) if self.aux_layer_ids else 3

    @property
    def effective_draft_vocab(self) -> int:
        return self.draft_vocab_size or self.vocab_size

    @property
    def initializer_range(self) -> float:
        """Std of HF's fresh normal init, used to recognise weights that never trained."""
        layer = self.raw.get("transformer_layer_config", self.raw)
        return float(layer.get("initializer_range", 0.02)) if isinstance(layer, dict) else 0.02

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("raw")
        d["path"] = str(self.path) if self.path else None
        return d


@dataclass
class TargetConfig:
    """The target model facts the kit needs: layers, width, vocab, architecture."""

    architecture: str
    model_type: str
    num_hidden_layers: int
    hidden_size: int
    vocab_size: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    path: Path | None = None
    text_config_key: str | None = None  # e.g. "text_config" for Kimi-K2.5; None: flat config

    def to_dict(self) -> dict[str, Any]:
        return {
            "architecture": self.architecture,
            "model_type": self.model_type,
            "num_hidden_layers": self.num_hidden_layers,
            "hidden_size": self.hidden_size,
            "vocab_size": self.vocab_size,
            "text_config_key": self.text_config_key,
            "path": str(self.path) if self.path else None,
        }


def read_json(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise KitError("no such file", p) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KitError(f"not valid JSON ({e})", p) from None
    if not isinstance(data, dict):
        raise KitError("config is not a JSON object", p)
    return data


def _rope_theta(c: dict[str, Any], prefix: str = "") -> tuple[float, str | None]:
    """transformers 4 writes `rope_theta`; 5 writes `rope_parameters` (per layer type for some
    models, e.g. {"full_attention": {...}, "sliding_attention": {...}})."""
    if "rope_theta" in c:
        return float(c["rope_theta"]), f"{prefix}rope_theta"
    for key in ("rope_parameters", "rope_scaling"):
        rp = c.get(key)
        if not isinstance(rp, dict):
            continue
        if "rope_theta" in rp:
            return float(rp["rope_theta"]), f"{prefix}{key}.rope_theta"
        for kind in ("full_attention", *rp):
            sub = rp.get(kind)
            if isinstance(sub, dict) and "rope_theta" in sub:
                return float(sub["rope_theta"]), f"{prefix}{key}.{kind}.rope_theta"
    return 10000.0, None


def _provenance(
    layer: dict[str, Any], top: dict[str, Any], eagle: dict[str, Any], prefix: str
) -> dict[str, str]:
    """Where each normalised field came from, so a reader can check the engine reads the same."""
    out: dict[str, str] = {}
    for name in (
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "num_hidden_layers",
        "rms_norm_eps",
        "max_position_embeddings",
    ):
        if name in layer:
            out[name] = prefix + name
    for name in ("draft_vocab_size", "target_hidden_size"):
        if name in top:
            out[name] = name
    for name in ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"):
        if name in top:
            out[name] = name
        elif name in eagle:
            out[name] = f"{prefix}eagle_config.{name}"
    if "use_aux_hidden_state" in eagle:
        out["use_aux_hidden_state"] = prefix + "eagle_config.use_aux_hidden_state"
    for key in ("dtype", "torch_dtype"):
        if key in top:
            out["dtype"] = key
            break
        if key in layer:
            out["dtype"] = prefix + key
            break
    return out


def _need(c: dict[str, Any], key: str, path: Path | None) -> Any:
    if key not in c or c[key] is None:
        raise KitError(f"draft config lacks {key!r}", path)
    return c[key]


def parse_draft_config(raw: dict[str, Any], path: Path | None = None) -> DraftConfig:
    """Normalise a draft config dict; `KitError` if it is not an EAGLE-3 draft config."""
    try:
        return _parse_draft_config(raw, path)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, ArithmeticError) as e:
        raise KitError(f"draft config has a field of the wrong type or shape ({e})", path) from None


def _sections(raw: dict[str, Any], path: Path | None) -> tuple[bool, dict, dict, dict]:
    """(speculators format?, the layer fields, the top-level fields, eagle_config).

    A speculators config's `eagle_config` is the one inside `transformer_layer_config`: vLLM's
    draft config is that dict plus what `update_eagle3` copies, and it copies no `eagle_config`
    (0.32.0 vllm/transformers_utils/configs/speculators/base.py:59-63, algos.py:30-50)."""
    speculators = "speculators_model_type" in raw or "transformer_layer_config" in raw
    layer = raw.get("transformer_layer_config") if speculators else raw
    if not isinstance(layer, dict):
        raise KitError("speculators config without a transformer_layer_config object", path)
    eagle = layer.get("eagle_config") or {}
    return speculators, layer, raw, eagle if isinstance(eagle, dict) else {}


def _aux_ids(top: dict, eagle: dict) -> tuple[list[int] | None, str | None, str | None]:
    """(ids, where they were read, their convention). The top-level key is the speculators / vLLM
    one, read verbatim as states after k layers; eagle_config's is SGLang's output of layer k."""
    if top.get("eagle_aux_hidden_state_layer_ids"):
        ids = [int(i) for i in top["eagle_aux_hidden_state_layer_ids"]]
        return ids, "top_level", AFTER_K_LAYERS
    if eagle.get("eagle_aux_hidden_state_layer_ids"):
        ids = [int(i) for i in eagle["eagle_aux_hidden_state_layer_ids"]]
        return ids, "eagle_config", OUTPUT_OF_LAYER
    return None, None, None


def _speculative(raw: dict) -> tuple[int | None, str | None]:
    """(draft tokens per step the proposal was trained for, the verifier's name or path)."""
    spec = raw.get("speculators_config") or {}
    if not isinstance(spec, dict):
        return None, None
    methods = spec.get("proposal_methods") or [{}]
    n_spec = methods[0].get("speculative_tokens") if isinstance(methods[0], dict) else None
    return (int(n_spec) if n_spec else None), (spec.get("verifier") or {}).get("name_or_path")


def _parse_draft_config(raw: dict[str, Any], path: Path | None) -> DraftConfig:
    speculators, layer, top, eagle = _sections(raw, path)
    hidden = int(_need(layer, "hidden_size", path))
    heads = int(_need(layer, "num_attention_heads", path))
    ids, location, convention = _aux_ids(top, eagle)
    n_spec, verifier = _speculative(raw)

    def flag(name: str) -> bool:
        return bool(top.get(name, eagle.get(name, False)))

    prefix = "transformer_layer_config." if speculators else ""
    rope_theta, rope_key = _rope_theta(layer, prefix)
    provenance = _provenance(layer, top, eagle, prefix)
    if rope_key:
        provenance["rope_theta"] = rope_key
    if location:
        provenance["aux_layer_ids"] = (
            "eagle_aux_hidden_state_layer_ids"
            if location == "top_level"
            else prefix + "eagle_config.eagle_aux_hidden_state_layer_ids"
        )
    return DraftConfig(
        source="speculators" if speculators else "flat",
        architectures=list(raw.get("architectures") or []),
        model_type=str(layer.get("model_type", "llama")),
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=int(layer.get("num_key_value_heads") or heads),
        head_dim=int(layer.get("head_dim") or hidden // heads),
        intermediate_size=int(_need(layer, "intermediate_size", path)),
        vocab_size=int(_need(layer, "vocab_size", path)),
        draft_vocab_size=(int(top["draft_vocab_size"]) if top.get("draft_vocab_size") else None),
        draft_vocab_size_key="draft_vocab_size" in top,
        target_hidden_size=(
            int(top["target_hidden_size"]) if top.get("target_hidden_size") else None
        ),
        num_hidden_layers=int(layer.get("num_hidden_layers", 1)),
        aux_layer_ids=ids,
        aux_layer_convention=convention,
        aux_ids_location=location,
        use_aux_hidden_state=bool(eagle.get("use_aux_hidden_state", True)),
        norm_before_residual=flag("norm_before_residual"),
        norm_before_fc=flag("norm_before_fc"),
        fc_norm=flag("fc_norm") or bool(top.get("use_aux_norm", False)),
        norm_output=flag("norm_output"),
        tie_word_embeddings=bool(
            top.get("tie_word_embeddings", layer.get("tie_word_embeddings", False))
        ),
        bias=bool(top.get("bias", False)),
        rms_norm_eps=float(layer.get("rms_norm_eps", 1e-6)),
        rope_theta=rope_theta,
        max_position_embeddings=int(layer.get("max_position_embeddings", 2048)),
        dtype=top.get("dtype")
        or top.get("torch_dtype")
        or layer.get("dtype")
        or layer.get("torch_dtype"),
        num_speculative_tokens=n_spec,
        verifier=verifier,
        eagle_config=dict(eagle),
        raw=raw,
        path=path,
        provenance=provenance,
    )


def load_draft_config(path: str | Path) -> DraftConfig:
    """Read a draft `config.json` (or the one in a folder)."""
    p = Path(path)
    p = p / "config.json" if p.is_dir() else p
    return parse_draft_config(read_json(p), p)


def flatten_speculators(raw: dict[str, Any], arch: str) -> dict[str, Any]:
    """A flat LlamaConfig-style dict from a speculators config, the form the engines read: the
    layer fields at top level, `draft_vocab_size`, the norm flags and `target_hidden_size` /
    `tie_word_embeddings` kept. Aux ids are left to each engine (they read them in different
    places and conventions)."""
    new = dict(raw["transformer_layer_config"])
    new["architectures"] = [arch]
    new["draft_vocab_size"] = raw.get("draft_vocab_size")
    for key in ("target_hidden_size", "tie_word_embeddings"):
        if raw.get(key) is not None:
            new[key] = raw[key]
    for flag in ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"):
        if raw.get(flag):
            new[flag] = True
    rope = new.get("rope_parameters")
    if "rope_theta" not in new and isinstance(rope, dict) and "rope_theta" in rope:
        new["rope_theta"] = rope["rope_theta"]
    if raw.get("dtype") and "torch_dtype" not in new:
        new["torch_dtype"] = raw["dtype"]
    return new


# Nested text configs of multimodal targets (Kimi-K2.5, Llama-4, Qwen-VL, Gemma-3 …).
_TEXT_KEYS = ("text_config", "language_config", "llm_config")


def parse_target_config(raw: dict[str, Any], path: Path | None = None) -> TargetConfig:
    """Normalise a target config (flat, or with a nested text config); `KitError` otherwise."""
    try:
        return _parse_target_config(raw, path)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, ArithmeticError) as e:
        raise KitError(
            f"target config has a field of the wrong type or shape ({e})", path
        ) from None


def _parse_target_config(raw: dict[str, Any], path: Path | None) -> TargetConfig:
    arch = (raw.get("architectures") or ["unknown"])[0]
    text, text_key = raw, None
    for key in _TEXT_KEYS:
        if isinstance(raw.get(key), dict) and "num_hidden_layers" in raw[key]:
            text, text_key = raw[key], key
            break
    for key in ("num_hidden_layers", "hidden_size"):
        if key not in text:
            raise KitError(
                f"target config lacks {key!r} (looked in {', '.join(_TEXT_KEYS)} too)", path
            )
    return TargetConfig(
        architecture=str(arch),
        model_type=str(raw.get("model_type", text.get("model_type", "unknown"))),
        num_hidden_layers=int(text["num_hidden_layers"]),
        hidden_size=int(text["hidden_size"]),
        vocab_size=int(text.get("vocab_size", raw.get("vocab_size", 0))),
        raw=raw,
        path=path,
        text_config_key=text_key,
    )


def load_target_config(path: str | Path) -> TargetConfig:
    p = Path(path)
    p = p / "config.json" if p.is_dir() else p
    return parse_target_config(read_json(p), p)


@dataclass(frozen=True)
class Rope:
    """RoPE as a config writes it, in either transformers spelling (4: `rope_theta` and
    `rope_scaling`; 5: `rope_parameters`, per layer type for some models)."""

    theta: float | None  # None: not written, the reader's default applies
    theta_key: str | None
    scaling: dict[str, Any] | None  # None: plain RoPE (mrope sections are not scaling)
    scaling_key: str | None
    mrope: bool  # multimodal RoPE: the config carries `mrope_section`
    v5_only: bool  # only `rope_parameters`: a transformers 4 reader sees none of it


_ROPE_BOOKKEEPING = {"rope_theta", "mrope_section", "mrope_interleaved", "type", "rope_type"}


def read_rope(c: dict[str, Any], prefix: str = "") -> Rope:
    """The RoPE settings of one (text / layer) config dict."""
    theta, theta_key = _rope_theta(c, prefix)
    scaling = scaling_key = None
    mrope = False
    for key in ("rope_scaling", "rope_parameters"):
        rp = c.get(key)
        if isinstance(rp, dict) and isinstance(rp.get("full_attention"), dict):
            rp = rp["full_attention"]
        if not isinstance(rp, dict):
            continue
        mrope = mrope or "mrope_section" in rp
        kind = rp.get("rope_type", rp.get("type"))
        rest = {k: v for k, v in rp.items() if k not in _ROPE_BOOKKEEPING}
        if scaling is None and (rest or kind not in (None, "default", "mrope")):
            scaling, scaling_key = {"rope_type": kind, **rest}, f"{prefix}{key}"
    return Rope(
        theta=theta if theta_key else None,
        theta_key=theta_key,
        scaling=scaling,
        scaling_key=scaling_key,
        mrope=mrope,
        v5_only="rope_parameters" in c and "rope_theta" not in c and "rope_scaling" not in c,
    )
