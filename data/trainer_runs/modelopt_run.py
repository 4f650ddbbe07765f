"""Train and export an EAGLE-3 draft with NVIDIA ModelOpt 0.47.0 (run in its venv).

The documented path: `mtsp.convert(model, [("eagle", cfg)])` with ModelOpt's
`EAGLE3_DEFAULT_CFG` (`torch/speculative/config.py:48`), a few training steps through
`HFEagleModel.forward` (its own TTT loss, online: the base model runs in-process and forward
hooks collect the aux states, `plugins/hf_eagle.py:402-406`), then
`export_speculative_decoding` (`torch/export/unified_export_hf.py:1452`). Two runs:

- `reduced`: the full target, a draft vocabulary of 128 calibrated by ModelOpt's
  `calibrate_frequent_vocab` (`torch/speculative/utils.py:62-76`): `d2t` in frequency order.
- `fullvocab`: the target cut to 4 layers, the full vocabulary: no `d2t`, the base `lm_head`
  copied into the export (`export/plugins/hf_spec_export.py:174-176`), and the default aux ids
  deduplicated to two (`plugins/hf_eagle.py:58-63`).

Patches for CPU: `eagle_use_torch_compile: False`. The draft layer's width fields
(intermediate 14336, 32 heads of 128 in `eagle/default_config.py:26-44`, which do not follow the
target) are set to the target's so the sample stays small; every other field is ModelOpt's.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import torch

STEPS = 40
SEQ = 64
BATCH = 8
LR = 1e-3
DRAFT_VOCAB = 128  # the prompts use 212 distinct ids; calibration needs that many


def sequences(prompts: Path) -> torch.Tensor:
    ids = [i for line in prompts.read_text().splitlines() for i in json.loads(line)["ids"]]
    n = len(ids) // SEQ
    return torch.tensor(ids[: n * SEQ]).view(n, SEQ)


def load_target(path: Path, layers: int | None):
    """The target, or its first `layers` decoder layers (a smaller target of the same family)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    if layers is not None:
        model.model.layers = model.model.layers[:layers]
        model.config.num_hidden_layers = layers
    return model


def d2t_file(target: Path, prompts: Path, work: Path) -> Path:
    """ModelOpt's frequency calibration over the prompts as chat conversations."""
    from modelopt.torch.speculative.utils import calibrate_frequent_vocab
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(target))
    texts = [json.loads(line)["text"] for line in prompts.read_text().splitlines()]
    conversations = [{"role": "user", "content": t} for t in texts]
    out = work / "d2t.pt"
    calibrate_frequent_vocab(tok, conversations, DRAFT_VOCAB, str(out))
    return out


def eagle_config(model, draft_vocab: int | None) -> dict:
    from modelopt.torch.speculative.config import EAGLE3_DEFAULT_CFG

    cfg = copy.deepcopy(EAGLE3_DEFAULT_CFG["config"])
    arch = cfg["eagle_architecture_config"]
    c = model.config
    arch.update(
        intermediate_size=c.intermediate_size,
        num_attention_heads=c.num_attention_heads,
        num_key_value_heads=c.num_key_value_heads,
        head_dim=c.head_dim,
    )
    if draft_vocab is not None:
        arch["draft_vocab_size"] = draft_vocab
    cfg["eagle_use_torch_compile"] = False
    return cfg


def run(target: Path, prompts: Path, work: Path, out: Path, layers: int | None, reduced: bool):
    import modelopt.torch.speculative as mtsp
    from modelopt.torch.export import export_speculative_decoding

    torch.manual_seed(0)
    model = load_target(target, layers)
    cfg = eagle_config(model, DRAFT_VOCAB if reduced else None)
    mtsp.convert(model, [("eagle", cfg)])
    if reduced:
        loaded = torch.load(d2t_file(target, prompts, work), weights_only=True)
        model.eagle_module.d2t.copy_(loaded)
    print("aux ids:", model.eagle_config.eagle_aux_hidden_state_layer_ids, flush=True)
    data = sequences(prompts)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR)
    for step in range(STEPS):
        rows = torch.randint(0, data.shape[0], (BATCH,))
        batch = data[rows]
        result = model(input_ids=batch, attention_mask=torch.ones_like(batch), labels=batch)
        opt.zero_grad()
        result.loss.backward()
        opt.step()
        if step % 10 == 0 or step == STEPS - 1:
            print(f"step {step} loss {float(result.loss):.3f}", flush=True)
    model.eval().to(torch.bfloat16)  # trained in float32, shipped in the target's bf16
    export_speculative_decoding(model, export_dir=str(out))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    run(args.target, args.prompts, args.work, args.out / "reduced", None, True)
    run(args.target, args.prompts, args.work, args.out / "fullvocab", 4, False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
