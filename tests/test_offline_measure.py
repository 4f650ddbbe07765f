"""Offline acceptance on the bundled target + draft pair, and the incident's faults replayed."""

from __future__ import annotations

import json

import pytest
import torch

from kit.checkpoint.config import load_draft_config, load_target_config
from kit.checkpoint.files import open_checkpoint
from kit.cli import main
from kit.errors import KitError
from kit.load.rewrite import plan_fix, write_fixed
from kit.offline_acceptance import Prompt, evaluate, healthy, load_prompts
from kit.offline_acceptance.sampling import walk
from tests.conftest import DATA, DRAFT, PROMPTS, TARGET

torch.set_num_threads(1)


def test_bundled_pair_is_what_the_task_says():
    """Target: transformers Llama, 8 layers (default ids [2, 4, 5] distinct); draft: the
    speculators 0.9.0 layout (`layers.0.*`, d2t/t2d because Vd < V) with its nested config."""
    t = load_target_config(TARGET)
    assert t.architecture == "LlamaForCausalLM" and t.num_hidden_layers == 8
    d = load_draft_config(DRAFT)
    assert d.source == "speculators" and d.architectures == ["Eagle3DraftModel"]
    assert d.aux_layer_ids == [2, 4, 5] and d.draft_vocab_size < d.vocab_size
    keys = set(open_checkpoint(DRAFT).tensors)
    sample = set(open_checkpoint(DATA / "samples" / "speculators-0.9.0-tiny").tensors)
    assert keys == sample
    raw = json.loads((DRAFT / "config.json").read_text())
    want = json.loads((DATA / "samples/speculators-0.9.0-tiny/config.json").read_text())
    assert set(raw) == set(want)
    assert set(raw["transformer_layer_config"]) == set(want["transformer_layer_config"])


def _greedy_accept(drafts: torch.Tensor, seq: torch.Tensor) -> torch.Tensor:
    """Greedy verification: row t's drafted token j is accepted iff it is seq[t + 2 + j]."""
    k = drafts.shape[-1]
    truth = torch.nn.functional.pad(seq, (0, k + 1), value=-1).unfold(0, k, 1)[2 : 2 + len(drafts)]
    return (drafts == truth).float()


def _counts(drafts, seq, start, end, past_stop=False) -> dict:
    c = walk(_greedy_accept(drafts, seq), torch.zeros(drafts.shape), start, end, past_stop)
    return {"steps": c.steps, "accepted": c.accepted, "emitted": c.emitted, "pos": c.per_position}


def test_walk_counts_exact_accepts_per_step():
    """Greedy verification: a = leading drafts equal to the target's tokens, a+1 emitted."""
    seq = torch.arange(20)
    drafts = torch.full((19, 3), -1)
    drafts[4] = torch.tensor([6, 7, 99])  # step at p=5 drafts seq[6], seq[7], then a miss
    drafts[7] = torch.tensor([9, 10, 11])  # p=8: all three accepted
    drafts[11] = torch.tensor([99, 13, 14])  # p=12: first miss -> nothing after it counts
    # p=5 a=2 -> p=8 a=3 -> p=12 a=0 -> p=13 stops (end-1)
    assert _counts(drafts, seq, 5, 14) == {"steps": 3, "accepted": 5, "emitted": 8,
                                           "pos": [2, 2, 1]}  # fmt: skip


def test_walk_counts_nothing_past_the_requests_last_token():
    """A step whose drafts run past the stop token keeps only up to it, as SGLang does
    (0.5.10 srt/speculative/eagle_info.py L406-L436: tokens after a finished request's last one
    are set to -1 before accept_length is counted)."""
    seq = torch.arange(20)
    drafts = torch.full((19, 5), -1)
    drafts[4] = torch.tensor([6, 7, 8, 9, 10])  # p=5: all five agree with the target ...
    # ... but seq[8] is the stop token: emits seq[6], seq[7], seq[8] and stops: 2 counted, not 5
    assert _counts(drafts, seq, 5, 9) == {"steps": 1, "accepted": 2, "emitted": 3,
                                          "pos": [1, 1, 0, 0, 0]}  # fmt: skip
    whole = _counts(drafts, seq, 5, 20)  # no stop in reach: all five count
    assert whole["accepted"] == 5 and whole["pos"][:5] == [1, 1, 1, 1, 1]


def test_walk_past_stop_counts_what_the_target_verified_beyond_it():
    """vLLM takes num_accepted before its stop check trims the tokens (0.11.2
    v1/core/sched/scheduler.py L1023-L1040, trimmed at L1050 / L1171-L1189): the drafts the
    target verified past the stop token count as accepted; the text emitted is the same."""
    seq = torch.arange(20)
    drafts = torch.full((19, 5), -1)
    drafts[4] = torch.tensor([6, 7, 8, 9, 10])
    assert _counts(drafts, seq, 5, 9, past_stop=True) == {
        "steps": 1, "accepted": 5, "emitted": 3, "pos": [1, 1, 1, 1, 1]}  # fmt: skip


def test_walk_accepts_a_drafted_token_when_its_draw_falls_below_its_probability():
    """Sampling: the uniform draw decides each position; a rejection ends the chain there."""
    p = torch.full((10, 3), 0.5)
    draws = torch.full((10, 3), 0.9)
    draws[0] = torch.tensor([0.1, 0.2, 0.7])  # p=1: accept, accept, reject
    draws[3] = torch.tensor([0.6, 0.1, 0.1])  # p=4: reject at once (nothing after counts)
    c = walk(p, draws, start=1, end=8)
    # p=1 a=2 -> p=4 a=0 -> p=5 a=0 -> p=6 a=0 -> p=7 stops
    assert (c.steps, c.accepted, c.emitted, c.per_position) == (4, 2, 6, [1, 1, 0])


def test_healthy_wiring_reaches_the_must_show_figures(target, prompts):
    """Healthy on 300 held-out line completions at k = 5: step-0 ≥ 0.65, accept len ≥ 3.0,
    counted as SGLang counts (the stricter rule: nothing past the stop token)."""
    row = healthy(TARGET, DRAFT, k=5, prompts=prompts, target=target, progress=False,
                  count_as="sglang==0.5.10")  # fmt: skip
    r = row.result
    assert row.label == "healthy" and r.prompts == 300
    assert r.wiring.fc_applied is True and r.wiring.layers == (2, 4, 5)
    assert r.step0_accuracy >= 0.65
    assert r.accept_len >= 3.0
    assert r.per_position == sorted(r.per_position, reverse=True)
    assert r.accept_rate["vllm"] == pytest.approx(r.accepted / r.drafted, abs=1e-6)


def test_incident_is_reproduced_from_the_analyses(target, prompts):
    """sglang==0.5.10 drops `layers.0.*` (0.5.10 llama_eagle3.py:243-256) and, aux capture off,
    hands over the final post-norm state so fc's width gate skips fc (:176): accept len ≤ 1.1."""
    r = evaluate(
        TARGET, DRAFT, "sglang==0.5.10", aux_capture=False, prompts=prompts, target=target,
        progress=False,
    ).result  # fmt: skip
    codes = {f.code for f in r.findings}
    assert {"KEYS_SILENTLY_DROPPED", "FC_BYPASSED", "OFFLINE_NEAR_ZERO_ACCEPTANCE"} <= codes
    assert r.wiring.fc_applied is False
    assert r.wiring.feeds == "final_hidden_post_norm"
    assert r.accept_len <= 1.1
    # SGLang 0.5.6-0.5.10 print accept_len / (k+1) (0.5.6 scheduler_metrics_mixin.py:276-294)
    assert r.accept_rate["sglang>=0.5.6,<0.5.11"] == pytest.approx(r.accept_len / 6, abs=1e-6)


def test_rename_alone_stays_below_healthy_and_both_fixes_restore_it(target, prompts, tmp_path):
    """The incident's first fix (`python -m kit fix --for sglang==0.5.10`, layers.0 -> midlayer)
    alone: every key loads, but with capture off the final post-norm state still skips fc
    (0.5.10 llama_eagle3.py:176): step-0 acceptance halves and accept len falls to ≤ 1.9, well
    below healthy. With capture on as well: healthy again, to the count, once the draft steps
    run where trained; 0.5.10 runs every step after the first one position late
    (speculative/eagle_worker.py:527,675), and DRAFT_POSITIONS_LATE says what that costs."""
    ck = open_checkpoint(DRAFT)
    fixed = write_fixed(ck, plan_fix(ck, load_draft_config(DRAFT), "sglang==0.5.10"),
                        tmp_path / "renamed")  # fmt: skip
    common = {"prompts": prompts, "target": target, "progress": False}
    renamed = evaluate(TARGET, fixed, "sglang==0.5.10", aux_capture=False, **common).result
    both = evaluate(TARGET, fixed, "sglang==0.5.10", **common).result
    # counted as the incident's engine, as the matrix does
    good = healthy(TARGET, DRAFT, count_as="sglang==0.5.10", **common).result
    assert "KEYS_SILENTLY_DROPPED" not in {f.code for f in renamed.findings}
    assert renamed.wiring.fc_applied is False
    assert renamed.step0_accuracy < 0.6 * good.step0_accuracy
    assert renamed.accept_len <= 1.9 < good.accept_len
    assert renamed.emitted == good.emitted  # greedy verification emits the same text
    assert both.wiring.fc_applied is True
    assert both.trained_positions.figures()["counts"] == good.figures()["counts"]
    assert both.verify_steps > good.verify_steps
    assert "DRAFT_POSITIONS_LATE" in {f.code for f in both.findings}


def test_each_fault_costs_acceptance(target, prompts):
    """Wrong aux layers (ids read one layer late) and no d2t each lose acceptance."""
    few = {"prompts": prompts[:60], "target": target, "progress": False}
    base = healthy(TARGET, DRAFT, **few).result
    shifted = evaluate(TARGET, DRAFT, aux_layers=[3, 5, 6], **few)
    no_d2t = evaluate(TARGET, DRAFT, use_d2t=False, **few)
    assert shifted.result.wiring.layers == (3, 5, 6)
    assert shifted.label == "healthy, target states [3, 5, 6] fed instead"
    assert shifted.result.accept_len < base.accept_len
    assert no_d2t.result.accept_len < 0.5 * base.accept_len


def test_same_numbers_on_a_rerun(target, prompts):
    """Fixed seeds, one thread, exact counts: two runs agree to the last count."""
    a = evaluate(TARGET, DRAFT, "sglang==0.5.10", prompts=prompts[:40], target=target,
                 progress=False).result  # fmt: skip
    b = evaluate(TARGET, DRAFT, "sglang==0.5.10", prompts=prompts[:40], target=target,
                 progress=False).result  # fmt: skip
    assert a.figures() == b.figures()


def test_each_release_counts_the_last_step_its_own_way(target, prompts):
    """Same drafts, same verify steps, same text emitted; vLLM's counters and SGLang's from
    0.5.11 on (spec v2 worker by default) also credit drafts verified past the stop token,
    SGLang up to 0.5.10 does not. By default a run counts as the release that loads the draft."""
    few = {"prompts": prompts[:60], "target": target, "progress": False}
    sglang = healthy(TARGET, DRAFT, count_as="sglang==0.5.10", **few).result
    vllm = healthy(TARGET, DRAFT, count_as="vllm==0.11.2", **few).result
    assert sglang.verify_steps == vllm.verify_steps and sglang.emitted == vllm.emitted
    assert sglang.accepted < vllm.accepted
    v2 = healthy(TARGET, DRAFT, count_as="sglang==0.5.11", **few).result
    assert v2.figures()["counts"] == vllm.figures()["counts"]
    assert "environ.py:459" in v2.settings.counting
    # the healthy wiring loads as vllm==0.11.2 and counts as it by default
    assert healthy(TARGET, DRAFT, **few).result.figures() == vllm.figures()
    as_sglang = evaluate(TARGET, DRAFT, "sglang==0.5.10", **few).result
    assert as_sglang.settings.counted_as == "sglang==0.5.10"
    with pytest.raises(KitError, match="unknown engine 'tgi'"):
        healthy(TARGET, DRAFT, count_as="tgi==1.0", **few)


def test_stop_counting_covers_every_modelled_release():
    from kit.engines import ENGINES, RELEASES, parse_engine, pick

    for name, versions in RELEASES.items():
        rules = {
            v: pick(ENGINES[name].acceptance.STOP_COUNTING, parse_engine(f"{name}=={v}")).value
            for v in versions
        }
        if name == "sglang":  # the v1 worker's truncation up to 0.5.10, v2 from 0.5.11
            assert not rules["0.5.10"] and rules["0.5.11"] and rules["0.5.23"]
            assert not rules["0.4.6.post1"]


def test_matrix_rows_all_count_as_the_release(tmp_path, capsys):
    """The matrix compares rows, so healthy is counted as the incident's engine counts too."""
    few = tmp_path / "few.jsonl"
    few.write_text("\n".join(PROMPTS.read_text().splitlines()[:15]) + "\n")
    code = main(["offline", "--target", str(TARGET), "--draft", str(DRAFT), "--prompts",
                 str(few), "--matrix", "--json"])  # fmt: skip
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["matrix"]
    assert [r["result"]["settings"]["counted_as"] for r in rows] == ["sglang==0.5.10"] * 5
    # the healthy row is the draft as trained: it names no release's wiring (it said vllm's)
    assert rows[0]["wiring"]["release"] is None and rows[0]["wiring"]["healthy"]
    assert [r["wiring"]["release"] for r in rows[1:]] == ["sglang==0.5.10"] * 4
    # both fixes: healthy, once 0.5.10's draft steps after the first run where trained
    fixed = rows[4]["result"]
    assert rows[0]["result"]["counts"] == fixed["trained_positions"]["counts"]
    assert fixed["counts"] != rows[0]["result"]["counts"]  # as 0.5.10 runs them: one late
    assert all(r["wiring"]["late_positions"] == 1 for r in rows[1:])
    assert (
        rows[0]["wiring"]["late_positions"] == 0 and rows[0]["result"]["trained_positions"] is None
    )
    assert rows[1]["vs_healthy"]["beyond_noise"]  # the incident is below healthy beyond noise


def test_bad_prompts_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "prompts.jsonl"
    bad.write_text('{"text": "no ids"}\n')
    with pytest.raises(KitError, match="line 1") as e:
        load_prompts(bad)
    assert str(bad) in str(e.value)


def test_cli_json(tmp_path, capsys):
    few = tmp_path / "few.jsonl"
    few.write_text("\n".join(PROMPTS.read_text().splitlines()[:15]) + "\n")
    code = main(["offline", "--target", str(TARGET), "--draft", str(DRAFT), "--prompts",
                 str(few), "--as-loaded-by", "sglang==0.5.10", "--no-aux-capture", "--json"])  # fmt: skip
    assert code == 0
    healthy_row, deployed = json.loads(capsys.readouterr().out)["rows"]
    assert healthy_row["label"] == "healthy"
    assert deployed["label"] == "as deployed: sglang==0.5.10, aux capture off"
    out = deployed["result"]
    assert out["prompts"] == 15 and out["k"] == 5
    assert out["wiring"]["fc_applied"] is False
    assert {"accept_len", "accept_len_ci", "accept_rate", "per_position", "per_position_ci",
            "step0_accuracy", "findings"} <= set(out)  # fmt: skip
    lo, hi = out["accept_len_ci"]
    assert lo <= out["accept_len"] <= hi
    assert "OFFLINE_BELOW_HEALTHY" in {f["code"] for f in deployed["findings"]}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"ids": [1, 99999, 3], "stop_ids": [40]}', "token id 99999 is outside"),
        ('{"ids": [1, 4], "stop_ids": [512]}', "token id 512 is outside"),
        ('{"ids": [1, -5, 3]}', "token id -5 is outside"),
        ('{"ids": []}', "at least one token id"),
    ],
)
def test_cli_prompt_the_target_cannot_take_is_one_line(tmp_path, capsys, line, message):
    """Ids outside the 512-token vocabulary would be an IndexError deep in the embedding."""
    bad = tmp_path / "prompts.jsonl"
    bad.write_text(PROMPTS.read_text().splitlines()[0] + "\n" + line + "\n")
    code = main(["offline", "--target", str(TARGET), "--draft", str(DRAFT), "--prompts", str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert str(bad) in err[0] and "line 2" in err[0] and message in err[0]


def test_prompts_given_as_objects_are_checked_too(target):
    with pytest.raises(KitError, match="prompt 2: token id 600 is outside"):
        healthy(TARGET, DRAFT, prompts=[Prompt([1, 4]), Prompt([1, 600])], target=target)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--aux-layers", "2", "4", "99"], "aux layers [2, 4, 99] outside 0 … 7"),
        (["--device", "tpu"], "unknown device 'tpu'"),
        (["--max-new-tokens", "1"], "max_new_tokens must be at least 2"),
        (["--top-p", "0"], "top_p must be in (0, 1]"),
        (["--no-aux-capture"], "--no-aux-capture needs --engine"),
        (["--matrix", "--no-d2t"], "--matrix runs its own wirings"),
        (["--engine", "vllm"], "'vllm' has no version"),
        (["--count-as", "sglang==0.4.0"], "sglang 0.4.0 is outside the supported range"),
        (
            ["--engine", "sglang==0.5.10", "--prompt-format", "chat", "--prompts", "missing.jsonl"],
            "cannot read prompts",
        ),
    ],
)
def test_cli_bad_option_is_one_line_before_any_work(capsys, monkeypatch, args, message):
    def no_work(*_args, **_kw):
        pytest.fail("the target was loaded before the bad option was refused")

    monkeypatch.setattr("kit.offline_acceptance.target.load_target", no_work)
    code = main(["offline", "--target", str(TARGET), "--draft", str(DRAFT), *args])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert "prompt/s" not in captured.err and "healthy:" not in captured.err  # no bar started


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only message")
def test_cuda_on_a_cpu_only_torch_is_one_clear_error(capsys):
    code = main(["offline", "--target", str(TARGET), "--draft", str(DRAFT), "--device", "cuda"])
    assert code == 2 and "sees no CUDA device" in capsys.readouterr().err


def test_completions_that_end_at_once_leave_no_figure_to_report(target):
    """A finished line's next token is `<nl>`: no verify step, so no accept len (not 1.00)."""
    from train_pair import vocabulary

    ids = {w: i for i, w in enumerate(vocabulary())}
    line = [ids[w] for w in ["<bos>", "the", "big", "cat", "sees", "the", "small", "dog", "."]]
    with pytest.raises(KitError, match="no verify step ran"):
        healthy(TARGET, DRAFT, prompts=[Prompt(line, [ids["<nl>"]])], target=target)


def test_cli_bad_target_is_one_line(tmp_path, capsys):
    code = main(["offline", "--target", str(tmp_path), "--draft", str(DRAFT)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")


def test_committed_prompts_are_what_the_training_script_writes():
    """The held-out prompts come from the script's seeded corpus, never from a training seed."""
    from train_pair import SEED_PROMPTS, SEED_TRAIN, heldout_prompts

    assert SEED_PROMPTS not in (SEED_TRAIN, SEED_TRAIN + 1)
    lines = [json.loads(line) for line in PROMPTS.read_text().splitlines()]
    assert lines == heldout_prompts()


@pytest.mark.parametrize("vocab", [512, 300])
def test_any_transformers_causal_lm_target_runs(tmp_path, prompts, vocab):
    """Not Llama-only: a randomly initialised Qwen2 target (grouped KV heads) runs the same
    evaluation; a target whose vocabulary differs from the draft's is flagged."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=128, intermediate_size=256,
                      num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256, tie_word_embeddings=False)  # fmt: skip
    Qwen2ForCausalLM(cfg).save_pretrained(tmp_path)
    fits = [p for p in prompts[:20] if max(p.ids + p.stop_ids) < vocab]
    r = healthy(tmp_path, DRAFT, prompts=fits, progress=False).result
    assert r.verify_steps > 0 and r.wiring.fc_applied is True
    assert r.accept_len < 1.5  # a random target agrees with nothing the draft learned
    mismatch = [f for f in r.findings if f.code == "VOCAB_MISMATCH"]
    assert bool(mismatch) == (vocab != 512)
    if mismatch:
        assert "512-token vocabulary, the target 300" in mismatch[0].title


class _Terminal:
    """A stderr that says it is a terminal, as a shell's is."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass


def test_progress_bar_only_on_a_terminal(target, prompts, capsys, monkeypatch):
    """Piped stderr (CI logs) gets no progress bar, so no \\r-joined lines; a terminal does."""
    few = {"prompts": prompts[:60], "target": target, "progress": True}
    evaluate(TARGET, DRAFT, **few)
    assert capsys.readouterr().err == ""
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    evaluate(TARGET, DRAFT, **few)
    assert "healthy:" in terminal.text and "\r" in terminal.text


@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.7, "seed": 3}], ids=["greedy", "T0.7"])
def test_a_second_wiring_on_the_same_target_reuses_its_continuation(target, monkeypatch, sampling):
    """The target's text does not depend on the draft: a second evaluation on the loaded target
    continues no prompt again and gives the same counts, draw for draw when sampling; another
    seed is another text, continued anew."""
    from kit.offline_acceptance import measure

    calls = []
    real = measure.continuation
    monkeypatch.setattr(measure, "continuation", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    prompts = load_prompts(PROMPTS)[:24]
    run = dict(prompts=prompts, target=target, progress=False, **sampling)
    first = evaluate(TARGET, DRAFT, **run)
    fresh = len(calls)
    again = evaluate(TARGET, DRAFT, **run)
    assert fresh > 0 and len(calls) == fresh
    assert [c.__dict__ for c in again.result.per_prompt] == [
        c.__dict__ for c in first.result.per_prompt
    ]
    if sampling:
        evaluate(TARGET, DRAFT, **{**run, "seed": 4})
        assert len(calls) == 2 * fresh


def test_greedy_text_is_shared_by_releases_that_count_past_the_stop_and_those_that_do_not(
    target, monkeypatch
):
    """vLLM continues each prompt k tokens past the stop to count the drafts verified there;
    SGLang 0.5.10 does not. Greedy, the shorter text is the longer one's start: after vLLM's run
    SGLang's continues no prompt again, and both give the figures of a text continued afresh."""
    import weakref

    from kit.offline_acceptance import measure

    monkeypatch.setattr(measure, "_CONTINUED", weakref.WeakKeyDictionary())  # this test's own
    lengths = []
    real = measure.continuation
    monkeypatch.setattr(measure, "continuation", lambda *a: lengths.append(a[2]) or real(*a))
    few = {"prompts": load_prompts(PROMPTS)[:8], "target": target, "progress": False}
    releases, fresh = ("vllm==0.32.0", "sglang==0.5.10"), {}
    for release in releases:
        measure._CONTINUED.clear()
        fresh[release] = healthy(TARGET, DRAFT, count_as=release, **few).result.figures()
    assert len(set(lengths)) == 2  # vLLM's text is k tokens longer
    measure._CONTINUED.clear()
    lengths.clear()
    shared = {r: healthy(TARGET, DRAFT, count_as=r, **few).result.figures() for r in releases}
    assert lengths and set(lengths) == {max(lengths)}, lengths  # each group continued once
    assert shared == fresh
