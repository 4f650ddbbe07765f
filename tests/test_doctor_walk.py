"""doctor shows every finding each of its checks emits: a walk over every finding code.

Each scenario is run through the checks on their own (`kit.inspect`, `kit.simulate`,
`kit.trace`, `kit.check_deployment`, `kit.analyze_logs`, offline acceptance) and through
`doctor` with the same inputs; every code a check emits must be in doctor's verdict (a check's
finding doctor dropped is the fault this guards against: the trace's TRAINED_FLAG_IGNORED once
was). Then every code the checks' modules can emit must have been walked, or be listed below
with the reason no scenario here reaches it, so a new finding cannot slip past the walk.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import deployment_scenarios as sc
import numpy as np
import pytest

import kit
from kit.verdict import diagnose
from tests.conftest import DATA, PAIR, ROOT

INCIDENT = DATA / "incident"
LOGS = [INCIDENT / "logs" / f"{n}.log" for n in ("before", "after-rename", "after-both-fixes")]
SG = "python -m sglang.launch_server"

# Each check and the modules whose findings it hands doctor.
MODULES = {
    "inspection": ["kit/checkpoint/inspection.py"],
    "load": ["kit/load/findings.py"],
    "trace": ["kit/tracing/capture.py"],
    "deployment": [
        "kit/deployment/configs.py",
        "kit/deployment/serving.py",
        "kit/deployment/tokens.py",
        "kit/deployment/parallel.py",
        "kit/deployment/quant.py",
        "kit/deployment/runner.py",
        "kit/deployment/targets.py",
        "kit/deployment/llamacpp.py",
        "kit/engines/sglang/serving.py",
        "kit/engines/vllm/serving.py",
    ],
    "acceptance": ["kit/acceptance/signatures.py", "kit/acceptance/analysis.py"],
    "offline": [
        "kit/offline_acceptance/deployment.py",
        "kit/offline_acceptance/aux_shift.py",
        "kit/offline_acceptance/result.py",
        "kit/offline_acceptance/wiring.py",
        "kit/tracing/positions.py",
    ],
}
# Codes no scenario of this walk reaches, and why: each is pinned by its own module's tests.
NOT_WALKED = {
    "CAPTURE_MODEL_DISAGREES": "doctor's own check (the engine's logged aux layers)",
    "FIX_EFFECT": "a before/after pair of runs, compared by notebook 4 (test_acceptance_analysis)",
    "FIX_NO_EFFECT": "as FIX_EFFECT",
    "NO_SPEEDUP": "a baseline log (--baseline-log), not part of a check's own inputs",
    "LOW_FIRST_POSITION": "needs the draft's validation step-0 accuracy (analyze(expected_step0))",
    "AUX_IDS_SHIFTED": "doctor ranks it first in tests/test_aux_shift.py (120 prompts a row)",
    "FIX_REFUSED": "a what-if row of offline --matrix; doctor runs no what-ifs",
    "OFFLINE_ACCEPTANCE": "the healthy row's summary: doctor's verdict and facts state it",
    "OFFLINE_NEAR_ZERO_ACCEPTANCE": "a determined near-zero row (tests/test_offline_measure.py); "
    "the bundled pair's floor faults leave the outcome undetermined instead",
    "LLAMACPP_SPECULATION_OFF": "a llama-server line: `kit deployment` reads it, doctor's launch "
    "reader takes the engines it models (tests/test_deployment_field.py)",
    "LLAMACPP_DRAFT_P_MIN_ZERO": "as LLAMACPP_SPECULATION_OFF",
}
# A trained flag whose module the release drops is named by the load replay as the module it
# discards (kit.load.findings.flags_ignored skips it there); the trace, without the weights,
# names the flag: doctor keeps the more specific of the two.
SUBSUMED = {"TRAINED_FLAG_IGNORED": {"INPUT_NORM_DISCARDED", "TRAINED_MODULE_SKIPPED"}}
# Replaced in doctor by design: the release is stated, with its evidence, on the verdict's first
# line (`Diagnosis.release`), not as a deployment finding.
STATED = {"LAUNCH_RELEASE_ASSUMED"}


def _sg(target: Path, draft: Path, *extra: str, algo: str = "EAGLE3") -> str:
    return (
        f"{SG} --model-path {target} --speculative-algorithm {algo} "
        f"--speculative-draft-model-path {draft} --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 " + " ".join(extra)
    )


def _vllm(target: Path, draft: Path, *extra: str, **spec) -> str:
    cfg = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3, **spec}
    return f"vllm serve {target} --speculative-config '{json.dumps(cfg)}' " + " ".join(extra)


def _scenarios(tmp: Path) -> list[dict]:
    """Inputs shaped like what users hold: the incident, each trainer's layout and export on
    several releases, and deployments with each launch-line and config fault."""
    target = sc.target(tmp / "target")
    spec = sc.speculators_draft(tmp / "spec", speculative_tokens=2)
    forge = sc.specforge_draft(tmp / "forge")
    vl = sc.vl_target(tmp / "vl")
    quant = sc.target(tmp / "quant", quantization_config={"quant_method": "fp8"})
    rope = sc.specforge_draft(tmp / "rope", rope_theta=10000.0, rope_scaling=None)
    short = sc.specforge_draft(tmp / "short", max_position_embeddings=2048)
    layouts_target = sc.target(tmp / "layouts-target", hidden_size=32, num_hidden_layers=32,
                               vocab_size=64, head_dim=8)  # fmt: skip
    tok = sc.tokenizer(tmp / "tok")
    out = [
        {"draft": INCIDENT / "kimi-k2.5" / "draft", "target_config": INCIDENT / "kimi-k2.5" /
         "target", "logs": LOGS, "launch": INCIDENT / "launch.sh", "engine": "sglang==0.5.10"},
        {"draft": PAIR / "draft", "target": PAIR / "target", "engine": "sglang==0.5.10",
         "num_prompts": 12},
        {"draft": forge, "target_config": target, "launch": _sg(target, forge, algo="EAGLE"),
         "engine": "sglang==0.5.10"},
        {"draft": spec, "target_config": quant, "launch": _vllm(quant, spec,
         "--quantization fp8 --max-model-len 200000", num_speculative_tokens=6),
         "engine": "vllm==0.32.0"},
        {"draft": rope, "target_config": vl, "launch": _sg(vl, rope, "--bogus-flag 1"),
         "engine": "sglang==0.5.23"},
        {"draft": short, "target_config": target, "launch": _sg(target, short,
         "--context-length 131072 --dtype float16 --tp-size x"), "engine": "sglang==0.5.12"},
        {"draft": forge, "target_config": target, "launch": f"vllm serve {target}",
         "engine": "vllm==0.11.2", "train_tokenizer": tok},
    ]  # fmt: skip
    for layout in sorted((DATA / "layouts").iterdir()):
        if layout.name == "targets":
            continue
        for engine in ("sglang==0.4.8", "sglang==0.5.10", "vllm==0.10.2", "vllm==0.32.0",
                       "lmdeploy==0.11.0", "tensorrt_llm==1.2.0rc2"):  # fmt: skip
            out.append({"draft": layout, "target_config": layouts_target, "engine": engine})
    for sample in sorted((DATA / "samples").glob("*-*")):
        if (sample / "target").is_dir():
            for engine in ("sglang==0.5.10", "vllm==0.32.0"):
                out.append({"draft": sample, "target_config": sample / "target", "engine": engine})
    out += _checkpoint_faults(tmp, layouts_target) + _deployment_faults(tmp, target, vl)
    out += _field_faults(tmp, target) + _log_faults(tmp) + _field_logs(tmp)
    broken = tmp / "broken"
    shutil.copytree(DATA / "layouts" / "specforge", broken)
    cfg = json.loads((broken / "config.json").read_text())
    cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [1, 15, 40],
                           "use_aux_hidden_state": False}  # fmt: skip
    (broken / "config.json").write_text(json.dumps(cfg))
    out.append({"draft": broken, "target_config": layouts_target, "engine": "sglang==0.5.10",
                "logs": LOGS[:1]})  # fmt: skip
    return out


def _checkpoint_faults(tmp: Path, target: Path) -> list[dict]:
    """Checkpoints a trainer or a converter gets wrong, written as real safetensors files."""
    from draft_headers import build
    from tiny_layouts import FLAT, LAYER, speculators_multilayer, write

    specforge = {"midlayer." + k: v for k, v in LAYER.items()}
    specforge |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32)}
    no_d2t = write(tmp / "no-d2t", specforge | {"t2d": (64,)}, FLAT)
    absolute = write(tmp / "absolute", specforge | {"d2t": (16,), "t2d": (64,)}, FLAT)
    _absolute_d2t(absolute / "model.safetensors")
    extra = write(tmp / "extra", specforge | {"d2t": (16,), "verifier_lm_head.weight": (64, 32)},
                  FLAT)  # fmt: skip
    shapes = write(tmp / "shapes", specforge | {"d2t": (16,)}, FLAT | {"intermediate_size": 48})
    tied = write(tmp / "tied", specforge | {"d2t": (16,)}, FLAT | {"tie_word_embeddings": True})
    spec_cfg = json.loads((DATA / "samples" / "speculators-0.9.0-tiny" / "config.json").read_text())
    sample_keys = {"layers.0." + k: v for k, v in LAYER.items()}
    sample_keys |= {"fc.weight": (32, 96), "norm.weight": (32,), "lm_head.weight": (16, 32),
                    "d2t": (16,), "t2d": (64,), "embed_tokens.weight": (64, 32)}  # fmt: skip
    inorm = write(tmp / "inorm", sample_keys | {"input_norm.weight": (96,)},
                  spec_cfg | {"norm_before_fc": True})  # fmt: skip
    fc_norm = write(tmp / "fc-norm", sample_keys | {f"fc_norm.{i}.weight": (32,) for i in range(3)},
                    spec_cfg | {"fc_norm": True})  # fmt: skip
    bare = write(tmp / "bare", specforge | {"d2t": (16,)}, FLAT)
    (bare / "config.json").unlink()
    mla = {"q_lora_rank": 24, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
           "v_head_dim": 8}  # an MLA draft under the Llama draft's name  # fmt: skip
    mla_as_llama = build(tmp / "mla-as-llama", FLAT | mla, "modelopt")
    multi = speculators_multilayer(tmp / "multi")
    return [
        {"draft": no_d2t, "target_config": target, "engine": "vllm==0.32.0"},
        {"draft": absolute, "target_config": target, "engine": "sglang==0.5.10"},
        {"draft": extra, "target_config": target, "engine": "sglang==0.5.10"},
        {"draft": shapes, "target_config": target, "engine": "sglang==0.5.10"},
        {"draft": tied, "target_config": target, "engine": "sglang==0.5.10"},
        {"draft": inorm, "target_config": target, "engine": "vllm==0.18.0"},
        {"draft": fc_norm, "target_config": target, "engine": "sglang==0.5.10"},
        {"draft": multi, "target_config": target, "engine": "sglang==0.5.12"},
        {"draft": bare, "engine": "sglang==0.5.10"},
        {"draft": mla_as_llama, "target_config": target, "engine": "sglang==0.5.23"},
        {"draft": DATA / "samples" / "speculators-0.9.0-tiny", "target_config": target,
         "engine": "vllm==0.32.0"},
    ]  # fmt: skip


def _absolute_d2t(file: Path) -> None:
    """d2t written as target ids (an `arange`) where every engine reads offsets."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(file)
    tensors["d2t"] = tensors["d2t"].new_tensor(list(range(0, 32, 2)))
    save_file(tensors, str(file))


def _deployment_faults(tmp: Path, target: Path, vl: Path) -> list[dict]:
    """Launch lines and configs the field got wrong."""
    window = {"model_type": "qwen3", "layer_types": ["sliding_attention"], "sliding_window": 2048}
    windowed = sc.speculators_draft(tmp / "window", **window)
    forge = sc.specforge_draft(tmp / "forge2", vocab_size=1200)
    served = sc.target(tmp / "served")
    sc.tokenizer(served, template=None)
    templated = sc.target(tmp / "templated")
    sc.tokenizer(templated)
    thinking = sc.tokenizer(tmp / "thinking", template=sc.CHATML_THINKING)
    unknown = sc.target(tmp / "unknown", architectures=["FooForCausalLM"], model_type="foo")
    kimi = INCIDENT / "kimi-k2.5"
    custom = tmp / "custom-ids"  # SpecForge's layout with ids other than the engine's defaults
    shutil.copytree(DATA / "layouts" / "specforge", custom)
    cfg = json.loads((custom / "config.json").read_text())
    cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [1, 10, 28]}
    (custom / "config.json").write_text(json.dumps(cfg))
    dp = "SGLANG_ENABLE_SPEC_V2=1 " + _sg(target, forge, "--enable-dp-attention --dp-size 2")
    loose = _sg(target, forge, "--speculative-accept-threshold-acc 0.5")
    return [
        {"draft": windowed, "target_config": target, "launch": _vllm(target, windowed),
         "engine": "vllm==0.24.0"},
        {"draft": forge, "target_config": target, "launch": dp, "engine": "sglang==0.5.6"},
        {"draft": forge, "target_config": target, "launch": loose, "engine": "sglang==0.5.10"},
        {"draft": forge, "target_config": target, "launch": "VLLM_USE_V2_MODEL_RUNNER=1 " +
         _vllm(target, forge, "--temperature 0.7"), "engine": "vllm==0.12.0"},
        {"draft": forge, "target_config": served, "launch": _sg(served, forge),
         "engine": "sglang==0.5.10", "train_tokenizer": sc.tokenizer(tmp / "chatml")},
        {"draft": forge, "target_config": target, "launch": _vllm(target, forge),
         "engine": "vllm==0.11.0"},
        {"draft": forge, "target_config": templated, "launch": _sg(templated, forge),
         "engine": "sglang==0.5.10", "train_tokenizer": thinking},
        {"draft": forge, "target_config": unknown, "engine": "sglang==0.5.10"},
        {"draft": kimi / "draft", "target_config": kimi / "target", "engine": "sglang==0.5.9"},
        {"draft": custom, "target_config": sc.target(
         tmp / "layouts-target-2", hidden_size=32, num_hidden_layers=32, vocab_size=64,
         head_dim=8), "launch": _sg(target, custom), "engine": "sglang==0.5.10",
         "cuda_graph": True},
        {"draft": forge, "target_config": target, "launch": _sg(target, forge)},
    ]  # fmt: skip


def _field_faults(tmp: Path, target: Path) -> list[dict]:
    """The deployments the field reported in 2026 (tests/test_deployment_field.py has each with
    its healthy control)."""
    from safetensors.numpy import save_file

    draft = sc.specforge_draft(tmp / "field-draft")
    save_file({"fc.weight": np.zeros((64, 192), np.float32), "d2t": np.zeros(200, np.int64)},
              str(draft / "model.safetensors"))  # fmt: skip
    gemma = sc.vl_target(tmp / "gemma", model_type="gemma3_text")
    _config(gemma, model_type="gemma3")
    quarot = sc.target(tmp / "quarot")
    (quarot / "quant_model_description.json").write_text(json.dumps(
        {"model_quant_type": "W8A8", "optional": {"quarot": {"rotation_map": {}}}}))  # fmt: skip
    llama4 = sc.vl_target(tmp / "llama4", model_type="llama4_text")
    _config(llama4, model_type="llama4", architectures=["Llama4ForConditionalGeneration"])
    hybrid = sc.target(tmp / "hybrid", model_type="qwen3_next")
    paged = sc.target(
        tmp / "paged",
        num_key_value_heads=4,
        num_attention_heads=12,
        hidden_size=192,
        layer_types=["sliding_attention", "full_attention"] * 4,
    )
    speculators = sc.speculators_draft(
        tmp / "converted",
        hidden_size=256,
        num_attention_heads=32,
        head_dim=8,
        num_key_value_heads=8,
    )
    save_file(
        {
            f"layers.0.self_attn.{p}_proj.weight": np.zeros((256, 512), np.float32)
            for p in ("q", "k", "v")
        },
        str(speculators / "model.safetensors"),
    )
    v2 = "VLLM_USE_V2_MODEL_RUNNER=1 " + _vllm(target, draft, parallel_drafting=True)
    return [
        {"draft": draft, "target_config": target, "engine": "sglang==0.5.10", "launch": _sg(
         target, draft, "--pp-size 2 --quantization awq --kv-cache-dtype fp8_e4m3")},
        {"draft": draft, "target_config": gemma, "launch": _sg(gemma, draft, "--tp 2"),
         "engine": "sglang==0.5.11"},
        {"draft": draft, "target_config": quarot, "engine": "vllm==0.33.0"},
        {"draft": draft, "target_config": llama4, "engine": "tensorrt_llm==1.2.0rc2"},
        {"draft": draft, "target_config": hybrid, "engine": "tensorrt_llm==1.2.0rc2"},
        {"draft": draft, "target_config": paged, "engine": "vllm==0.14.0"},
        {"draft": draft, "target_config": target, "launch": v2, "engine": "vllm==0.33.0"},
        {"draft": speculators, "target_config": target, "engine": "vllm==0.32.0"},
    ]  # fmt: skip


def _config(folder: Path, **over) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(cfg | over))


def _field_logs(tmp: Path) -> list[dict]:
    """llama.cpp's ratio under full-length drafts, TensorRT-LLM's accept length falling with
    the batch, vLLM's FP8 KV cache at scale 1.0 (tests/test_acceptance_field.py)."""
    llama = tmp / "llama-server.log"
    llama.write_text("".join(
        f"slot print_timing: id  1 | task {t} | draft acceptance = 0.29825 (   51 accepted /   171 "
        "generated), mean acceptance length =  4.90, acceptance rate per position = (0.805, "
        "0.632, 0.483)\n" for t in range(4)))  # fmt: skip
    stats = tmp / "stats.jsonl"
    rows = []
    for i in range(80):
        batch = 1 + (i % 8) * 9
        accepted = round((1.8 - 1.1 * batch / 64) * batch)
        rows.append(
            {
                "iter": i,
                "specDecodingStats": {
                    "numDraftTokens": 3 * batch,
                    "numAcceptedTokens": accepted,
                    "numRequestsWithDraftTokens": batch,
                    "acceptanceLength": (accepted + batch) / batch,
                },
            }
        )
    stats.write_text("".join(json.dumps(r) + "\n" for r in rows))
    vllm = tmp / "vllm.log"
    vllm.write_text(
        "(EngineCore_DP0 pid=8) WARNING 10-22 10:25:40 [kv_cache.py:165] Using KV cache scaling "
        "factor 1.0 for fp8_e4m3. If this is unintended, verify that k/v_scale scaling factors "
        "are properly set in the checkpoint.\n" + "".join(
        f"(APIServer pid=7) INFO 10-22 10:27:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean "
        "acceptance length: 1.79, Accepted throughput: 10.00 tokens/s, Drafted throughput: 40.00 "
        "tokens/s, Accepted: 237 tokens, Drafted: 900 tokens, Per-position acceptance rate: "
        "0.500, 0.200, 0.090, Avg Draft acceptance rate: 26.3%\n" for s in range(3)))  # fmt: skip
    draft = sc.specforge_draft(tmp / "logs-draft")  # a config: no release to load weights in
    return [
        {"draft": draft, "logs": [llama]},
        {"draft": draft, "logs": [stats]},
        {"draft": draft, "logs": [vllm], "engine": "vllm==0.11.0"},
    ]


DECODE = (
    "[2026-01-01 00:00:{s:02d}] Decode batch, #running-req: 1, #token: 300, token usage: 0.00, "
    "accept len: {al:.2f}, accept rate: {ar:.2f}, cuda graph: True, gen throughput (token/s): "
    "90.00, #queue-req: 0\n"
)


def _log(path: Path, lens: list[float], extra: str = "") -> Path:
    path.write_text("".join(DECODE.format(s=i, al=a, ar=a / 4) for i, a in enumerate(lens)) + extra)
    return path


def _log_faults(tmp: Path) -> list[dict]:
    """Server logs with each acceptance signature, SGLang 0.5.10's decode line (D = 4)."""
    near = _log(tmp / "near.log", [1.03] * 30)
    decay = _log(tmp / "decay.log", [3.2 - 0.06 * i for i in range(30)])
    capped = _log(tmp / "capped.log", [4.6] * 30)
    garbled = _log(tmp / "garbled.log", [2.5] * 30, "[2026-01-01 00:01:00] Decode batch, "
                   "#running-req: 1, accept len: nan%, accept rate: ?\n" * 3)  # fmt: skip
    empty = tmp / "empty.log"
    empty.write_text("[2026-01-01 00:00:00] Prefill batch, #new-seq: 1, #new-token: 12\n")
    draft = PAIR / "draft"
    return [
        {"draft": draft, "logs": [near, decay], "engine": "sglang==0.5.10", "num_draft_tokens": 4},
        {"draft": draft, "logs": [capped, garbled], "engine": "sglang==0.5.10",
         "num_draft_tokens": 4, "expected_accept_len": 3.5},
        {"draft": draft, "logs": [empty, LOGS[0]], "engine": "sglang==0.5.23"},
    ]  # fmt: skip


def _alone(s: dict) -> dict[str, set[str]]:
    """Each check on its own, as its command runs it."""
    engine, draft = s.get("engine"), s["draft"]
    config = s.get("target_config") or s.get("target")
    found: dict[str, set[str]] = {}
    if any((Path(draft) / n).is_file() for n in ("model.safetensors", "pytorch_model.bin")):
        found["inspection"] = {f.code for f in kit.inspect(draft).findings}
        if (Path(draft) / "config.json").is_file():
            found["load"] = {f.code for f in kit.simulate(draft, engine).findings}
    if config and engine:
        traced = kit.trace(draft, config, engine, cuda_graph=s.get("cuda_graph", False))
        found["trace"] = {f.code for f in traced.findings}
    if s.get("launch") or config:
        report = kit.check_deployment(
            s.get("launch"), draft=draft, target_config=config, engine=engine,
            train_tokenizer=s.get("train_tokenizer"),
        )  # fmt: skip
        found["deployment"] = {f.code for f in report.findings}
    if s.get("logs"):
        report = kit.analyze_logs(
            s["logs"], engine=engine, num_draft_tokens=s.get("num_draft_tokens"),
            expected_accept_len=s.get("expected_accept_len"),
        )  # fmt: skip
        found["acceptance"] = {f.code for f in report.findings}
    if s.get("target"):
        from kit.offline_acceptance.prompts import default_prompts_file, load_prompts

        prompts = load_prompts(default_prompts_file(Path(s["target"])))[: s["num_prompts"]]
        row = kit.offline(
            s["target"], draft, engine, prompts=prompts, progress=False, count_as=engine
        )
        found["offline"] = {f.code for f in row.findings}
    return found


# What doctor reconciles, by design: a log proves the server ran, so a config the release
# refuses as saved is one it did not serve (kit.load.findings.reconcile), and the keys are judged
# as it loads them once the config is rewritten.
RECONCILED = {"UNSUPPORTED_CONFIG": "CONFIG_NOT_SERVED"}


@pytest.fixture(scope="module")
def walked(tmp_path_factory) -> dict[str, set[str]]:
    tmp = tmp_path_factory.mktemp("walk")
    seen: dict[str, set[str]] = {}
    for s in _scenarios(tmp):
        alone = _alone(s)
        args = {k: v for k, v in s.items() if k not in ("draft", "cuda_graph")}
        report = diagnose(s["draft"], **args)
        doctor = {f.code for f in report.findings}
        for check, codes in alone.items():
            if s.get("logs"):
                codes = {RECONCILED.get(c, c) for c in codes}
            if codes & STATED:
                assert report.release.basis == "evidence", s  # said on the first line instead
            missing = {c for c in codes - doctor - STATED if not SUBSUMED.get(c, set()) & doctor}
            assert not missing, f"doctor drops {check}'s {sorted(missing)} on {s}"
            seen.setdefault(check, set()).update(codes)
        # offline in doctor is the deployment's row and more (the aux-id shift, the chat gap)
        seen.setdefault("offline", set()).update(f.code for f in report.checks.get("offline", []))
    return seen


def _emitted(paths: list[str]) -> set[str]:
    codes: set[str] = set()
    for path in paths:
        text = (ROOT / path).read_text()
        codes |= set(re.findall(r'(?:code=|CODE = )"([A-Z0-9_]+)"', text))
    return codes


@pytest.mark.slow
def test_doctor_keeps_every_finding_of_every_check(walked):
    assert set(walked) >= set(MODULES)


@pytest.mark.slow
@pytest.mark.parametrize("check", list(MODULES))
def test_every_code_a_check_can_emit_is_walked(walked, check):
    walked_all = set().union(*walked.values())
    unreached = _emitted(MODULES[check]) - walked_all - set(NOT_WALKED)
    assert not unreached, f"{check}: no scenario reaches {sorted(unreached)}"
