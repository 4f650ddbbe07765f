"""The chain a deployment runs against the unroll the draft was trained with, where no launch
line says the chain: from the logs (the positions a vLLM log reports, the steps SGLang's gauges
give) or from `--num-draft-tokens`. The incident's speculators draft records its test-time
training unroll (5) as `speculative_tokens`."""

from __future__ import annotations

import pytest

import kit
from tests.conftest import DATA

SPECULATORS = DATA / "incident" / "kimi-k2.5" / "draft"  # speculative_tokens 5
SPECFORGE = DATA / "layouts" / "specforge"  # records no unroll
LINE = (
    "(APIServer pid=7) INFO 10-22 10:27:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean "
    "acceptance length: {al:.2f}, Accepted throughput: 10.00 tokens/s, Drafted throughput: "
    "40.00 tokens/s, Accepted: {acc} tokens, Drafted: {dr} tokens, Per-position acceptance rate: "
    "{pp}, Avg Draft acceptance rate: {pct:.1f}%"
)


def vllm_log(tmp_path, k: int):
    """100 drafts of k tokens a window, position i accepted at 0.7**(i+1)."""
    pp = [0.7 ** (i + 1) for i in range(k)]
    acc = round(100 * sum(pp))
    text = "\n".join(
        LINE.format(s=s, al=1 + acc / 100, acc=acc, dr=100 * k, pct=100 * acc / (100 * k),
                    pp=", ".join(f"{p:.3f}" for p in pp))
        for s in range(4)
    )  # fmt: skip
    path = tmp_path / f"k{k}.log"
    path.write_text(text + "\n")
    return path


def codes(report) -> dict:
    return {f.code: f for f in report.findings}


@pytest.mark.parametrize("k, flagged", [(8, True), (5, False), (3, False)])
def test_a_chain_the_logs_show_longer_than_trained(tmp_path, k, flagged):
    report = kit.doctor(SPECULATORS, logs=[vllm_log(tmp_path, k)], engine="vllm==0.11.1")
    found = codes(report).get("CHAIN_LONGER_THAN_TRAINED")
    assert (found is not None) is flagged
    if flagged:
        assert found.title.startswith("the chain proposes 8 drafts per step, the draft was trained")
        assert any(f"the drafts per step k{k}.log shows" in e for e in found.evidence)
        assert '"num_speculative_tokens": 5' in found.fix


@pytest.mark.parametrize(
    "engine, given, flagged",
    [("sglang==0.5.10", 9, True), ("sglang==0.5.10", 6, False), ("vllm==0.11.1", 6, True),
     ("vllm==0.11.1", 5, False)],
)  # fmt: skip
def test_a_chain_given_as_num_draft_tokens_in_the_release_count(engine, given, flagged):
    """SGLang's count includes the root (6 = a chain of 5), vLLM's does not."""
    report = kit.doctor(SPECULATORS, num_draft_tokens=given, engine=engine)
    assert ("CHAIN_LONGER_THAN_TRAINED" in codes(report)) is flagged


def test_a_draft_that_records_no_unroll_is_not_judged(tmp_path):
    report = kit.doctor(SPECFORGE, logs=[vllm_log(tmp_path, 8)], engine="vllm==0.11.1")
    assert "CHAIN_LONGER_THAN_TRAINED" not in codes(report)


def test_the_deployment_check_takes_the_chain_without_a_launch_line():
    report = kit.check_deployment(draft=SPECULATORS, engine="vllm==0.11.1", chain=(7, "a test"))
    (found,) = [f for f in report.findings if f.code == "CHAIN_LONGER_THAN_TRAINED"]
    assert "served chain 7 (a test)" in found.evidence
