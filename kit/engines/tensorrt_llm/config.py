"""How TensorRT-LLM (PyTorch backend) reads an EAGLE-3 draft's config.json: what it refuses,
what it builds, which trained behaviours it honours.

Read at NVIDIA/TensorRT-LLM commit b35ac1b64368513d215c57d2ed01d62d910df8da, whose
`tensorrt_llm/version.py` is 1.2.0rc2: `_torch/models/modeling_speculative.py` (cited below as
`SPEC:line`). The draft config goes through `ModelConfig.from_pretrained`, i.e. transformers'
AutoConfig, which needs a `model_type`: a speculators config (`transformer_layer_config`) is
refused. The draft class does not depend on `architectures` in the default one-model mode
(`get_draft_model` builds `Eagle3ForCausalLM`, SPEC:479-482); the two-model mode
(`eagle3_one_model=False`) picks the class from `architectures` and is not modelled here. The
EAGLE-3 module of this release reads no
norm flag (`norm_before_fc`, `fc_norm`, `norm_output`, `eagle_config`): it runs the plain
EAGLE-3 layer. `rewritten_config` is the form it reads, which `python -m kit fix --for
tensorrt_llm==X` writes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kit.checkpoint.config import DraftConfig, flatten_speculators
from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vocab import Honoured, Refusal, untie_trained_head

COMMIT = "b35ac1b6"  # NVIDIA/TensorRT-LLM commit read; its version.py says 1.2.0rc2
SPEC = "tensorrt_llm/_torch/models/modeling_speculative.py"
LLM_ARGS = "tensorrt_llm/llmapi/llm_args.py"
AT = f"(1.2.0rc2, {COMMIT})"

# AutoConfig needs a model_type; a speculators config has none at top level.
SPECULATORS_CONFIG: list[Row[bool]] = [
    Row(VersionRange("1.2.0rc2"), False,
        f"{SPEC}:510 ModelConfig.from_pretrained(speculative_model_dir) (model_config.py: "
        f"transformers AutoConfig; no model_type: Unrecognized model); no speculators reader "
        f"found {AT}"),
]  # fmt: skip

# `config.draft_vocab_size` is read as an attribute: a config without the key fails.
DRAFT_VOCAB_ATTR = Row(
    VersionRange("1.2.0rc2"),
    True,
    f"{SPEC}:265 model_config.pretrained_config.draft_vocab_size (AttributeError when absent) {AT}",
)

# `hasattr(config, "target_hidden_size")`: a JSON null passes the test and sizes fc from None.
TARGET_HIDDEN_NULL = Row(
    VersionRange("1.2.0rc2"), True, f"{SPEC}:159-169 hasattr(config, 'target_hidden_size') {AT}"
)

# fc's in-width factor: spec_config.num_capture_layers = len(eagle3_layers_to_capture), else 3;
# read from the LLM API's speculative config, never from the draft config.
NUM_CAPTURE_LAYERS = Row(
    VersionRange("1.2.0rc2"),
    3,
    f"{SPEC}:164-169 fc = Linear(hidden_size_in * num_capture_layers) only if > 1; {LLM_ARGS} "
    f"EagleDecodingConfig.num_capture_layers: len(eagle3_layers_to_capture) else 3 {AT}",
)

# DecoderModelForCausalLM ties lm_head to model.embed_tokens, which the draft leaves None.
TIED_HEAD_WITHOUT_EMBED = (
    "tensorrt_llm/_torch/models/modeling_utils.py DecoderModelForCausalLM.__init__ "
    "tie_word_embeddings: lm_head.weight = model.embed_tokens.weight; "
    f"{SPEC}:205-206 embed_tokens = None when target_hidden_size == hidden_size {AT}"
)

# The decoder layer keeps the pre-hidden_norm state as residual; no norm flag is read.
NO_FLAGS = f"{SPEC}:143-206 Eagle3DraftModel reads no norm_before_fc / fc_norm / norm_output {AT}"
NO_NORM_BEFORE_RESIDUAL = f"{SPEC}:117 residual = hidden_states before hidden_norm {AT}"

ARCH = "LlamaForCausalLM"
CONFIG_FIX = (
    "rewrite config.json as a flat LlamaConfig with draft_vocab_size (architectures "
    "[LlamaForCausalLM]); python -m kit fix CKPT --engine tensorrt_llm==X"
)


def speculators(cfg: DraftConfig) -> bool:
    return cfg.source == "speculators"


def own_embedding(cfg: DraftConfig) -> bool:
    """The draft builds its own embedding only when the target's width differs from its own
    (SPEC:188-206); otherwise it uses the target's."""
    return cfg.target_width != cfg.hidden_size


def refuses_config(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """Why this release refuses the config.json as written, or None."""
    row = pick(SPECULATORS_CONFIG, release)
    if speculators(cfg) and not row.value:
        return Refusal(
            "ValueError: Unrecognized model (AutoConfig: a speculators config has no model_type)",
            row.source,
        )
    return None


def constructor_failure(cfg: DraftConfig, release: EngineRelease) -> Refusal | None:
    """An exception the draft's constructor raises before any key is read, or None."""
    if not cfg.draft_vocab_size_key and release in DRAFT_VOCAB_ATTR.versions:
        msg = "AttributeError: 'LlamaConfig' object has no attribute 'draft_vocab_size'"
        return Refusal(msg, DRAFT_VOCAB_ATTR.source)
    null_width = "target_hidden_size" in cfg.raw and cfg.raw["target_hidden_size"] is None
    if null_width and release in TARGET_HIDDEN_NULL.versions:
        msg = "TypeError: unsupported operand type(s) for *: 'NoneType' and 'int' (fc width)"
        return Refusal(msg, TARGET_HIDDEN_NULL.source)
    if cfg.tie_word_embeddings and not own_embedding(cfg):
        msg = "AttributeError: 'NoneType' object has no attribute 'tp_size' (tied lm_head)"
        return Refusal(msg, TIED_HEAD_WITHOUT_EMBED)
    return None


def num_aux(cfg: DraftConfig, release: EngineRelease) -> int:
    """The fc in-width factor: the speculative config's num_capture_layers (3 by default; the
    draft config is not read for it)."""
    return pick([NUM_CAPTURE_LAYERS], release).value  # one row: a gap raises


def honours(cfg: DraftConfig, release: EngineRelease) -> Honoured:
    """No norm flag is read by this release: each is as good as unset."""
    return Honoured.nothing(NO_FLAGS, NO_NORM_BEFORE_RESIDUAL)


def rewritten_config(
    cfg: DraftConfig, release: EngineRelease, keys: Sequence[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """config.json in the form this release reads, and what changed (empty: already fine).

    A speculators config becomes a flat LlamaConfig (`draft_vocab_size` kept, a null
    `target_hidden_size` dropped); its aux ids stay at top level, where this release does not
    read them either: the capture is set by `eagle3_layers_to_capture` in the speculative
    config (output-of-layer ids). The class does not follow `architectures`, so no name is
    rewritten; a tied config over a trained head is untied (a tied head fails to build here,
    `TIED_HEAD_WITHOUT_EMBED`).
    """
    raw = json.loads(json.dumps(cfg.raw))
    if not speculators(cfg):
        return raw, untie_trained_head(raw, cfg, keys)
    new = flatten_speculators(raw, ARCH)
    changes = [f"speculators config -> flat {ARCH} config with draft_vocab_size"]
    ids = cfg.aux_layer_ids
    if ids:
        new["eagle_aux_hidden_state_layer_ids"] = ids
        changes.append(
            f"aux ids {ids} kept for reference; TensorRT-LLM does not read them: pass "
            f"eagle3_layers_to_capture={{{', '.join(str(i - 1) for i in ids)}}} in the "
            "speculative config"
        )
    return new, changes + untie_trained_head(new, cfg, keys)
