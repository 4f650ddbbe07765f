"""The draft configs the trainers publish for real models (data/published/, each cited in its
README), built at test time as header-only drafts in their trainer's layout (real shapes, the
data a hole on disk: tests/draft_headers.py), judged by every release of every engine the kit
models.

What each engine builds for a name is stated here on its own, from the engines' registries as
read in their releases (the oracle), and the kit must agree with it on every draft and release:
a name the release does not register is a refusal whose fix names the class it registers for the
draft's shape, or the first release that has one; a registered name of the draft's own shape is
never refused and never a class mismatch; a registered name of another shape is a class
mismatch. And `kit fix` on each release's newest one either writes a draft the release builds,
or says in one line why it cannot.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from draft_headers import build
from packaging.version import Version
from tiny_layouts import DATA

from kit.checkpoint.config import load_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.engines import RELEASES, all_releases
from kit.errors import KitError
from kit.findings import Severity
from kit.load.replay import simulate_keys
from kit.load.rewrite import plan_fix

PUBLISHED = DATA / "published"
LAYOUT = {"specforge": "specforge", "modelopt": "modelopt", "eagle": "eagle",
          "speculators": "eagle"}  # the speculators research configs train EAGLE's way  # fmt: skip
CONFIGS = sorted(PUBLISHED.glob("*/*.json"))

# The oracle: (the name each engine looks up for a config's architecture) -> (first release
# holding it, the shape it builds). vLLM renames a name that neither starts nor ends with Eagle3
# (0.10.1.1 transformers_utils/configs/eagle.py:56-61), LMDeploy's Llama builder renames the EAGLE
# name (configurations/llama.py:11,21); TensorRT-LLM's one-model mode builds its Llama draft
# whatever the name (modeling_speculative.py:479-482).
REGISTERED = {
    "sglang": {"LlamaForCausalLMEagle3": ("0.4.4.post2", "llama"),  # models/llama_eagle3.py
               "Eagle3DeepseekV2ForCausalLM": ("0.5.12", "mla")},  # models/kimi_k25_eagle3.py
    "vllm": {"LlamaForCausalLMEagle3": ("0.10.2", "llama"),  # models/registry.py:283 (0.10.2)
             "Eagle3LlamaForCausalLM": ("0.9.2", "llama"),
             "Eagle3DeepseekV2ForCausalLM": ("0.18.0", "mla")},  # :558 (0.18.0)
    "lmdeploy": {"Eagle3LlamaForCausalLM": ("0.11.0", "llama"),
                 "Eagle3DeepseekV2ForCausalLM": ("0.18.0", "mla")},  # module_map.py:334
    "tensorrt_llm": {"*": ("1.2.0rc2", "llama")},
}  # fmt: skip
# The shape of each published draft, from its trainer's code: SpecForge's GptOss and Qwen3-MoE
# drafts put a routed MLP in the draft layer (specforge/modeling/draft/gpt_oss_eagle.py,
# qwen3_moe_eagle.py); ModelOpt's Kimi-K2 template is DeepSeek's MLA.
SHAPE = {"gpt-oss-20B-eagle3": "moe", "qwen3-30B-A3B-eagle3-moe-draft": "moe",
         "kimi-k2-mla-template": "mla"}  # fmt: skip


def looked_up(engine: str, arch: str, version: Version) -> str:
    if engine == "vllm" and not (arch.startswith("Eagle3") or arch.endswith("Eagle3")):
        return "Eagle3" + arch
    if engine == "vllm" and version < Version("0.10.1.1") and not arch.startswith("Eagle3"):
        return "Eagle3" + arch
    if engine == "lmdeploy" and arch == "LlamaForCausalLM":
        return "Eagle3LlamaForCausalLM"
    return "*" if engine == "tensorrt_llm" else arch


def registered(engine: str, name: str, version: Version) -> str | None:
    """The shape the release builds under `name`, or None."""
    first, shape = REGISTERED[engine].get(name, (None, None))
    return shape if first and version >= Version(first) else None


def first_release_for(engine: str, shape: str) -> str | None:
    firsts = [Version(f) for f, s in REGISTERED[engine].values() if s == shape]
    return str(min(firsts)) if firsts else None


@cache
def draft(path: Path, root: Path) -> Path:
    config = json.loads(path.read_text())
    return build(root / path.parent.name / path.stem, config, LAYOUT[path.parent.name])


@pytest.fixture(scope="module")
def drafts(tmp_path_factory) -> dict[Path, Path]:
    root = tmp_path_factory.mktemp("published")
    return {p: draft(p, root) for p in CONFIGS}


def test_the_corpus_is_there_and_cited():
    readme = (PUBLISHED / "README.md").read_text()
    assert len(CONFIGS) >= 20
    for p in CONFIGS:
        assert f"`{p.parent.name}/{p.name}`" in readme, p


@pytest.mark.parametrize("engine", sorted(RELEASES))
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_no_false_verdict_in_any_release(drafts, path, engine):
    folder = drafts[path]
    ck, cfg = open_checkpoint(folder), load_draft_config(folder)
    shapes = {n: t.shape for n, t in ck.tensors.items()}
    shape = SHAPE.get(path.stem, "llama")
    arch = cfg.architectures[0]
    if engine == "lmdeploy" and shape == "mla" and cfg.model_type != "kimi_k2":
        pytest.skip("LMDeploy takes an MLA draft only with a kimi_k2 config (not in the corpus)")
    for rel in all_releases(engine):
        built = registered(engine, looked_up(engine, arch, rel.version), rel.version)
        report = simulate_keys(shapes, cfg, rel, suggest_upgrade=False)
        codes = {f.code: f for f in report.findings}
        where = f"{path.stem} on {rel}"
        if built is None:  # the registry refuses the name
            assert report.refusal is not None, f"{where}: served a name it does not register"
            refused = codes["UNSUPPORTED_CONFIG"]
            if registered(engine, _class_for(engine, shape, rel.version), rel.version):
                assert report.rewritten.refusal is None, f"{where}: no rewrite found"
                assert "DRAFT_CLASS_MISMATCH" not in {f.code for f in report.rewritten.findings}
            else:
                first = first_release_for(engine, shape)
                assert (f"≥ {first}" if first else "no class") in refused.fix, (where, refused.fix)
        elif built == shape:
            assert report.refusal is None, f"{where}: refused a registered name"
            assert "DRAFT_CLASS_MISMATCH" not in codes, where
        else:
            assert codes["DRAFT_CLASS_MISMATCH"].severity is Severity.CRITICAL, where


def _class_for(engine: str, shape: str, version: Version) -> str:
    """A name the oracle registers for `shape` at `version` (the empty name if none)."""
    for name, (first, s) in REGISTERED[engine].items():
        if s == shape and version >= Version(first):
            return name
    return ""


@pytest.mark.parametrize("engine", sorted(RELEASES))
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_fix_writes_a_draft_the_newest_release_builds_or_says_why(drafts, path, engine):
    folder = drafts[path]
    ck, cfg = open_checkpoint(folder), load_draft_config(folder)
    release = f"{engine}=={RELEASES[engine][-1]}"
    try:
        plan = plan_fix(ck, cfg, release)
    except KitError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert plan.after.refusal is None
    assert "DRAFT_CLASS_MISMATCH" not in {f.code for f in plan.after.findings}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_inspection_reads_every_published_shape(drafts, path):
    """Headers only: every tensor the trainer writes is one a draft may hold (MLA projections and
    routed MLPs included) and has the shape its config implies; the trainer is recognised."""
    import kit

    report = kit.inspect(drafts[path], stats="none")
    codes = {f.code for f in report.findings}
    assert not codes & {"SHAPE_CONTRADICTS_CONFIG", "EXTRA_KEYS"}, report.findings


def test_phi4_minis_tied_config_over_its_trained_head(tmp_path):
    """SpecForge publishes phi4-mini's draft config with `tie_word_embeddings: true` and a 32000
    draft vocabulary, and trains its own head: every SGLang release ties it to the embedding and
    drops the head (0.5.23 llama_eagle3.py:303-304, :368-378); vLLM never ties."""
    path = PUBLISHED / "specforge" / "phi4-mini-eagle3.json"
    cfg_raw = json.loads(path.read_text())
    assert cfg_raw["tie_word_embeddings"] is True and cfg_raw["draft_vocab_size"] == 32000
    folder = build(tmp_path / "phi4", cfg_raw, "specforge")
    ck, cfg = open_checkpoint(folder), load_draft_config(folder)
    shapes = {n: t.shape for n, t in ck.tensors.items()}
    for rel in all_releases("sglang"):
        f = {f.code: f for f in simulate_keys(shapes, cfg, rel, False).findings}
        assert f["TIED_HEAD_DROPPED"].severity is Severity.CRITICAL, rel
    for rel in all_releases("vllm"):
        codes = {f.code for f in simulate_keys(shapes, cfg, rel, False).as_served.findings}
        assert "TIED_HEAD_DROPPED" not in codes, rel
    plan = plan_fix(ck, cfg, "sglang==0.5.23")
    assert plan.config["tie_word_embeddings"] is False
