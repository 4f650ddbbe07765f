"""Write the real exports of SpecForge 0.2.0, NVIDIA ModelOpt 0.47.0 and the speculators 0.9.0
converter into data/samples/.

Each trainer is installed from PyPI into a throwaway venv beside the CPU torch wheel the kit pins
(`torch==2.13.0`), trains a one-layer EAGLE-3 draft for a few steps on the bundled target
(`data/pair/target`) and exports it with its own exporter:

- `trainer_runs/specforge_run.py`: `specforge export --to sglang` and `--to hf`;
- `trainer_runs/modelopt_run.py`: `mtsp.convert` + `export_speculative_decoding`, once on the
  full target with a reduced vocabulary and once on its first 4 layers with the full one;
- `speculators convert --algorithm eagle3` on the SpecForge `--to sglang` export (the EAGLE layout
  the converter reads), the bundled target as its verifier.

What each folder holds, and what was patched for CPU, is in its PROVENANCE.md. SpecForge 0.2.0
pins `torch==2.11.0` and `sglang==0.5.14`; PyPI's Linux builds of torch 2.11.0 are CUDA builds
and SGLang is the GPU capture server, so SpecForge is installed without its dependencies over
the kit's torch 2.13.0 and the few libraries its training and export modules import. ModelOpt
0.47.0 accepts torch 2.13.0 (`torch>=2.8`) and is installed with its dependencies.

    python data/make_trainer_samples.py [--venvs DIR] [--out DIR] [--only NAME ...]

About 3 minutes with the venvs in place, 10 to 15 more to build them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parent
TARGET = DATA / "pair" / "target"
PROMPTS = DATA / "pair" / "prompts.jsonl"
TORCH = "torch==2.13.0"

VENVS = {
    "specforge": (
        [TORCH, "transformers==5.8.1", "accelerate", "safetensors", "pyyaml", "pydantic",
         "tqdm", "psutil", "numpy", "requests", "typing-extensions", "datasets", "triton"],
        ["--no-deps", "specforge==0.2.0"],
    ),
    "modelopt": (
        [TORCH, "nvidia-modelopt==0.47.0", "transformers==5.14.1", "accelerate", "safetensors",
         "requests"],
        [],
    ),
    "speculators": ([TORCH, "speculators==0.9.0"], []),
}  # fmt: skip
# speculators pulls torchvision and torchaudio built for another torch; transformers' image
# utilities import torchvision and fail on them, so they go (as the Makefile does for vLLM's venv)
UNINSTALL = {"speculators": ["torchvision", "torchaudio"]}


def venv(root: Path, name: str) -> Path:
    """The venv's python, built and installed unless it is already there."""
    python = root / name / "bin" / "python"
    if python.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", str(root / name)], check=True)
    first, second = VENVS[name]
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *first], check=True)
    if second:
        subprocess.run([*pip, *second], check=True)
    if UNINSTALL.get(name):
        uninstall = [str(python), "-m", "pip", "uninstall", "--quiet", "--yes"]
        subprocess.run([*uninstall, *UNINSTALL[name]], check=True)
    return python


def versions(python: Path, names: list[str]) -> str:
    """`name==version` of the packages that matter, as installed in the venv."""
    code = (
        "import importlib.metadata as m, sys\n"
        "print(', '.join(f'{n}=={m.version(n)}' for n in sys.argv[1:]))"
    )
    return subprocess.run(
        [str(python), "-c", code, *names], check=True, capture_output=True, text=True
    ).stdout.strip()


def run_worker(python: Path, script: str, work: Path) -> Path:
    out = work / "out"
    cmd = [str(python), str(DATA / "trainer_runs" / script), "--target", str(TARGET)]
    cmd += ["--prompts", str(PROMPTS), "--work", str(work), "--out", str(out)]
    subprocess.run(cmd, check=True)
    return out


def target_dims(config: dict) -> str:
    keys = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
            "num_key_value_heads", "vocab_size", "max_position_embeddings")  # fmt: skip
    return ", ".join(f"{k} {config[k]}" for k in keys)


def place(export: Path, dest: Path, target_config: dict, provenance: str) -> None:
    """The export as the trainer wrote it, the target's config.json it was trained against in
    `target/`, and the provenance note."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(export, dest)
    (dest / "target").mkdir()
    text = json.dumps(target_config, indent=2, sort_keys=True) + "\n"
    (dest / "target" / "config.json").write_text(text)
    (dest / "PROVENANCE.md").write_text(provenance)


def note(title: str, trainer: str, command: str, target: str, patched: str, facts: str) -> str:
    today = datetime.date.today().isoformat()
    return (
        f"# {title}\n\n"
        f"- **Trainer**: {trainer}\n"
        f"- **Written by**: `python data/make_trainer_samples.py` on {today}; the export "
        f"command:\n\n  ```\n  {command}\n  ```\n\n"
        f"- **Target**: {target}\n"
        f"- **Patched for CPU**: {patched}\n\n"
        f"## What the export holds\n\n{facts}\n"
    )


SPECFORGE_PATCH = (
    "`specforge/core/loss.py`'s `LogSoftmaxLoss` is a Triton kernel; it was replaced by the same "
    "file's torch reference `_compute_loss` (the `triton` wheel is installed only so the module "
    "imports). SpecForge 0.2.0 captures target states only through an SGLang server "
    "(`config/schema.py:54`), so the states were computed with transformers as SGLang captures "
    "them for SpecForge's default ids `[1, L//2-1, L-4]` = `[1, 3, 4]` "
    "(`algorithms/model_providers.py:204`; SGLang adds 1 and takes the state before that layer, "
    "Hugging Face's `hidden_states[id + 1]`). SpecForge itself installed with `--no-deps` over "
    "torch 2.13.0 (it pins torch 2.11.0 and sglang 0.5.14). The draft trained in float32 "
    "(`model.torch_dtype: float32` is one of SpecForge's settings); the exporter writes bf16 "
    "itself (`export/checkpoint_io.py:161`)."
)
MODELOPT_PATCH = (
    "`eagle_use_torch_compile: false`. The draft layer's `intermediate_size`, "
    "`num_attention_heads`, `num_key_value_heads` and `head_dim` were set to the target's: "
    "ModelOpt's defaults (14336, 32 heads of 128, `torch/speculative/eagle/default_config.py:26-44`) "
    "ignore the target and would make a 14 MB sample. Trained in float32 (bf16 parameters "
    "without a float32 copy round Adam's small steps on the norm weights away) and cast to the "
    "target's bf16 before the export. Nothing else was changed."
)


def specforge(python: Path, work: Path, out: Path, target_config: dict) -> None:
    export = run_worker(python, "specforge_run.py", work)
    trainer = f"SpecForge 0.2.0 ({versions(python, ['specforge', 'torch', 'transformers'])})"
    dims = f"`data/pair/target` ({target_dims(target_config)})"
    for to, facts in (("sglang", SPECFORGE_SGLANG), ("hf", SPECFORGE_HF)):
        command = f"specforge export --to {to} --checkpoint RUN/sample-step80 --draft-config "
        command += "draft_config.json --output-dir OUT" + (
            " --embedding-source TARGET" if to == "hf" else ""
        )
        title = f"specforge-0.2.0-{to}"
        text = note(title, trainer, command, dims, SPECFORGE_PATCH, facts)
        place(export / to, out / title, target_config, text)


def modelopt(python: Path, work: Path, out: Path, target_config: dict) -> None:
    export = run_worker(python, "modelopt_run.py", work)
    trainer = (
        f"NVIDIA ModelOpt 0.47.0 ({versions(python, ['nvidia-modelopt', 'torch', 'transformers'])})"
    )
    command = 'mtsp.convert(model, [("eagle", EAGLE3_DEFAULT_CFG["config"] + the CPU patch)]); '
    command += "export_speculative_decoding(model, export_dir=OUT)"
    cut = dict(target_config, num_hidden_layers=4)
    runs = (
        ("modelopt-0.47.0", "reduced", target_config, "`data/pair/target`", MODELOPT_REDUCED),
        ("modelopt-0.47.0-fullvocab", "fullvocab", cut,
         "`data/pair/target` cut to its first 4 decoder layers", MODELOPT_FULL),
    )  # fmt: skip
    for title, sub, cfg, what, facts in runs:
        text = note(title, trainer, command, f"{what} ({target_dims(cfg)})", MODELOPT_PATCH, facts)
        place(export / sub, out / title, cfg, text)


def speculators(python: Path, work: Path, out: Path, target_config: dict) -> None:
    """The converter on the SpecForge `--to sglang` export (checkpoint and config only), run from
    the repository root so the verifier's path it records is `data/pair/target`."""
    source = out / "specforge-0.2.0-sglang"
    given = work / "specforge-0.2.0-sglang"
    shutil.copytree(source, given, ignore=shutil.ignore_patterns("target", "*.md"))
    converted = work / "out"
    cmd = [str(python.parent / "speculators"), "convert", str(given), "--algorithm", "eagle3"]
    cmd += ["--verifier", "data/pair/target", "--output-path", str(converted)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run(cmd, check=True, cwd=DATA.parent, env=env)
    trainer = f"speculators 0.9.0 ({versions(python, ['speculators', 'torch', 'transformers'])})"
    command = (
        "speculators convert data/samples/specforge-0.2.0-sglang --algorithm eagle3 "
        "--verifier data/pair/target --output-path OUT"
    )
    dims = f"`data/pair/target` ({target_dims(target_config)}), as the verifier"
    patched = "nothing (`torchvision` and `torchaudio` removed from the venv: see the script)."
    title = "speculators-0.9.0-converter"
    text = note(title, trainer, command, dims, patched, SPECULATORS_CONVERTER)
    place(converted, out / title, target_config, text)


SPECFORGE_SGLANG = """\
- `midlayer.*`, `fc` (384 -> 128: 3 aux states), `norm`, `lm_head` (256 rows), `d2t`, `t2d`;
  no `embed_tokens`: the exporter drops every key containing `embed`
  (`specforge/export/to_sglang.py:85`) and requires `t2d` and `d2t` (`:38`).
- `config.json`: SpecForge's generated LlamaConfig (`training/model_loading.py:211-258`) saved by
  transformers 5.8.1: `dtype` (not `torch_dtype`), `rope_parameters` plus the top-level
  `rope_theta` mirrored by `export/checkpoint_io.py:56-60`; **no `eagle_config`, no aux ids**:
  the serving engine picks its own default. SpecForge trained on the outputs of layers `[1, 3, 4]`
  (`algorithms/model_providers.py:204`).
- `draft_vocab_size` 256: the generator's default is 32000 (`algorithms/eagle3/providers.py:185`),
  larger than this target's 512-token vocabulary, so the script sets it. `d2t` from SpecForge's
  `process_token_dict_to_mappings` (`data/preprocessing.py:720`): sorted target ids as offsets.
"""
SPECFORGE_HF = """\
- The same tensors as `specforge-0.2.0-sglang`, plus `embed_tokens.weight` (512 x 128), read
  from the target by `export/to_hf.py:92-115` (`--embedding-source`).
- **Mixed dtypes**: the exporter builds the draft in bf16 (`export/checkpoint_io.py:161`) and then
  writes the checkpoint's own tensors over it (`export/to_hf.py:115`, "trained keys win"), so a
  float32 run ships its trained weights in F32 beside the bf16 embedding (the SGLang export
  saves the bf16 model's state and is bf16 throughout).
- The same `config.json` (`dtype`, no aux ids).
"""
MODELOPT_REDUCED = """\
- `layers.0.*` (with `hidden_norm`), `fc` (384 -> 128), `norm`, `lm_head` (128 rows: the draft's
  own, `draft_vocab_size` 128 < 512), `d2t`; **no `t2d`, no `embed_tokens`**
  (`torch/export/plugins/hf_spec_export.py:49-65,167-180`).
- `d2t` from `calibrate_frequent_vocab` (`torch/speculative/utils.py:62-76`): draft id `i` is the
  `i`-th most frequent token, stored as `id - i`, so the targets are **not sorted** and some
  offsets are negative. Engines read `target = i + d2t[i]` in any order.
- `config.json`: `torch_dtype`, `rope_theta` top level, `eagle_config` with
  `eagle_aux_hidden_state_layer_ids` `[1, 3, 4]` (ModelOpt's default
  `sorted({1, L//2-1, L-4})`, `torch/speculative/plugins/hf_eagle.py:58-63`, outputs of those
  layers: forward hooks on `layers[i]`, `:402-406`) and ModelOpt's own fields.
- **YaRN injected at export**: `rope_scaling {"rope_type": "yarn", "factor": 32.0,
  "original_max_position_embeddings": 2048}` (`eagle_export_rope_scaling`'s default,
  `torch/speculative/config.py:380-381`, written when training used `rope_type: default`,
  `hf_spec_export.py:213-218`), next to the target's `max_position_embeddings` 256. The draft
  was trained with plain RoPE.
- Fields from ModelOpt's defaults, not the target's: `rms_norm_eps` 1e-05 (target 1e-06),
  `eos_token_id` 2 (target 0), `initializer_range` 0.01.
"""
MODELOPT_FULL = """\
- Full vocabulary (`draft_vocab_size` 512): no `d2t`, no `t2d`, and `lm_head` (512 x 128) is the
  **base model's head copied in** (`torch/export/plugins/hf_spec_export.py:174-176`).
- **Two aux states**: on a 4-layer target ModelOpt's default `sorted({1, L//2-1, L-4})` is
  `{1, 1, 0}` = `[0, 1]` (`torch/speculative/plugins/hf_eagle.py:58-63`), so `fc` takes
  `2·H` = 256 inputs (`plugins/modeling_eagle.py:60-61`) and
  `eagle_config.eagle_aux_hidden_state_layer_ids` is `[0, 1]`.
- Otherwise as `modelopt-0.47.0`: `layers.0.*`, `torch_dtype`, the injected YaRN.
"""
SPECULATORS_CONVERTER = """\
- The SpecForge `--to sglang` export's tensors with the prefix `midlayer.` renamed `layers.0.`
  (`convert/eagle/eagle3_converter.py:203-209`); `d2t` and `t2d` kept; no `embed_tokens` (the
  input had none, and the converter fetches none).
- **Floats in F32**: the converter casts the module to the input config's `torch_dtype`
  (`eagle3_converter.py:184`, `:223-225`), which SpecForge 0.2.0's config spells `dtype`
  (transformers 5), so the module's float32 stays and the bf16 weights are saved widened.
- `config.json`: `Eagle3Speculator` with `transformer_layer_config`, `draft_vocab_size` 256,
  `target_vocab_size` from `t2d`; **aux ids `null`** (the converter takes them only from
  `--algorithm-kwargs`); `norm_before_residual: false` (its default); `speculative_tokens` 3
  (`eagle3_converter.py:127`, hard-coded); the verifier recorded as `data/pair/target`. A
  `config.py` beside it (`auto_map` to `Eagle3SpeculatorConfig`).
- Trained on the outputs of layers `[1, 3, 4]` (SpecForge's default) = the states after
  `[2, 4, 5]` layers, vLLM's default for this 8-layer target, which is what vLLM captures when
  the config names no ids.
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venvs", type=Path, help="keep (or reuse) the venvs here")
    ap.add_argument("--out", type=Path, default=DATA / "samples")
    ap.add_argument("--only", nargs="+", choices=list(VENVS), default=list(VENVS),
                    help="these trainers only (the converter reads SpecForge's export in --out)")  # fmt: skip
    args = ap.parse_args()
    stages = {"specforge": specforge, "modelopt": modelopt, "speculators": speculators}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.venvs or Path(tmp) / "venvs"
        root.mkdir(parents=True, exist_ok=True)
        target_config = json.loads((TARGET / "config.json").read_text())
        for name in args.only:
            work = Path(tmp) / name
            work.mkdir()
            stages[name](venv(root, name), work, args.out, target_config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
