"""The trainers' own exports, read right: SpecForge 0.2.0 (`specforge export --to sglang` and
`--to hf`), NVIDIA ModelOpt 0.47.0 (`export_speculative_decoding`) and the speculators 0.9.0
converter (`speculators convert --algorithm eagle3`, on SpecForge's export), as written by
`data/make_trainer_samples.py` into data/samples/ (each folder's PROVENANCE.md says how).

What each trainer writes, with its file:line, is in docs/conventions.md; the engine rules the
expectations below come from are in docs/engines.md."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from tiny_layouts import DATA

import kit
from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.checkpoint.formats import detect_format
from kit.findings import Severity

SAMPLES = DATA / "samples"
SF_SGLANG, SF_HF = SAMPLES / "specforge-0.2.0-sglang", SAMPLES / "specforge-0.2.0-hf"
MO, MO_FULL = SAMPLES / "modelopt-0.47.0", SAMPLES / "modelopt-0.47.0-fullvocab"
CONVERTER = SAMPLES / "speculators-0.9.0-converter"
EXPORTS = [SF_SGLANG, SF_HF, MO, MO_FULL, CONVERTER]
H = 128  # the bundled target's hidden size, which every sample's draft shares


def tensors(folder) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def codes(findings) -> dict[str, object]:
    return {f.code: f for f in findings}


@pytest.mark.parametrize(
    ("folder", "name", "trainer"),
    [
        (SF_SGLANG, "specforge", "--to sglang"),
        (SF_HF, "specforge-hf", "--to hf"),
        (MO, "modelopt-layers", "ModelOpt"),
        (MO_FULL, "modelopt-layers", "ModelOpt"),
        (CONVERTER, "speculators-converter", "convert"),
    ],
)
def test_the_trainer_is_named(folder, name, trainer):
    """Each export is told apart by what its trainer writes, every claim holding."""
    guess = detect_format(open_checkpoint(folder), load_draft_config(folder))
    assert guess.candidates == (name,)
    assert trainer in guess.description
    assert guess.confidence == 1.0


@pytest.mark.parametrize("folder", EXPORTS, ids=lambda p: p.name)
def test_inspection_has_no_false_finding(folder):
    """Every tensor read whole: the trained norms, the vocabulary maps, and nothing above info
    (a missing embed_tokens is shared with the target, which is how these trainers ship) but
    the one thing SpecForge's HF export really does to a float32 run: its trained F32 tensors
    beside the bf16 embedding it builds (`export/to_hf.py:115`)."""
    report = kit.inspect(folder, stats="full")
    found = codes(report.findings)
    expected = {"MIXED_DTYPES"} if folder == SF_HF else set()
    assert {c for c, f in found.items() if f.severity >= Severity.WARNING} == expected
    assert set(found) - expected <= {"EMBED_TOKENS_MISSING"}
    if folder == SF_HF:
        dtypes = {t.dtype for t in open_checkpoint(folder).tensors.values()}
        assert {"BF16", "F32"} <= dtypes and "F32" in found["MIXED_DTYPES"].title


def test_modelopt_d2t_is_frequency_ordered_and_valid():
    """ModelOpt numbers draft ids by frequency (`mapping[i] = idx - i`): unsorted targets,
    negative offsets, each draft id still one distinct target id inside the vocabulary."""
    d2t = tensors(MO)["d2t"]
    targets = torch.arange(d2t.numel()) + d2t
    assert bool((d2t < 0).any())
    assert not bool((targets[1:] > targets[:-1]).all())
    assert targets.unique().numel() == d2t.numel() and int(targets.min()) >= 0
    assert "D2T_INVALID" not in codes(kit.inspect(MO, stats="full").findings)


def _with_d2t(tmp_path, change) -> object:
    """The ModelOpt export with its d2t changed by `change(d2t)`."""
    folder = tmp_path / "changed"
    shutil.copytree(MO, folder)
    state = tensors(MO)
    state["d2t"] = change(state["d2t"].clone())
    save_file(state, str(folder / "model.safetensors"))
    return folder


def _out_of_range(d2t):
    d2t[3] = 512 - 3  # draft id 3 -> target 512, one past the vocabulary
    return d2t


def _duplicate(d2t):
    d2t[5] = d2t[4] + 4 - 5  # draft id 5 -> the target of draft id 4
    return d2t


@pytest.mark.parametrize(
    ("change", "fault"),
    [(_out_of_range, "OUT_OF_RANGE"), (_duplicate, "FEW_TARGETS")],
)
def test_a_broken_frequency_ordered_d2t_is_still_caught(tmp_path, change, fault):
    """Order is free, but a target outside the vocabulary or a target two draft ids share is
    still a map engines read wrong."""
    found = codes(kit.inspect(_with_d2t(tmp_path, change), stats="full").findings)
    assert found["D2T_INVALID"].severity is Severity.ERROR
    assert fault in found["D2T_INVALID"].data["faults"]


def test_specforge_writes_dtype_both_maps_and_embed_only_for_hf():
    """transformers 5.8.1's `dtype` spelling, d2t and t2d in both exports, embed_tokens only
    in the HF one (the target's own rows), and no aux ids in either config."""
    sglang, hf = tensors(SF_SGLANG), tensors(SF_HF)
    for folder in (SF_SGLANG, SF_HF):
        cfg = load_draft_config(folder)
        assert "torch_dtype" not in cfg.raw and cfg.raw["dtype"] == "bfloat16"
        assert cfg.dtype == "bfloat16" and cfg.provenance["dtype"] == "dtype"
        assert cfg.aux_layer_ids is None and "eagle_config" not in cfg.raw
    assert {"d2t", "t2d"} <= set(sglang) and {"d2t", "t2d"} <= set(hf)
    assert "embed_tokens.weight" not in sglang
    with safe_open(str(DATA / "pair" / "target" / "model.safetensors"), "pt") as f:
        assert torch.equal(hf["embed_tokens.weight"], f.get_tensor("model.embed_tokens.weight"))
    assert set(hf) - set(sglang) == {"embed_tokens.weight"}


def test_modelopt_full_vocabulary_ships_the_target_head():
    """With the full vocabulary ModelOpt copies the base model's lm_head in, and writes no d2t,
    t2d or embed_tokens; every engine that loads the draft loads that head."""
    state = tensors(MO_FULL)
    assert not {"d2t", "t2d", "embed_tokens.weight"} & set(state)
    with safe_open(str(DATA / "pair" / "target" / "model.safetensors"), "pt") as f:
        assert torch.equal(state["lm_head.weight"], f.get_tensor("lm_head.weight"))
    for release in ("sglang==0.5.23", "vllm==0.33.0"):
        report = kit.simulate(MO_FULL, release)
        assert report.outcome("lm_head.weight").outcome.value == "loaded", release


# fc width each release builds for ModelOpt's two deduplicated aux states (ids [0, 1] on a
# 4-layer target): (fc inputs built, what the draft is fed). 3·H before SGLang 0.5.12, vLLM
# 0.24.0 and in LMDeploy: the 2·H weight does not fit and the server does not start.
FC_BUILT = {
    "sglang==0.5.10": (3 * H, "crash"),
    "sglang==0.5.12": (2 * H, "aux_concat"),
    "sglang==0.5.23": (2 * H, "aux_concat"),
    "vllm==0.11.2": (3 * H, "crash"),
    "vllm==0.18.0": (3 * H, "crash"),
    "vllm==0.33.0": (2 * H, "aux_concat"),
    "lmdeploy==0.18.0": (3 * H, "crash"),
}


@pytest.mark.parametrize("release", FC_BUILT)
def test_deduplicated_aux_ids_against_each_release_fc(release):
    """The draft was trained on 2 states (fc.weight is [128, 256]); the trace says what width
    each release builds fc for and whether the hand-over crashes."""
    assert tuple(tensors(MO_FULL)["fc.weight"].shape) == (H, 2 * H)
    cfg = load_draft_config(MO_FULL)
    assert cfg.aux_layer_ids == [0, 1] and cfg.num_aux == 2
    trace = kit.trace(MO_FULL, MO_FULL / "target" / "config.json", release).capture
    assert trace.trained_layers == [1, 2]
    assert (trace.fc_in_features, str(trace.feeds)) == FC_BUILT[release]
    if FC_BUILT[release][1] == "crash":
        found = codes(
            kit.doctor(MO_FULL, target_config=MO_FULL / "target", engine=release).findings
        )
        assert found["STARTUP_CRASH"].severity is Severity.ERROR
        assert "fc.weight" in found["STARTUP_CRASH"].title


def test_vllm_reads_modelopt_ids_one_layer_early():
    """vLLM 0.33.0 builds fc for 2 states but reads ModelOpt's output-of-layer ids verbatim:
    it hands over the states after [0, 1] layers instead of [1, 2]."""
    found = codes(
        kit.doctor(MO_FULL, target_config=MO_FULL / "target", engine="vllm==0.33.0").findings
    )
    data = found["AUX_LAYER_OFFSET"].data
    assert (data["trained"], data["captured"]) == ([1, 2], [0, 1])
    assert data["cost"] == {"measured": False}  # a trace alone cannot price it


@pytest.mark.parametrize(
    "release",
    ["sglang==0.5.10", "sglang==0.5.23", "vllm==0.11.2", "vllm==0.33.0", "lmdeploy==0.18.0",
     "tensorrt_llm==1.2.0rc2"],
)  # fmt: skip
def test_specforge_without_aux_ids_gets_the_engine_default(release):
    """SpecForge's config names no ids: each engine captures its default, the states after
    [2, 4, 5] layers of the 8-layer target, which are SpecForge's own default outputs
    [1, 3, 4] (+1): said as information, with both sources. LMDeploy refuses the
    `LlamaForCausalLMEagle3` config itself (docs/engines.md), and says so; its capture is traced
    on the config as rewritten for it."""
    report = kit.doctor(SF_SGLANG, target_config=SF_SGLANG / "target", engine=release)
    found = codes(report.findings)
    note = found["AUX_IDS_DEFAULT"]
    assert note.severity is Severity.INFO
    assert note.data == {"trained": [2, 4, 5], "captured": [2, 4, 5]}
    assert any("SpecForge" in e and "[1, 3, 4]" in e for e in note.evidence)
    errors = {f.code for f in report.findings if f.severity >= Severity.ERROR}
    assert errors == ({"UNSUPPORTED_CONFIG"} if release.startswith("lmdeploy") else set())


def test_named_ids_are_not_called_defaulted():
    """A config that names its ids is judged by them (AUX_LAYER_OFFSET and its kin), never as
    left to the engine."""
    report = kit.doctor(MO, target_config=MO / "target", engine="sglang==0.5.23")
    assert "AUX_IDS_DEFAULT" not in codes(report.findings)
    assert report.facts["fc_applied"] is True


def test_injected_yarn_against_the_served_context():
    """ModelOpt's export-time YaRN on a draft trained with plain RoPE: named as ModelOpt's, with
    the served context set against the YaRN's original window, in and past it."""
    inside = kit.check_deployment(draft=MO, target_config=MO / "target", engine="sglang==0.5.23")
    f = codes(inside.findings)["ROPE_SCALING_MISMATCH"]
    assert "ModelOpt injected at export" in f.title and f.severity is Severity.WARNING
    assert any("served context 256" in e and "within the 2048" in e for e in f.evidence)
    line = (
        f"python -m sglang.launch_server --model-path {MO / 'target'} --speculative-algorithm "
        f"EAGLE3 --speculative-draft-model-path {MO} --context-length 8192"
    )
    past = kit.check_deployment(
        line, draft=MO, target_config=MO / "target", engine="sglang==0.5.23"
    )
    f = codes(past.findings)["ROPE_SCALING_MISMATCH"]
    assert any("served context 8192" in e and "past the original 2048" in e for e in f.evidence)
    assert any("65536" in e for e in f.evidence)


def test_the_converter_renames_only_the_layer_prefix_and_widens_to_f32():
    """speculators 0.9.0 renames `midlayer.` to `layers.0.` and keeps d2t / t2d
    (`convert/eagle/eagle3_converter.py:203-209`); it casts to the input's `torch_dtype`, which
    SpecForge's transformers-5 config spells `dtype`, so the weights are saved in F32."""
    given, converted = tensors(SF_SGLANG), tensors(CONVERTER)
    assert {k.replace("midlayer.", "layers.0.") for k in given} == set(converted)
    assert (
        converted["fc.weight"].dtype == torch.float32 and given["fc.weight"].dtype == torch.bfloat16
    )
    assert torch.equal(converted["fc.weight"], given["fc.weight"].float())
    cfg = load_draft_config(CONVERTER)
    assert cfg.source == "speculators" and cfg.aux_layer_ids is None
