"""`engine-check` on the real vLLM 0.32.0 CPU build: as shipped, with its known sampled defect
corrected at run time, and with defects planted into its own classes (`plants.py`).

As shipped, greedy comes out as the kit predicts, count for count, and the sampled run is the
CPU build's known defect, named with its source. With that one stand-in corrected the whole
engine drafts as expected. Each planted defect is caught from the engine's counters alone and
located where it starts in the chain. The plants run greedy on float32 (exact counts), eager
(no compilation per start), on the first `PROMPTS` prompts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import RELEASE

import kit
from kit.engine_check.verdict import AS_EXPECTED, KNOWN_DEFECT, UNEXPLAINED

HERE = Path(__file__).resolve().parent
PLANTS = HERE / "plants.py"
PROMPTS = 120
BUDGET_S = 300  # the engine check's verdict on this CPU, per engine
SPEC = '\'{"method": "eagle3", "model": "data/pair/draft", "num_speculative_tokens": 5}\''
EAGER = f"vllm serve data/pair/target --dtype float32 --enforce-eager --speculative-config {SPEC}"


def check(tmp_path, plant: str | None = None, *, hook: str | None = None, **kw):
    """The check on the eager float32 line, with a plant of `plants.py` (or any `hook`)."""
    setup = (hook,) if hook else (f"{PLANTS}:{plant}",) if plant else ()
    options = {"temperatures": (0.0,), "launch": EAGER, **kw}
    return kit.engine_check(num_prompts=PROMPTS, setup=setup, workdir=tmp_path, **options)


def only(check_, code: str):
    (f,) = [f for f in check_.findings if f.code == code]
    return f


def test_the_cpu_build_as_shipped(tmp_path):
    """No launch line: the engine's defaults (compiled, prefix caching on), greedy and 0.7, as a
    user runs it after installing; then doctor reads the report."""
    report = tmp_path / "engine-check.json"
    cmd = [sys.executable, "-m", "kit", "engine-check", "--num-prompts", str(PROMPTS),
           "--report", str(report), "--workdir", str(tmp_path / "work"), "--json"]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUDGET_S + 120)
    seconds = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out == json.loads(report.read_text()) and out["release"] == RELEASE
    greedy, sampled = out["runs"]
    assert not greedy["deviation"]["beyond_noise"]  # float32 greedy: the same counts
    assert greedy["engine"]["counts"] == greedy["kit"]["counts"]
    assert sampled["deviation"]["beyond_noise"] and sampled["defect"] == (
        "vllm-cpu-temperatures-unwritten"
    )
    (f,) = [f for f in out["findings"] if f["code"] == KNOWN_DEFECT]
    assert "cpu_triton_utils.py:390-404" in f["source"] and f["root_cause"]
    assert any("greedy as predicted" in e for e in f["evidence"])
    assert seconds < BUDGET_S, seconds
    diagnosis = kit.doctor(engine_check=report)
    assert [c.code for c in diagnosis.root_causes] == [KNOWN_DEFECT]


def test_with_the_cpu_temperatures_written_it_drafts_as_expected(tmp_path):
    """The healthy control of the sampled path: the one stand-in corrected
    (`engine_worker.correct_cpu_expand`), greedy and sampled both as the kit predicts."""
    corrected = f"{HERE / 'engine_worker.py'}:correct_cpu_expand"
    c = check(tmp_path, hook=corrected, temperatures=(0.0, 0.7))
    assert c.verdict == "the engine drafts as expected", [f.title for f in c.findings]
    assert c.findings[0].code == AS_EXPECTED and not any(r.departs for r in c.runs)


def _unexplained(c, key: str, start: int):
    """No known defect of the release matches a plant; the kit's model of it does, and says
    where in the chain it starts."""
    assert KNOWN_DEFECT not in [f.code for f in c.findings]
    f = only(c, UNEXPLAINED)
    assert f.root_cause and f.data["start"] == start, f.evidence
    assert f.data["explanation"]["key"] == key, f.evidence
    return f


def test_a_bonus_token_dropped_from_the_count(tmp_path):
    c = check(tmp_path, "bonus_dropped")
    f = _unexplained(c, "count-one-short", 0)
    assert f.data["pattern"] == "COUNT_SHORT"  # the engine's count misses tokens it emitted
    assert f.data["verify_steps"]["engine"] == f.data["verify_steps"]["kit"]  # not the drafting
    assert f.data["explanation"]["exact"]


def test_draft_positions_off_by_one_behind_a_setting(tmp_path):
    """The steps after the first one position late, only with prefix caching (on by default):
    located at position 1, and --bisect-flags names the setting. The engine's dtype (bfloat16
    for the pair) on a line of one flag: each flag is one more engine start to bisect."""
    line = f"vllm serve data/pair/target --enforce-eager --speculative-config {SPEC}"
    c = check(tmp_path, "positions_late_with_prefix_caching", launch=line, bisect_flags=True)
    f = _unexplained(c, "late-positions", 1)
    assert any("sglang-draft-positions-late" in e for e in f.evidence)  # a lead, not a match
    cleared = [b.label for b in c.bisect if b.clears]
    assert cleared == ["with --no-enable-prefix-caching"], [b.to_dict() for b in c.bisect]


def test_drafts_fed_from_the_wrong_aux_layer(tmp_path):
    c = check(tmp_path, "wrong_aux_layer")
    f = _unexplained(c, "aux-layers", 0)
    assert f.data["explanation"]["layers"] == [2, 4, 6]


def test_a_verify_that_accepts_nothing_after_position_2(tmp_path):
    c = check(tmp_path, "verify_stops_after_2")
    f = _unexplained(c, "verify-stops-at", 2)
    assert f.data["explanation"]["position"] == 2 and f.data["explanation"]["exact"]
    assert c.runs[0].measured.accepted_per_position[2:] == [0, 0, 0]
