"""Verification as servers run it (greedy or speculative sampling) and the figures' intervals."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from kit.checkpoint.config import load_draft_config, load_target_config
from kit.checkpoint.files import open_checkpoint
from kit.offline_acceptance import Sampler, compare, evaluate, healthy
from kit.offline_acceptance.intervals import percentile_interval, ratio_resamples, resample_weights
from kit.offline_acceptance.measure import completion_len
from kit.offline_acceptance.sampling import accept_probability, argmax_accepted, walk
from kit.offline_acceptance.wiring import load_draft, plan_wiring
from kit.tracing.capture import trained_layers
from kit.tracing.draft import ChainCache
from tests.conftest import DRAFT, PROMPTS, TARGET

torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------
# The sampler on distributions small enough to compute by hand.


def test_temperature_and_top_p_by_hand():
    """p = softmax(logits / T), then the smallest most-likely set reaching top_p, renormalised."""
    logits = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()
    assert Sampler(1.0).probs(logits).tolist() == pytest.approx([0.5, 0.3, 0.15, 0.05])
    squared = torch.tensor([0.25, 0.09, 0.0225, 0.0025]) / 0.365  # T = 0.5 squares p
    assert Sampler(0.5).probs(logits).tolist() == pytest.approx(squared.tolist())
    # 0.5 < 0.7, 0.5 + 0.3 >= 0.7: the two most likely stay, renormalised to 0.625 / 0.375
    assert Sampler(1.0, top_p=0.7).probs(logits).tolist() == pytest.approx([0.625, 0.375, 0, 0])
    assert Sampler(1.0, top_p=0.1).probs(logits).tolist() == pytest.approx([1, 0, 0, 0])


def test_a_draft_equal_to_the_target_has_every_token_accepted():
    """q = p: min(1, q/p) = 1 at every position, so every step accepts all k drafted tokens
    (k + 1 emitted per step) whatever the draws."""
    g = torch.Generator().manual_seed(0)
    p = torch.rand(40, 4, generator=g).clamp_min(0.01)
    probs = accept_probability(p, p)
    assert torch.equal(probs, torch.ones_like(probs))
    # tokens 2 … 31 after the prefill's token 1: 30 tokens, 6 steps of 4 accepted + 1
    c = walk(probs, torch.rand(40, 4, generator=g), start=1, end=32)
    assert (c.steps, c.accepted, c.emitted, c.per_position) == (6, 24, 30, [6, 6, 6, 6])


P = torch.tensor([0.5, 0.3, 0.2])  # target
Q = torch.tensor([0.2, 0.3, 0.5])  # draft; Σ min(p, q) = 0.2 + 0.3 + 0.2 = 0.7


def _textbook(steps: int, k: int, g: torch.Generator) -> tuple[list[int], torch.Tensor]:
    """Speculative sampling as written in the papers, draw by draw: d ~ q, accept with
    min(1, p(d)/q(d)), else emit a token from norm(max(0, p − q)) and end the step."""
    accepted, emitted = [], []
    residual = (P - Q).clamp_min(0) / (P - Q).clamp_min(0).sum()
    for _ in range(steps):
        a = 0
        for _ in range(k):
            d = int(torch.multinomial(Q, 1, generator=g))
            if float(torch.rand(1, generator=g)) < min(1.0, float(P[d] / Q[d])):
                a += 1
                emitted.append(d)
            else:
                emitted.append(int(torch.multinomial(residual, 1, generator=g)))
                break
        accepted.append(a)
    return accepted, torch.bincount(torch.tensor(emitted), minlength=3) / len(emitted)


def test_accept_decisions_given_the_text_match_textbook_speculative_sampling():
    """Context-free p and q over three tokens, k = 2: each drafted token is accepted with
    probability α = Σ min(p, q) = 0.7 given the ones before, so a step accepts 0.7 + 0.7² = 1.19
    tokens on average (0.7 at position 0, 0.49 at position 1). The textbook algorithm and the
    kit's decisions given a text sampled from p both reach it; the textbook's emitted tokens are
    distributed as p, which is why the kit may sample the text first."""
    g = torch.Generator().manual_seed(1)
    book, emitted = _textbook(20000, 2, g)
    assert np.mean(book) == pytest.approx(1.19, abs=0.025)
    assert emitted.tolist() == pytest.approx(P.tolist(), abs=0.01)

    text = torch.multinomial(P, 60000, replacement=True, generator=g)
    k = 2
    ahead = torch.stack([text[2 + j : 2 + j + len(text) - k - 2] for j in range(k)], -1)
    probs = accept_probability(Q[ahead], P[ahead])
    c = walk(probs, torch.rand(probs.shape, generator=g), start=1, end=len(text) - k - 2)
    assert c.accepted / c.steps == pytest.approx(1.19, abs=0.025)
    assert c.per_position[0] / c.steps == pytest.approx(0.7, abs=0.015)
    assert c.per_position[1] / c.steps == pytest.approx(0.49, abs=0.015)


def _argmax_drafting(steps: int, k: int, g: torch.Generator) -> tuple[list[int], torch.Tensor]:
    """vLLM's verification draw by draw, as its rejection sampler runs it given no draft
    probabilities (0.32.0 v1/sample/rejection_sampler.py:872,884): d = argmax q, accepted when
    p(d) >= u; else a token from p without d (its residual with q one-hot), and the step ends."""
    d = int(Q.argmax())
    residual = P.clone()
    residual[d] = 0
    accepted, emitted = [], []
    for _ in range(steps):
        a = 0
        for _ in range(k):
            if float(torch.rand(1, generator=g)) <= float(P[d]):
                a += 1
                emitted.append(d)
            else:
                emitted.append(int(torch.multinomial(residual / residual.sum(), 1, generator=g)))
                break
        accepted.append(a)
    return accepted, torch.bincount(torch.tensor(emitted), minlength=3) / len(emitted)


def test_argmax_drafts_are_accepted_with_the_targets_probability_of_them():
    """The same p and q, drafted as vLLM drafts: q's argmax (token 2, p = 0.2) is accepted with
    probability 0.2, so a step accepts 0.2 + 0.04 = 0.24 (not the 1.19 of a sampled draft), and
    the text is still distributed as p. The kit's rule given a text sampled from p (accepted
    exactly where the text is the argmax) reaches the same figures."""
    g = torch.Generator().manual_seed(2)
    vllm, emitted = _argmax_drafting(20000, 2, g)
    assert np.mean(vllm) == pytest.approx(0.24, abs=0.01)
    assert emitted.tolist() == pytest.approx(P.tolist(), abs=0.01)

    _kit_argmax_rule_reaches(0.24, 0.2, g)


def _kit_argmax_rule_reaches(per_step: float, first: float, g: torch.Generator) -> None:
    """The kit's ARGMAX rule given a text sampled from P (accepted exactly where the text is
    Q's argmax), k = 2: `per_step` accepted per verify step, `first` at position 0."""
    text = torch.multinomial(P, 60000, replacement=True, generator=g)
    k = 2
    ahead = torch.stack([text[2 + j : 2 + j + len(text) - k - 2] for j in range(k)], -1)
    probs = argmax_accepted(torch.full_like(ahead, int(Q.argmax())), ahead)
    c = walk(probs, torch.rand(probs.shape, generator=g), start=1, end=len(text) - k - 2)
    assert c.accepted / c.steps == pytest.approx(per_step, abs=0.01)
    assert c.per_position[0] / c.steps == pytest.approx(first, abs=0.01)


def _sglang_target_only(
    steps: int, k: int, g: torch.Generator, single: float = 1.0, acc: float = 1.0
) -> tuple[list[int], torch.Tensor]:
    """SGLang's verification of a chain draw by draw, as its target-only kernel runs it (0.5.23
    sglang/kernels/jit/include/sgl_kernel/speculative/sampling.cuh:64-99, then :101-173): d = the
    draft's argmax, the draft probabilities all zero; a fresh coin per level, d accepted when
    p(d) > 0 and (coin < p(d) / threshold_acc or p(d) >= threshold_single); on rejection p(d) is
    written into the draft probabilities and the token comes from relu(p - them); after k
    accepted the bonus token comes from p."""
    d = int(Q.argmax())
    accepted, emitted = [], []
    for _ in range(steps):
        a, draft_probs = 0, torch.zeros_like(P)
        while a < k:
            coin, p_d = float(torch.rand(1, generator=g)), float(P[d])
            if not (p_d > 0 and (coin < p_d / acc or p_d >= single)):
                draft_probs[d] = P[d]
                break
            a += 1
            emitted.append(d)
        residual = (P - draft_probs).clamp_min(0)
        emitted.append(int(torch.multinomial(residual / residual.sum(), 1, generator=g)))
        accepted.append(a)
    return accepted, torch.bincount(torch.tensor(emitted), minlength=3) / len(emitted)


def test_sglang_accepts_an_argmax_draft_with_the_targets_probability_of_it():
    """The same p and q through SGLang's kernel at its default thresholds (1.0 and 1.0): q's
    argmax (token 2, p = 0.2) is accepted with probability 0.2, a step accepts 0.24 drafts, the
    text is distributed as p, and the kit's rule for the release given a text from p reaches the
    same figures."""
    from kit.engines import parse_engine
    from kit.engines.base import DraftProposal
    from kit.offline_acceptance.measure import draft_proposal

    assert draft_proposal(parse_engine("sglang==0.5.10")).value == DraftProposal.ARGMAX
    g = torch.Generator().manual_seed(3)
    sglang, emitted = _sglang_target_only(20000, 2, g)
    assert np.mean(sglang) == pytest.approx(0.24, abs=0.01)
    assert emitted.tolist() == pytest.approx(P.tolist(), abs=0.01)
    _kit_argmax_rule_reaches(0.24, 0.2, g)


def test_sglang_thresholds_below_one_accept_more_and_move_the_text_off_the_target():
    """Why the kit models only the default thresholds: threshold_acc 0.5 accepts d with
    min(1, 0.2 / 0.5) = 0.4 (0.4 + 0.16 per step), threshold_single 0.15 accepts every d
    (p(d) = 0.2 >= 0.15), and either way the emitted text is no longer distributed as p, so it
    cannot be sampled from the target first."""
    g = torch.Generator().manual_seed(4)
    acc, emitted = _sglang_target_only(20000, 2, g, acc=0.5)
    assert np.mean(acc) == pytest.approx(0.56, abs=0.015)
    assert float(emitted[2]) > float(P[2]) + 0.05
    single, emitted = _sglang_target_only(2000, 2, g, single=0.15)
    assert set(single) == {2}
    assert float(emitted[2]) > 2 / 3  # two accepted d, then one bonus token from p, per step


# ---------------------------------------------------------------------------------------------
# Intervals.


def test_bootstrap_interval_covers_the_true_figure_about_95_percent_of_the_time():
    """60 prompts of 10 verify steps, each prompt with its own difficulty (accepted ~
    Binomial(20, d), d ~ Beta(2, 3)): the true accepted per step is 20 · 0.4 / 10 = 0.8. The
    95% interval over prompts should contain it in about 95% of repeated experiments."""
    rng = np.random.default_rng(3)
    steps = np.full(60, 10.0)
    hits = 0
    trials = 300
    weights = resample_weights(60, 1000, seed=11)
    for _ in range(trials):
        accepted = rng.binomial(20, rng.beta(2, 3, size=60)).astype(np.float64)
        ci = percentile_interval(ratio_resamples(accepted, steps, weights))
        hits += ci.contains(0.8)
    assert 0.90 <= hits / trials <= 0.99


def test_each_figure_has_an_interval_around_it(target, prompts):
    r = healthy(TARGET, DRAFT, prompts=prompts[:60], target=target, progress=False).result
    assert r.accept_len_ci.contains(r.accept_len)
    assert r.accept_len_ci.hi - r.accept_len_ci.lo > 0.01  # 60 prompts differ
    assert all(ci.contains(p) for p, ci in zip(r.per_position, r.per_position_ci, strict=True))
    d = r.to_dict()
    assert d["accept_len_ci"] == r.accept_len_ci.to_list() and len(d["per_position_ci"]) == r.k
    same = compare(r, r)
    assert same.paired and same.difference == 0 and not same.beyond_noise


# ---------------------------------------------------------------------------------------------
# The bundled pair: greedy is unchanged, sampling repeats with its seed.


def _reference_greedy(target, prompts, k: int, max_new: int) -> tuple[int, int, list[int]]:
    """Greedy verification the way the kit measured it before sampling existed: transformers'
    own greedy `generate`, the draft's chains fed its *own* argmax tokens, and a verify step
    that counts the leading drafts equal to the target's tokens (nothing past the stop)."""
    target_cfg, draft_cfg = load_target_config(TARGET), load_draft_config(DRAFT)
    plan = plan_wiring(open_checkpoint(DRAFT), draft_cfg, target_cfg)
    draft = load_draft(DRAFT, plan, target)
    layers = trained_layers(draft_cfg, target_cfg.num_hidden_layers)
    steps = accepted = 0
    per_position = [0] * k
    with torch.inference_mode():
        for pr in prompts:
            ids = torch.tensor([pr.ids])
            out = target.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                  max_new_tokens=max_new, min_new_tokens=max_new,
                                  do_sample=False, eos_token_id=None, pad_token_id=0)  # fmt: skip
            seq = out[0]
            hs = target(input_ids=out, output_hidden_states=True).hidden_states
            h = torch.cat([hs[i] for i in layers], -1)[:, :-1]
            rows = len(seq) - 1
            cache, tokens, own, drafts = ChainCache(1), seq[None, 1:], False, []
            for j in range(k):
                logits, h = draft(tokens, h, torch.arange(rows) + j, cache, own)
                tokens, own = draft.to_target_ids(logits.argmax(-1)), True
                drafts.append(tokens[0])
            drafts = torch.stack(drafts, -1)
            start = len(pr.ids)
            end = start + completion_len(seq[start:].tolist(), pr.stop_ids, max_new)
            p = start
            while p < end - 1:
                left = end - 1 - p
                truth = seq[p + 1 : p + 1 + min(k, left)]
                a = min(int((drafts[p - 1][: len(truth)] == truth).long().cumprod(0).sum()),
                        left - 1)  # fmt: skip
                steps, accepted = steps + 1, accepted + a
                for i in range(a):
                    per_position[i] += 1
                p += a + 1
    return steps, accepted, per_position


def test_temperature_zero_is_greedy_verification(target, prompts):
    """--temperature 0 gives the counts of an independent greedy implementation, exactly."""
    few = prompts[:40]
    r = healthy(TARGET, DRAFT, prompts=few, target=target, progress=False,
                count_as="sglang==0.5.10", temperature=0).result  # fmt: skip
    want = _reference_greedy(target, few, k=5, max_new=24)
    assert (r.verify_steps, r.accepted, r.accepted_per_position) == want


def test_sampled_figure_repeats_with_its_seed_and_stays_above_the_incident(target, prompts):
    """Temperature 0.8, fixed seed: the healthy pair gives the same figure twice, inside its
    interval, and lies above the incident's wiring (sglang==0.5.10, aux capture off) beyond
    both intervals. Another seed draws other accept decisions."""
    common = {"prompts": prompts[:100], "target": target, "progress": False,
              "temperature": 0.8, "seed": 7, "count_as": "sglang==0.5.10"}  # fmt: skip
    first = healthy(TARGET, DRAFT, **common).result
    again = healthy(TARGET, DRAFT, **common).result
    assert first.figures() == again.figures()
    assert first.accept_len_ci.contains(first.accept_len)
    assert first.settings.temperature == 0.8 and first.settings.seed == 7
    incident = evaluate(TARGET, DRAFT, "sglang==0.5.10", aux_capture=False, **common).result
    assert incident.accept_len_ci.hi < first.accept_len_ci.lo
    other = healthy(TARGET, DRAFT, **(common | {"seed": 8})).result
    assert other.figures()["counts"] != first.figures()["counts"]
    greedy = healthy(TARGET, DRAFT, **(common | {"temperature": 0})).result
    assert greedy.figures()["counts"] != first.figures()["counts"]


def test_each_progress_bar_and_wiring_line_says_what_it_measures():
    """Notebook 5 shows one bar per wiring: each names its wiring, and a what-if row whose aux
    capture differs from what the deployment was given says so instead of "as given"."""
    from kit.engines import parse_engine
    from kit.engines.vocab import Feed
    from kit.offline_acceptance.measure import bar_label
    from kit.offline_acceptance.wiring import Wiring

    base = Wiring(parse_engine("sglang==0.5.10"), False, "LlamaForCausalLM", True,
                  Feed.AUX_CONCAT, (1, 2, 3), aux_capture_given=False)  # fmt: skip
    fixed = replace(base, what_if=("after kit fix (renames)",))
    labels = {bar_label(replace(base, healthy=True)), bar_label(base), bar_label(fixed)}
    assert labels == {"healthy", "sglang==0.5.10, aux capture on",
                      "sglang==0.5.10, aux capture on, after kit fix (renames)"}  # fmt: skip
    assert "what-if: the deployment was given it off" in base.describe()[0]
    assert "as given for the deployment" in replace(base, aux_capture=False).describe()[0]


# ---------------------------------------------------------------------------------------------
# What each release drafts when it samples (`acceptance.DRAFT_PROPOSAL`).


def test_every_vllm_release_drafts_the_argmax_and_unread_engines_sample():
    from kit.engines import RELEASES, parse_engine
    from kit.engines.base import DraftProposal
    from kit.offline_acceptance.measure import draft_proposal

    rules = {v: draft_proposal(parse_engine(f"vllm=={v}")) for v in RELEASES["vllm"]}
    assert {r.value for r in rules.values()} == {DraftProposal.ARGMAX}
    assert "rejection_sampler.py:872,884" in rules["0.32.0"].source
    for name in ("lmdeploy", "tensorrt_llm"):
        assert draft_proposal(parse_engine(f"{name}=={RELEASES[name][-1]}")).value == "sampled"


HOT = Sampler(0.7)


def _chains(target, prompts, verify: Sampler, proposal):
    """The healthy draft's P(accept | emitted) under `verify` along one continuation of
    `prompts` sampled at temperature 0.7."""
    from kit.offline_acceptance.measure import chain_acceptance, continuation, target_pass

    target_cfg, draft_cfg = load_target_config(TARGET), load_draft_config(DRAFT)
    plan = plan_wiring(open_checkpoint(DRAFT), draft_cfg, target_cfg)
    draft = load_draft(DRAFT, plan, target)
    ids = torch.tensor([p.ids for p in prompts])
    with torch.inference_mode():
        seq = torch.cat([ids, continuation(target, ids, 12, HOT, torch.manual_seed(5))], 1)
        fed, p_next = target_pass(target, seq, plan.wiring, verify, torch.device("cpu"))
        return chain_acceptance(draft, seq, fed, 3, verify, p_next, proposal)[0]


def test_an_argmax_proposal_is_accepted_exactly_where_the_text_is_the_drafts_argmax(
    target, prompts
):
    """At a temperature, ARGMAX decisions given a sampled text are certain: exactly greedy
    verification's indicator (the draft's argmax is the emitted token) on that same text.
    SAMPLED ones are min(1, q/p), strictly between 0 and 1 somewhere."""
    from kit.engines.base import DraftProposal

    same = [p for p in prompts if len(p.ids) == len(prompts[0].ids)][:4]
    argmax = _chains(target, same, HOT, DraftProposal.ARGMAX)
    indicator = _chains(target, same, Sampler(0.0), DraftProposal.SAMPLED)
    sampled = _chains(target, same, HOT, DraftProposal.SAMPLED)
    assert torch.equal(argmax, indicator)
    assert 0 < float(argmax.mean()) < 1
    assert ((sampled > 0) & (sampled < 1)).any()


def test_vllm_accepts_fewer_at_a_temperature_than_a_sampled_draft_would(
    target, prompts, monkeypatch
):
    """The bundled pair at temperature 0.7, counted as vllm==0.32.0: drafting the argmax
    accepts fewer tokens than the same counting with the draft sampled, beyond both intervals,
    and the result names the rule with its source."""
    import kit.offline_acceptance.measure as measure

    common = {"prompts": prompts[:60], "target": target, "progress": False,
              "temperature": 0.7, "seed": 0, "count_as": "vllm==0.32.0"}  # fmt: skip
    vllm = healthy(TARGET, DRAFT, **common).result
    assert vllm.settings.proposal.startswith("the draft's argmax")
    monkeypatch.setattr(measure, "draft_proposal", lambda counter: measure.PAPERS_PROPOSAL)
    sampled = healthy(TARGET, DRAFT, **common).result
    assert sampled.settings.proposal.startswith("drawn from the draft")
    assert vllm.accept_len_ci.hi < sampled.accept_len_ci.lo
    assert compare(vllm, sampled).beyond_noise


def test_the_matrix_bars_name_their_rows_the_fixed_ones_included(target, monkeypatch):
    """Notebook 5's what-if matrix shows one bar per row: the rows after the kit's fix say so
    on their bars, where they used to read like the unfixed rows."""
    from kit.offline_acceptance import fault_matrix, load_prompts, measure

    shown: list[str] = []
    real = measure._progress
    monkeypatch.setattr(measure, "PROGRESS_MIN_GROUPS", 1)
    monkeypatch.setattr(
        measure, "_progress", lambda on, total, desc: shown.append(desc) or real(False, total, desc)
    )
    prompts = load_prompts(PROMPTS)[:8]
    rows = fault_matrix(TARGET, DRAFT, "sglang==0.5.10", prompts=prompts, target=target, k=2)
    assert shown == [r.label for r in rows if r.result is not None]
    assert len(set(shown)) == len(shown) and any("after kit fix" in s for s in shown)


# The bundled pair through SGLang's rule, against vLLM's (the same rule) and the papers'.
SGLANG_FAMILIES = [  # (first release, the verify file its row cites)
    ("0.4.4.post2", "eagle_utils.py:357-380"),
    ("0.5.3", "eagle_info.py:351,363-376"),
    ("0.5.14", "--speculative-use-rejection-sampling"),
    ("0.5.21", "sgl_kernel/speculative/sampling.cuh:77-95"),
]


def test_every_sglang_release_drafts_the_argmax_at_default_thresholds():
    """Each release read maps to the ARGMAX row of its verify code's family, and the flag
    table agrees with what the rows assume: both thresholds default to 1.0 in every release,
    rejection sampling exists from 0.5.14 and is off by default."""
    from packaging.version import Version

    from kit.engines import RELEASES, parse_engine
    from kit.engines.base import DraftProposal
    from kit.engines.sglang.flags import table
    from kit.offline_acceptance.measure import draft_proposal

    for v in RELEASES["sglang"]:
        release = parse_engine(f"sglang=={v}")
        row = draft_proposal(release)
        family = [cited for first, cited in SGLANG_FAMILIES if Version(v) >= Version(first)][-1]
        assert row.value == DraftProposal.ARGMAX and family in row.source, v
        flags = table().flags_at(release)
        assert flags["--speculative-accept-threshold-single"].default == 1.0, v
        assert flags["--speculative-accept-threshold-acc"].default == 1.0, v
        rejection = flags.get("--speculative-use-rejection-sampling")
        assert (rejection is not None) == (Version(v) >= Version("0.5.14")), v
        assert rejection is None or rejection.default is False, v


def test_sglang_at_a_temperature_lies_with_vllm_below_a_sampled_draft(target, prompts, monkeypatch):
    """The bundled pair at temperature 0.7. Counted as sglang==0.5.23 (which, like vLLM 0.32.0,
    counts drafts verified past a request's end) it gives vLLM's figures exactly: the same rule.
    Counted as sglang==0.5.10 on every held-out prompt its interval lies below the one the
    papers' min(1, p/q) gives the same counting, and the result names SGLang's source."""
    import kit.offline_acceptance.measure as measure

    common = {"prompts": prompts[:150], "target": target, "progress": False,
              "temperature": 0.7, "seed": 0}  # fmt: skip
    newest = healthy(TARGET, DRAFT, count_as="sglang==0.5.23", **common).result
    vllm = healthy(TARGET, DRAFT, count_as="vllm==0.32.0", **common).result
    assert newest.figures()["counts"] == vllm.figures()["counts"]
    assert "sampling.cuh:77-95" in newest.settings.proposal
    every = common | {"prompts": prompts, "count_as": "sglang==0.5.10"}
    sglang = healthy(TARGET, DRAFT, **every).result
    assert sglang.settings.proposal.startswith("the draft's argmax")
    assert "0.5.10 speculative/eagle_worker.py" in sglang.settings.proposal
    monkeypatch.setattr(measure, "draft_proposal", lambda counter: measure.PAPERS_PROPOSAL)
    papers = healthy(TARGET, DRAFT, **every).result
    assert sglang.accept_len_ci.hi < papers.accept_len_ci.lo
    assert compare(sglang, papers).beyond_noise
