"""Small deployments for the deployment-check tests: target and draft configs written to a folder,
tokenizers built locally with `tokenizers`, and the doctor CLI run in-process.

Dimensions are tiny (hidden 64, 8 target layers, vocab 1000) but every field the rules read is
spelled as the trainers and Hugging Face write it. The healthy pair agrees on everything: same
RoPE (Llama 3.1's llama3 scaling), same context (131072), bf16, no quantization.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from kit.cli import main

ROOT = Path(__file__).resolve().parent.parent

LLAMA3_SCALING = {
    "factor": 8.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}
_LAYER = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rms_norm_eps": 1e-05,
    "vocab_size": 1000,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": LLAMA3_SCALING,
    "model_type": "llama",
}


def _write(folder: Path, cfg: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    return folder


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` wins; a value of None removes the key."""
    out = {**base, **over}
    return {k: v for k, v in out.items() if v is not None}


def target(folder: Path, **over: Any) -> Path:
    """A Llama-3.1-style target config (8 layers)."""
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        **_LAYER,
        "num_hidden_layers": 8,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
    }
    return _write(folder, _merge(cfg, over))


def vl_target(folder: Path, **over: Any) -> Path:
    """A Qwen2.5-VL-style target: the language model under `text_config`, mrope positions."""
    text = {
        **_LAYER,
        "num_hidden_layers": 8,
        "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [4, 2, 2]},
        "max_position_embeddings": 32768,
        "torch_dtype": "bfloat16",
    }
    cfg = {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "model_type": "qwen2_5_vl",
        "text_config": _merge(text, over),
        "vision_config": {"depth": 2, "hidden_size": 32},
    }
    return _write(folder, cfg)


def specforge_draft(folder: Path, **over: Any) -> Path:
    """A SpecForge-style EAGLE-3 draft config: a flat LlamaConfig (transformers 4 spelling) with
    `eagle_config` aux ids in the output-of-layer convention."""
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        **_LAYER,
        "num_hidden_layers": 1,
        "draft_vocab_size": 200,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 5]},
    }
    return _write(folder, _merge(cfg, over))


def speculators_draft(folder: Path, speculative_tokens: int = 3, **layer: Any) -> Path:
    """A speculators-format EAGLE-3 draft config trained for `speculative_tokens` per step, aux
    ids in the after-k-layers convention (the engines' defaults for 8 target layers)."""
    cfg = {
        "architectures": ["Eagle3DraftModel"],
        "speculators_model_type": "eagle3",
        "draft_vocab_size": 200,
        "dtype": "bfloat16",
        "eagle_aux_hidden_state_layer_ids": [2, 4, 5],
        "norm_before_residual": True,  # the 0.9.0 trainer's default, always written
        "speculators_config": {
            "algorithm": "eagle3",
            "proposal_methods": [
                {"proposal_type": "greedy", "speculative_tokens": speculative_tokens}
            ],
            "verifier": {"architectures": ["LlamaForCausalLM"], "name_or_path": "target"},
        },
        "transformer_layer_config": _merge({**_LAYER, "num_hidden_layers": 1}, layer),
    }
    return _write(folder, cfg)


def eagle1_draft(folder: Path) -> Path:
    """An EAGLE-1/2 draft: a plain LlamaForCausalLM config and an fc over embedding ++ hidden."""
    from safetensors.numpy import save_file

    cfg = {"architectures": ["LlamaForCausalLM"], **_LAYER, "num_hidden_layers": 1}
    _write(folder, cfg)
    save_file(
        {"fc.weight": np.zeros((64, 128), dtype=np.float32)}, str(folder / "model.safetensors")
    )
    return folder


def with_d2t(folder: Path, targets: list[int]) -> Path:
    """Give a draft checkpoint the vocabulary `targets` (d2t offsets: target id = i + d2t[i])."""
    from safetensors.numpy import save_file

    d2t = np.array([t - i for i, t in enumerate(targets)], dtype=np.int64)
    save_file({"d2t": d2t}, str(folder / "model.safetensors"))
    cfg = json.loads((folder / "config.json").read_text())
    cfg["draft_vocab_size"] = len(targets)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    return folder


CHATML = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> "
    "{% endfor %}{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)
CHATML_THINKING = CHATML.replace(
    "<|im_start|> assistant {% endif %}", "<|im_start|> assistant <think> </think> {% endif %}"
)
SPECIALS = ["<|im_start|>", "<|im_end|>", "<think>", "</think>"]
WORDS = ["system", "user", "assistant", "You", "are", "a", "helpful", "What", "is", "2", "+"]


def tokenizer(folder: Path, template: str | None = CHATML, specials: list[str] = SPECIALS) -> Path:
    """A word-level tokenizer with chat-template special tokens (ids: [UNK] 0, <eos> 1, then the
    special tokens, then the words), saved the way transformers saves one."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[UNK]", "<eos>", *specials, *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        eos_token="<eos>",
        additional_special_tokens=specials,
    )
    if template is not None:
        fast.chat_template = template
    fast.save_pretrained(str(folder))
    return folder


def doctor_json(capsys, *args: str) -> dict[str, Any]:
    """`python -m kit doctor … --json`, run in-process; the parsed JSON."""
    capsys.readouterr()
    code = main(["doctor", *args, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def codes(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Findings by code (the first of each)."""
    out: dict[str, dict[str, Any]] = {}
    for f in report["findings"]:
        out.setdefault(f["code"], f)
    return out
