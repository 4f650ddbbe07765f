"""Train and export an EAGLE-3 draft with SpecForge 0.2.0's own modules (run in its venv).

SpecForge 0.2.0 captures target states only through an SGLang server (`config/schema.py:54`,
`target_backend: Literal["sglang"]`), which needs a GPU. Its offline mode trains on stored
states instead, so this script computes them with transformers the way SGLang captures them for
SpecForge's default ids (`algorithms/model_providers.py:204`, `[1, L//2-1, L-4]`, each the output
of that layer: SGLang's `set_eagle3_layers_to_capture` adds 1 and keeps the state before layer
id+1, which is Hugging Face's `hidden_states[id + 1]`). Everything else is SpecForge's: the draft
config generator (`training/model_loading.py:211`), the vocabulary map
(`data/preprocessing.py:720`), the draft class, the TTT training model and strategy, the
checkpoint manager and `specforge export`. The one patch for CPU: `core/loss.py`'s
`LogSoftmaxLoss` is a Triton kernel, replaced by the same file's torch reference `_compute_loss`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import torch

DRAFT_VOCAB = 256
STEPS = 80
SEQ = 64
BATCH = 8
LR = 1e-3


def patch_cpu_loss() -> None:
    """Swap the Triton loss for SpecForge's torch reference (the same math, `core/loss.py`)."""
    import specforge.algorithms.eagle3.model as eagle3_model
    from specforge.core import loss

    class TorchReferenceLoss:
        @staticmethod
        def apply(logits, target_p, position_mask):
            return loss._compute_loss(logits, target_p, position_mask)

    eagle3_model.LogSoftmaxLoss = TorchReferenceLoss


def sequences(prompts: Path) -> torch.Tensor:
    """The bundled prompts' token ids cut into SEQ-token windows (a corpus for a sample)."""
    ids = [i for line in prompts.read_text().splitlines() for i in json.loads(line)["ids"]]
    n = len(ids) // SEQ
    return torch.tensor(ids[: n * SEQ]).view(n, SEQ)


def target_copy(target: Path, work: Path) -> Path:
    """The target with a safetensors index: SpecForge's TargetHead and embedding loader look the
    weights up through one (`modeling/target/target_head.py`)."""
    from safetensors import safe_open

    out = work / "target"
    shutil.copytree(target, out, dirs_exist_ok=True)
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        names = list(f.keys())
    index = {"metadata": {}, "weight_map": dict.fromkeys(names, "model.safetensors")}
    (out / "model.safetensors.index.json").write_text(json.dumps(index))
    return out


def draft_config(target: Path, work: Path) -> Path:
    """SpecForge's own draft config for this target, with a draft vocabulary that fits it."""
    from specforge.algorithms.builtin import builtin_algorithm_registry
    from specforge.config import Config
    from specforge.training.model_loading import resolve_draft_config

    cfg = Config.model_validate(
        {
            "model": {"target_model_path": str(target)},
            "training": {"strategy": "eagle3"},
            "data": {"hidden_states_path": str(work / "features")},
        }
    )
    provider = builtin_algorithm_registry().resolve("eagle3").providers.model.draft_config
    config = resolve_draft_config(cfg, provider=provider)
    config.draft_vocab_size = DRAFT_VOCAB  # the generator's default is 32000
    path = work / "draft_config.json"
    config.to_json_file(str(path))
    return path


def capture(target: Path, batch: torch.Tensor, layers: list[int]) -> tuple:
    """(aux states, final state) as SGLang hands them to SpecForge for output-of-layer ids."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(target), dtype=torch.float32)
    with torch.no_grad():
        out = model(batch, output_hidden_states=True)
    states = out.hidden_states
    return torch.cat([states[k + 1] for k in layers], -1), states[-1].to(torch.bfloat16)


def train(target: Path, cfg_path: Path, prompts: Path) -> tuple:
    """A few TTT steps of SpecForge's Eagle3TrainStrategy on the target's states."""
    from specforge.algorithms.eagle3.model import OnlineEagle3Model
    from specforge.algorithms.model_providers import resolve_eagle_capture_layers
    from specforge.data.preprocessing import process_token_dict_to_mappings
    from specforge.modeling.auto import AutoDraftModel, AutoDraftModelConfig
    from specforge.modeling.target.target_head import TargetHead
    from specforge.runtime.contracts import TrainBatch
    from specforge.training.strategies.base import Eagle3TrainStrategy
    from transformers import AutoConfig

    torch.manual_seed(0)
    data = sequences(prompts)
    config = AutoDraftModelConfig.from_file(str(cfg_path))
    draft = AutoDraftModel.from_config(config, torch_dtype=torch.float32)
    d2t, t2d = process_token_dict_to_mappings(
        Counter(data.reshape(-1).tolist()), DRAFT_VOCAB, config.vocab_size
    )
    draft.d2t.copy_(d2t)
    draft.t2d.copy_(t2d)
    draft.load_embedding(str(target))
    draft.freeze_embedding()
    layers = resolve_eagle_capture_layers(
        _Cfg(), config.to_dict(), AutoConfig.from_pretrained(target)
    )
    model = OnlineEagle3Model(draft, length=7, attention_backend="sdpa")
    strategy = Eagle3TrainStrategy(model, target_head=TargetHead.from_pretrained(str(target)))
    aux, final = capture(target, data, layers)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LR)
    for step in range(STEPS):
        rows = torch.randint(0, data.shape[0], (BATCH,))
        tensors = {
            "input_ids": data[rows],
            "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long),
            "loss_mask": torch.ones(BATCH, SEQ, dtype=torch.long),
            "hidden_state": aux[rows],
            "target": final[rows],
        }
        batch = TrainBatch(
            [str(int(r)) for r in rows], "eagle3", tensors, {"target_repr": "hidden_state"}
        )
        out = strategy.forward_loss(batch)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 20 == 0 or step == STEPS - 1:
            acc = [round(float(a), 3) for a in out.metrics["acces"][:3]]
            print(
                f"step {step} loss {float(out.loss):.3f} acc(first 3 TTT steps) {acc}", flush=True
            )
    return strategy, model, layers


class _Cfg:
    """The run config fields `resolve_eagle_capture_layers` reads: no ids given by the user."""

    class model:
        aux_hidden_state_layer_ids = None


def save(strategy, model, work: Path) -> Path:
    """The checkpoint as SpecForge's controller writes it (`training/controller.py:851`)."""
    from specforge.training.checkpoint import CheckpointManager

    shared = {
        "draft_state_dict": strategy.checkpoint_state_filter(
            {f"draft_model.{k}": v for k, v in model.draft_model.state_dict().items()}
        ),
        "global_step": STEPS,
        "epoch": 0,
        "strategy": strategy.name,
        "run_id": "sample",
        "world_size": 1,
    }
    return Path(CheckpointManager(str(work / "run"), "sample").save(shared, STEPS))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    patch_cpu_loss()
    target = target_copy(args.target, args.work)
    cfg_path = draft_config(target, args.work)
    strategy, model, layers = train(target, cfg_path, args.prompts)
    print(f"capture layers (SpecForge default, output-of-layer): {layers}")
    ckpt = save(strategy, model, args.work)
    exe = Path(sys.executable).with_name("specforge")
    common = ["--checkpoint", str(ckpt), "--draft-config", str(cfg_path)]
    for to, extra in (("sglang", []), ("hf", ["--embedding-source", str(target)])):
        cmd = [str(exe), "export", "--to", to, *common, "--output-dir", str(args.out / to), *extra]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
