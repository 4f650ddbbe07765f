"""Every trainer export in data/samples/ through the real vLLM 0.32.0, against the kit's counts.

Each export is served as its trainer wrote it, on the target it was trained on (the bundled
target; ModelOpt's full-vocabulary sample on its first 4 layers, as its PROVENANCE.md says),
greedy, float32, k = 5, the bundled pair's 300 held-out prompts. The kit's row for the draft as
vLLM 0.32.0 deploys it must count the engine's verify steps and accepted drafts within 1 %, and
vLLM's figure must sit inside the kit's interval. (Before the kit modelled the YaRN that ModelOpt
writes into its exports, its ModelOpt rows were 10 to 35 verify steps off.)

Also here: what vLLM's draft registry does with the names drafts are published under, and with a
tied config over a trained head, against what the kit says.
"""

from __future__ import annotations

import drafts
import pytest
from conftest import PROMPTS, RELEASE, TARGET, run_engine

EXPORTS = {  # folder in data/samples -> decoder layers of the target it was trained on
    "specforge-0.2.0-sglang": 8,
    "specforge-0.2.0-hf": 8,
    "modelopt-0.47.0": 8,
    "modelopt-0.47.0-fullvocab": 4,
    "speculators-0.9.0-converter": 8,
}


def kit_row(target, draft):
    """The kit's row for `draft` as vLLM 0.32.0 deploys it, counted as vLLM counts."""
    from kit.offline_acceptance import as_deployed, load_target

    common = {"prompts": PROMPTS, "progress": False, "k": 5, "count_as": RELEASE}
    return as_deployed(target, draft, RELEASE, target=load_target(target), **common)


def totals(engine) -> tuple[int, int]:
    counts = engine.runs["greedy"]["per_prompt"]
    return sum(c["steps"] for c in counts), sum(c["accepted"] for c in counts)


def within_one_percent(engine, predicted) -> None:
    assert engine.crash is None, engine.crash
    assert predicted.result is not None, predicted.crash and predicted.crash.title
    steps, accepted = totals(engine)
    want = predicted.result
    assert abs(steps - want.verify_steps) <= 0.01 * want.verify_steps, (steps, want.verify_steps)
    assert abs(accepted - want.accepted) <= 0.01 * max(want.accepted, 1), (accepted, want.accepted)
    measured = engine.measured("greedy", predicted).result
    assert want.accept_len_ci.contains(measured.accept_len), (measured.accept_len, want)


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_trainer_export_counts_equal_the_kits(tmp_path_factory, name):
    base = tmp_path_factory.mktemp(name)
    draft = drafts.export(name, base / "draft")
    target = TARGET if EXPORTS[name] == 8 else drafts.cut_target(base / "target", EXPORTS[name])
    engine = run_engine(draft, base / "engine", {"greedy": {}}, target=target)
    within_one_percent(engine, kit_row(target, draft))


@pytest.mark.parametrize("arch", ["GptOssForCausalLMEagle3", "Qwen3MoEForCausalLMEagle3"])
def test_an_eagle3_name_vllm_does_not_register_stops_the_server(tmp_path_factory, arch):
    """vLLM keeps the name (transformers_utils/configs/eagle.py) and its registry holds no such
    class: the server does not start, with the registry's own message, which the kit's refusal
    quotes (its offline row measures the draft as the fix would serve it, the refusal first).
    Renamed as the kit's fix says, the same draft serves (the next test)."""
    import kit

    base = tmp_path_factory.mktemp(arch)
    draft = drafts.named(arch)(base / "draft")
    engine = run_engine(draft, base / "engine", {"greedy": {}})
    said = f"Model architectures ['{arch}'] are not supported for now"
    # vLLM raises it inside its SpeculativeConfig's validation: the first line is pydantic's
    assert engine.crash is not None and engine.crash.startswith("ValidationError"), engine.crash
    assert said in engine.log.read_text()
    report = kit.simulate(draft, RELEASE)
    assert said in report.refusal.message
    [change] = [c for c in report.config_changes if c.startswith("architectures")]
    assert "-> [LlamaForCausalLMEagle3]" in change
    refused = next(f for f in kit_row(TARGET, draft).findings if f.code == "UNSUPPORTED_CONFIG")
    assert refused.root_cause and said in refused.title


def test_the_published_llama_name_serves(tmp_path_factory):
    """The healthy control of the test above: `LlamaForCausalLMEagle3`, registered from 0.10.2."""
    base = tmp_path_factory.mktemp("named_llama")
    draft = drafts.named("LlamaForCausalLMEagle3")(base / "draft")
    engine = run_engine(draft, base / "engine", {"greedy": {}})
    within_one_percent(engine, kit_row(TARGET, draft))


def test_vllm_never_ties_the_draft_head(tmp_path_factory):
    """`tie_word_embeddings: true` over the draft's own trained, reduced head: vLLM's draft always
    builds its own head (llama_eagle3.py:329) and loads the trained one, so the counts are the
    healthy draft's; the kit says nothing about a tie on vLLM (SGLang ties and drops it)."""
    import kit

    base = tmp_path_factory.mktemp("tied")
    draft = drafts.tied_over_trained_head(base / "draft")
    engine = run_engine(draft, base / "engine", {"greedy": {}})
    within_one_percent(engine, kit_row(TARGET, draft))
    assert "TIED_HEAD_DROPPED" not in {f.code for f in kit.simulate(draft, RELEASE).findings}
    assert "TIED_HEAD_DROPPED" in {f.code for f in kit.simulate(draft, "sglang==0.5.23").findings}
