"""Every fault the kit models for SGLang that the engine can be given, run in real SGLang on a
CPU (the kit's stand-ins in place of its CUDA kernels), healthy in every release installed.

A scenario holds when the kit's verify-step count for the release is within 1 % of SGLang's own
counters (the engine's figure inside the kit's range where the outcome is undetermined, and the
kit's own comparison agreeing), or, for a draft SGLang does not start with, when the kit says the
server does not start, with SGLang's exception. `doctor` on the draft plus SGLang's own log of
the run names the same root cause, and stays quiet on the healthy one; `kit watch` around the
server sees what the server did. Greedy float32 throughout: the text SGLang emits is the
target's greedy text, whatever the draft, which is the proof that the stand-ins change nothing.

Releases: 0.5.10 (the incident's; v1 worker), 0.5.11 (the last before sgl-project/sglang PR
#25015 "Fix Eagle draft decode positions"; spec v2 worker and overlap scheduler by default),
0.5.12 (the first after it) and 0.5.23 (v2 only; SGLang's CPU kernels in its path). Before the
fix every chain step after the first runs one position late, and the kit's rows for those
releases run it there too (`kit.engines.sglang.forward.DRAFT_POSITIONS`).
"""

from __future__ import annotations

import functools

import pytest
import sglang_drafts as sd
from drafts import DRAFT, PROMPTS, TARGET
from sglang_engine import FIRST_FIXED, Scenario, pythons, release_of, serve_all

NEEDS_VLLM = False  # the suite's conftest lets this file run where vLLM is not installed
RELEASES = ("sglang==0.5.10", "sglang==0.5.11", "sglang==0.5.12", "sglang==0.5.23")
INCIDENT = "sglang==0.5.10"
CHAINS = (1, 2, 3, 5)  # on the first fixed release; 4 is its healthy run


def fixed_for(release: str):
    return functools.partial(sd.fixed, release=release)


SCENARIOS = [
    *(Scenario(f"healthy {r}", r, fixed_for(r), watch=True) for r in RELEASES),
    Scenario("one draft token", INCIDENT, sd.fixed, k=1),
    *(Scenario(f"chain of {k}", FIRST_FIXED, fixed_for(FIRST_FIXED), k=k) for k in CHAINS),
    Scenario("keys as layers.0", INCIDENT, sd.keys_as_layers0, watch=True),
    Scenario("aux capture off", INCIDENT, sd.aux_off),
    Scenario("aux ids shifted", INCIDENT, sd.aux_shifted),
    Scenario("no d2t", INCIDENT, sd.no_d2t),
    Scenario("config refused", INCIDENT, sd.as_shipped),
    Scenario("fc too narrow", INCIDENT, sd.fc_too_narrow),
]
MISSING = sorted({s.release for s in SCENARIOS} - {release_of(p) for p in pythons()})
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"no interpreter with {', '.join(MISSING)}: run make test-engine"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every scenario's server, two at a time (12 minutes on a busy 2-core machine)."""
    return serve_all(SCENARIOS, tmp_path_factory.mktemp("sglang"))


@pytest.fixture(scope="module")
def predict(target):
    """The kit's rows for a draft as a release deploys it, judged against healthy."""
    from kit.offline_acceptance import as_deployed, healthy

    references, rows = {}, {}

    def row(draft, release: str, k: int = 4):
        common = {"prompts": PROMPTS, "target": target, "progress": False, "k": k}
        common["count_as"] = release  # healthy counted as the release counts, to compare
        if (release, k) not in references:
            references[release, k] = healthy(TARGET, DRAFT, **common)
        key = (str(draft), release, k)
        if key not in rows:
            rows[key] = as_deployed(
                TARGET, draft, release, against=references[release, k], **common
            )
        return rows[key]

    return row


def holds(run, predicted) -> None:
    """SGLang's verify steps within 1 % of the kit's, and the kit's own comparison agreeing."""
    from kit.offline_acceptance.engine_rows import engine_against_kit

    assert run.crash is None, run.crash
    assert predicted.result is not None, predicted.crash and predicted.crash.title
    got, want = run.result.verify_steps, predicted.result.verify_steps
    assert abs(got - want) <= 0.01 * got, (
        f"{run.release}: {got} verify steps, the kit {want} ({predicted.label}); accept len "
        f"{run.result.accept_len:.3f} against {predicted.result.accept_len:.3f} "
        f"{predicted.result.accept_len_ci}"
    )
    found = engine_against_kit(predicted, run.measured(predicted))
    assert found.code == "OFFLINE_ENGINE_AGREES", found.evidence


def root_causes(run, **more) -> list[str]:
    """doctor on the draft with SGLang's own log of the run (and `more`, e.g. the target)."""
    import kit

    report = kit.doctor(
        run.draft, engine=run.release, logs=[run.log], target_config=TARGET / "config.json",
        **more,
    )  # fmt: skip
    return [f.code for f in report.root_causes]


@pytest.fixture(scope="module")
def greedy_text(target):
    """The target's own greedy continuation of every prompt, cut at its stop token."""
    import torch

    from kit.offline_acceptance import load_prompts
    from kit.offline_acceptance.measure import completion_len, continuation
    from kit.offline_acceptance.sampling import Sampler

    out = []
    for p in load_prompts(PROMPTS):
        ids = torch.tensor([p.ids])
        with torch.inference_mode():
            cont = continuation(target, ids, 24, Sampler(0.0, 1.0), torch.Generator())[0].tolist()
        out.append(cont[: completion_len(cont, p.stop_ids, 24)])
    return out


# ---------------------------------------------------------------------------------------------
# the stand-ins change nothing


def test_every_server_emits_the_targets_greedy_text(runs, greedy_text):
    """Whatever the draft, keys dropped or states shifted, greedy verification emits the target's
    text: every prompt of every float32 run that served, token for token."""
    served = [r for r in runs.values() if r.crash is None]
    assert len(served) >= len(SCENARIOS) - 2
    for run in served:
        wrong = [i for i, (a, b) in enumerate(zip(run.outputs, greedy_text, strict=True)) if a != b]
        assert not wrong, f"{run.name}: prompts {wrong[:5]} differ from the target's greedy text"


def test_one_draft_token_per_step_is_exactly_the_kits_count(runs, predict):
    """One draft token per step: no chain step, no position to get wrong, so the count is the
    kit's to the step (1168 on the bundled pair)."""
    run = runs["one draft token"]
    predicted = predict(run.draft, run.release, k=1)
    holds(run, predicted)
    assert (run.result.verify_steps, run.result.accepted) == (
        predicted.result.verify_steps,
        predicted.result.accepted,
    )


# ---------------------------------------------------------------------------------------------
# healthy, release by release


@pytest.mark.parametrize("release", RELEASES)
def test_healthy_is_the_kits_prediction_for_the_release(release, runs, predict):
    run = runs[f"healthy {release}"]
    holds(run, predict(run.draft, release))


@pytest.mark.parametrize("release", RELEASES)
def test_healthy_draft_and_its_log_draw_no_root_cause(release, runs):
    assert root_causes(runs[f"healthy {release}"]) == []


@pytest.mark.parametrize("release", RELEASES)
def test_each_logged_rate_is_the_kits_formula_for_the_release(release, runs):
    """SGLang's decode lines, read by `kit acceptance`: every printed accept rate is what the
    kit's table for that release computes from the printed accept len (D = 5 draft tokens)."""
    import kit
    from kit.engines import parse_engine, pick
    from kit.engines.sglang.acceptance import ACCEPT_RATE

    (run,) = kit.analyze_logs([runs[f"healthy {release}"].log], engine=release).runs
    formula = pick(ACCEPT_RATE, parse_engine(release)).value
    assert run.windows
    for w in run.windows:
        assert formula.fits(w.accept_len, w.accept_rate, 5), (w.accept_len, w.accept_rate)


@pytest.mark.parametrize("k", CHAINS)
def test_chains_of_every_length(k, runs, predict):
    run = runs[f"chain of {k}"]
    holds(run, predict(run.draft, run.release, k=k))
    assert len(run.result.per_position) == k


# ---------------------------------------------------------------------------------------------
# faults, on the incident's release


def test_keys_as_layers0_leave_the_decoder_unwritten(runs, predict):
    """0.5.10's loader drops `layers.0.*` without a word: the layer keeps torch.empty memory,
    so the kit gives a range from the floor to the best case, and SGLang lands in it."""
    run = runs["keys as layers.0"]
    assert run.crash is None, run.crash
    predicted = predict(run.draft, run.release)
    assert predicted.result.undetermined and predicted.result.accept_len_range[0] == 1.0
    assert 1.0 <= run.result.accept_len <= predicted.result.accept_len_ci.hi
    assert root_causes(run)[:1] == ["KEYS_SILENTLY_DROPPED"]


def test_aux_capture_off_bypasses_fc(runs, predict):
    run = runs["aux capture off"]
    assert root_causes(run)[:1] == ["FC_BYPASSED"]
    holds(run, predict(run.draft, run.release))


def test_aux_ids_shifted(runs, predict):
    run = runs["aux ids shifted"]
    # the config is the only record of training: only the weights, offline, tell the shift
    assert root_causes(run, target=TARGET, num_prompts=120)[:1] == ["AUX_IDS_SHIFTED"]
    holds(run, predict(run.draft, run.release))


def test_no_d2t(runs, predict):
    run = runs["no d2t"]
    predicted = predict(run.draft, run.release)
    c = predicted.vs_healthy  # draft ids read as target ids: far below healthy, beyond noise
    assert c is not None and c.beyond_noise and c.difference < -1
    assert "D2T_MISSING" in root_causes(run)
    holds(run, predicted)


def test_a_config_sglang_refuses(runs, predict):
    """The bundled draft as it ships (a speculators config): SGLang reads no model_type and
    stops; the kit says this release refuses it and the server does not start."""
    import kit

    run = runs["config refused"]
    assert run.crash is not None and "model_type" in run.crash, run.crash
    predicted = predict(run.draft, run.release)
    refused = next(f for f in predicted.findings if f.code == "UNSUPPORTED_CONFIG")
    assert "the server does not start" in refused.title
    report = kit.doctor(run.draft, engine=run.release, logs=[run.log])
    assert report.root_causes[0].code == "UNSUPPORTED_CONFIG"


def test_a_start_up_crash_is_the_kits_crash_row(runs, predict):
    """fc written for two states where the config names three: the loader's shape check
    raises, and the kit's row is that crash, with the same exception and shapes; doctor puts
    the shape that contradicts the config first, the crash it causes beside it."""
    import kit

    run = runs["fc too narrow"]
    assert run.crash is not None and run.crash.startswith("AssertionError: "), run.crash
    predicted = predict(run.draft, run.release)
    assert predicted.result is None and predicted.crash.code == "STARTUP_CRASH"
    said = " ".join([predicted.crash.title, *predicted.crash.evidence])
    assert "AssertionError" in said and "[128, 256]" in said and "[128, 256]" in run.crash
    found = kit.doctor(run.draft, engine=run.release, logs=[run.log]).findings
    assert found[0].code == "SHAPE_CONTRADICTS_CONFIG"
    assert "fc.weight" in " ".join([found[0].title, *found[0].evidence, str(found[0].data)])
    assert any(f.code == "STARTUP_CRASH" and "[128, 256]" in f.title for f in found)


# ---------------------------------------------------------------------------------------------
# kit watch around a running server


@pytest.mark.parametrize("release", RELEASES)
def test_watch_counts_what_the_server_counted(release, runs):
    """The scheduler's own count, hooked in the running server. The v1 worker (0.5.10) counts
    each request's verify steps once, as the requests report them. Spec v2 with the overlap
    scheduler (0.5.11 on) launches the next batch before the last one's results say who
    finished, and counts the whole batch (0.5.11 managers/scheduler_output_processor_mixin.py:
    416-442, its finished requests skipped only after, :458-462; 0.5.23 scheduler_components/
    batch_result_processor.py:982-991): a request may add one step its response never shows."""
    from kit.watch.report import read_report

    run = runs[f"healthy {release}"]
    report = read_report(run.watch)
    assert report["engine"] == {"name": "sglang", "version": release.split("==")[1]}
    totals, got = report["acceptance"]["totals"], run.result
    if release == INCIDENT:
        assert (totals["drafts"], totals["accepted"]) == (got.verify_steps, got.accepted)
    else:
        assert got.verify_steps <= totals["drafts"] <= got.verify_steps + got.prompts
        assert totals["accepted"] >= got.accepted
    states = {p["state"] for p in report["load"]["params"]}
    assert states == {"written"}, states


def test_watch_names_the_dropped_decoder_first(runs):
    import kit
    from kit.watch.analyze import watch_findings
    from kit.watch.report import read_report

    run = runs["keys as layers.0"]
    found = watch_findings(read_report(run.watch))
    assert found[0].code == "OBSERVED_PARAMS_UNWRITTEN"
    assert "layers.0.self_attn.q_proj.weight" in found[0].data["skipped_keys"]
    report = kit.doctor(watch=run.watch, logs=[run.log])
    assert report.findings[0].code == "OBSERVED_PARAMS_UNWRITTEN"


def test_the_suite_ran_the_releases_it_names():
    assert [release_of(p) for p in pythons()] == list(RELEASES)
