"""`kit watch`: the report, the load recorder, findings from reports recorded on a real vLLM
0.32.0 (tests/watch_reports/), and the wiring (sitecustomize, plugin entry point, exit codes,
signals) with a stand-in engine run by an interpreter that does not have the kit installed."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tomllib
import weakref
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.report.runs import Status, StepResult
from kit.watch.analyze import PREFIX, load_watch_report, render_block, watch_findings
from kit.watch.recorder import LoadRecorder
from kit.watch.report import read_report, update_report
from tests.conftest import DRAFT, ROOT, TARGET

REPORTS = Path(__file__).parent / "watch_reports"
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def faulty_copy(dst: Path, rename=None, config=None) -> Path:
    """The bundled draft with its keys renamed or its config edited."""
    dst.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(DRAFT / "model.safetensors"))
    save_file(
        {(rename(k) if rename else k): v for k, v in tensors.items()},
        str(dst / "model.safetensors"),
    )
    cfg = json.loads((DRAFT / "config.json").read_text())
    if config:
        config(cfg)
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def recorded(name: str, draft: Path = DRAFT) -> dict:
    """A report `watch` wrote on vLLM 0.32.0, pointed at a draft made for this test."""
    text = (REPORTS / f"vllm-0.32.0-{name}.json").read_text()
    text = text.replace("{draft}", str(draft)).replace("{target}", str(TARGET))
    return json.loads(text.replace("{cwd}", str(ROOT)))


def codes(findings) -> list[str]:
    return [f.code for f in findings]


# --- the report ---------------------------------------------------------------------------------


def test_update_merges_sections_atomically(tmp_path):
    path = tmp_path / "r.json"
    update_report(path, {"load": {"keys": [1]}, "status": "running"})
    update_report(path, {"load": {"params": [2]}, "status": "exited"})
    r = read_report(path)
    assert r["load"] == {"keys": [1], "params": [2]}  # one level deep: both writers' parts
    assert r["status"] == "exited" and r["kit_watch"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.json.lock"]  # no temp left


def _writer(path: str, n: int) -> None:
    for i in range(25):
        update_report(path, {"sections": {f"{n}-{i}": i}})


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "r.json")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, n)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert len(read_report(path)["sections"]) == 75


def test_a_bad_report_is_one_clear_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(KitError, match=r"x\.json: not a kit watch report"):
        load_watch_report(bad)
    with pytest.raises(KitError, match="no such watch report"):
        load_watch_report(tmp_path / "missing.json")


# --- the recorder -------------------------------------------------------------------------------


class Fused(torch.nn.Module):
    """Parameters shaped like an engine's: a fused qkv, a norm, one nothing loads."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Parameter(torch.empty(6, 4), requires_grad=False)
        self.norm = torch.nn.Parameter(torch.empty(4), requires_grad=False)
        self.never = torch.nn.Parameter(torch.empty(3), requires_grad=False)

    def load_weights(self, weights) -> None:
        """An engine-style loader: shards narrowed into the fused parameter, unknowns dropped."""
        rows = {"q": 0, "k": 2, "v": 4}
        for name, w in weights:
            if name.endswith("_proj"):
                self.qkv.data.narrow(0, rows[name[0]], 2).copy_(w)
            elif name == "norm":
                self.norm.data.copy_(w)


def test_recorder_names_where_each_key_went_and_what_was_never_written():
    model = Fused()
    weights = {k: torch.randn(2, 4) for k in ("q_proj", "k_proj", "v_proj")}
    weights |= {"norm": torch.ones(4), "t2d.extra": torch.ones(3)}
    before = {n: p.clone() for n, p in model.named_parameters()}
    recorder = LoadRecorder(model.named_parameters())
    with recorder:
        model.load_weights(recorder.watch(weights.items()))
    ev = recorder.evidence()
    went = {k["key"]: k["written_to"] for k in ev["keys"]}
    assert went == {
        "q_proj": ["qkv"],
        "k_proj": ["qkv"],
        "v_proj": ["qkv"],
        "norm": ["norm"],
        "t2d.extra": [],
    }
    states = {p["name"]: p["state"] for p in ev["params"]}
    assert states == {"qkv": "written", "norm": "written", "never": "never_written"}
    shards = {k["key"]: k["regions"] for k in ev["keys"] if k["key"].endswith("_proj")}
    assert shards == {
        "q_proj": [["qkv", 0, 8]],
        "k_proj": [["qkv", 8, 8]],
        "v_proj": [["qkv", 16, 8]],
    }
    assert torch.equal(model.qkv[2:4], weights["k_proj"])  # the loader's writes went through
    assert torch.equal(
        model.never.view(torch.int32), before["never"].view(torch.int32)
    )  # untouched


def test_recorder_sees_a_partly_written_parameter_and_keeps_no_tensor():
    model = Fused()
    recorder = LoadRecorder(model.named_parameters())
    with recorder:
        model.load_weights(recorder.watch([("q_proj", torch.randn(2, 4))]))
    states = {p["name"]: (p["state"], p["written"]) for p in recorder.evidence()["params"]}
    assert states["qkv"] == ("partly_written", 8)
    ref = weakref.ref(model.qkv)
    del model
    assert ref() is None  # the recorder held addresses and counts, not the parameter


# --- findings from reports recorded on vLLM 0.32.0 ------------------------------------------------


def test_healthy_report_is_quiet_and_names_width_and_fc():
    found = watch_findings(recorded("healthy"))
    assert all(f.severity < Severity.WARNING for f in found), codes(found)
    healthy = next(f for f in found if f.code == "OBSERVED_HEALTHY")
    assert healthy.data == {"width": 384, "fc_ran": True}
    assert render_block(found, "draft loaded") == ""


def test_skipped_layer_names_the_unwritten_parameters(tmp_path):
    draft = faulty_copy(
        tmp_path / "d", rename=lambda k: "t2d." + k if k.startswith("layers.0.") else k
    )
    found = watch_findings(recorded("skipped", draft))
    first = found[0]
    assert first.code == "OBSERVED_PARAMS_UNWRITTEN" and first.root_cause
    assert "model.layers.0.self_attn.qkv_proj.weight" in first.data["params"]
    assert "t2d.layers.0.mlp.up_proj.weight" in first.data["skipped_keys"]
    assert any("'weights not initialized" in e for e in first.evidence)
    assert {"OBSERVED_DRAFT_NAN", "OBSERVED_ZERO_ACCEPTANCE"} <= set(codes(found))


def test_aux_capture_off_is_fc_not_run_and_the_kit_disagreement_is_reported_iff_real(tmp_path):
    import kit

    def off(cfg):
        cfg["transformer_layer_config"]["eagle_config"] = {"use_aux_hidden_state": False}

    draft = faulty_copy(tmp_path / "d", config=off)
    found = watch_findings(recorded("noaux", draft))
    assert found[0].code == "OBSERVED_FC_NOT_RUN" and found[0].data["width"] == 128
    skipped = next(f for f in found if f.code == "OBSERVED_KEYS_SKIPPED")
    assert skipped.evidence[1].startswith("llama_eagle3.py:463 maps 'fc.' to nothing")
    assert skipped.evidence[1].endswith(": fc.weight")
    traced = kit.trace(draft, TARGET, "vllm==0.32.0")
    disagree = [f for f in found if f.code == "KIT_MODEL_DISAGREES" and "reached" in f.title]
    assert bool(disagree) == (traced.fc_applied or traced.hidden_width != 128)
    if disagree:
        assert "fc: kit predicts applied; engine: not run" in disagree[0].evidence


def test_an_engine_that_differs_from_the_tables_is_named_with_both_sides():
    report = recorded("healthy")
    report["first_forward"]["width"] = 256  # as a patched fork capturing two layers would
    report["load"]["keys"][2]["written_to"] = []  # fc.weight placed nowhere
    found = watch_findings(report)
    lines = [e for f in found if f.code == "KIT_MODEL_DISAGREES" for e in f.evidence]
    assert "input width: kit predicts 384; engine: 256" in lines
    assert "fc.weight: kit predicts loaded into model.fc.weight; engine: placed nowhere" in lines
    assert all("vllm==0.32.0" in f.title for f in found if f.code == "KIT_MODEL_DISAGREES")


def test_startup_crash_is_the_workers_exception_not_the_front_ends(tmp_path):
    found = watch_findings(recorded("crash"))
    assert found[0].code == "OBSERVED_STARTUP_CRASH" and found[0].root_cause
    assert found[0].title.startswith(
        "the engine failed: ValueError: There is no module or parameter"
    )
    assert "hidden_nrm" in found[0].title


def test_block_is_one_prefixed_block_of_warnings_and_worse(tmp_path):
    draft = faulty_copy(
        tmp_path / "d", rename=lambda k: "t2d." + k if k.startswith("layers.0.") else k
    )
    block = render_block(watch_findings(recorded("skipped", draft)), "draft loaded")
    lines = block.splitlines()
    assert lines and all(line.startswith(PREFIX) for line in lines)
    assert "OBSERVED_PARAMS_UNWRITTEN" in lines[1] and "OBSERVED_ACCEPTANCE" not in block


# --- the wiring: a stand-in engine under an interpreter without the kit ----------------------------

SCHEDULER = '''
class Scheduler:
    """vLLM 0.32's hook point, by name and signature (v1/core/sched/scheduler.py:2961)."""

    def make_spec_decoding_stats(self, stats, num_draft_tokens, num_accepted_tokens,
                                 num_invalid_spec_tokens, request_id):
        return stats
'''

ENGINE = """
import signal, sys, time
import importlib.util
import os
print("kit appended last:", sys.path[-1] == os.environ["KIT_WATCH_ROOT"], flush=True)
from vllm.v1.core.sched.scheduler import Scheduler
s = Scheduler()
for accepted in (2, 0, 5):
    s.make_spec_decoding_stats(None, 5, accepted, {"r": 1} if accepted == 0 else None, "r")
print("engine output, unchanged", flush=True)
if sys.argv[1:] == ["wait"]:
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))
    print("ready", flush=True)
    time.sleep(60)
sys.exit(3)
"""


@pytest.fixture
def fake_engine(tmp_path) -> dict[str, str]:
    """A `vllm` package with the scheduler hook point, and the environment to run it."""
    pkg = tmp_path / "engine" / "vllm" / "v1" / "core" / "sched"
    pkg.mkdir(parents=True)
    for folder in [pkg, *pkg.parents][:4]:
        (folder / "__init__.py").write_text("")
    (tmp_path / "engine" / "vllm" / "__init__.py").write_text('__version__ = "0.32.0"\n')
    (pkg / "scheduler.py").write_text(SCHEDULER)
    (tmp_path / "engine.py").write_text(ENGINE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env | {"PYTHONPATH": str(tmp_path / "engine"), "KIT_WATCH_INTERVAL": "0.1"}


def _watch(tmp_path, env, *args, **kw):
    report = tmp_path / "kit-watch.json"
    cmd = [sys.executable, "-m", "kit", "watch", "--report", str(report), "--"]
    cmd += [BASE_PYTHON, str(tmp_path / "engine.py"), *args]
    return report, subprocess.Popen(
        cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True, **kw
    )


def test_watch_instruments_a_command_without_the_kit_installed(tmp_path, fake_engine):
    bare = [BASE_PYTHON, "-c", "import importlib.util as u; print(u.find_spec('kit') is None)"]
    assert subprocess.run(bare, cwd=tmp_path, capture_output=True, text=True).stdout == "True\n"
    report, proc = _watch(tmp_path, fake_engine)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3  # the command's own exit code
    assert out.splitlines() == ["kit appended last: True", "engine output, unchanged"]
    r = read_report(report)
    assert r["acceptance"]["totals"] == {
        "drafts": 3, "draft_tokens": 14, "accepted": 7, "per_position": [2, 2, 1, 1, 1]
    }  # fmt: skip
    assert r["status"] == "exited" and r["exit_code"] == 3
    assert any(f["code"] == "OBSERVED_ACCEPTANCE" for f in r["findings"])


SGLANG_SCHEDULER = '''
class Scheduler:
    """sglang 0.5.10's hook points, by name, signature and call order: process_batch_result_decode
    counts each decode batch through update_spec_metrics (managers/scheduler_output_processor_mixin
    .py:374,426), which adds to the two figures the decode log divides (observability/
    scheduler_metrics_mixin.py:180-183,614-616)."""

    def __init__(self, server_args):
        self.server_args = server_args
        self.spec_num_accepted_tokens = self.spec_num_forward_ct = 0

    def update_spec_metrics(self, bs, num_accepted_tokens):
        self.spec_num_accepted_tokens += num_accepted_tokens + bs
        self.spec_num_forward_ct += bs

    def process_batch_result_decode(self, batch, result):
        self.update_spec_metrics(len(batch.reqs), result.num_accepted_tokens)
'''

SGLANG_ENGINE = """
import sys
from types import SimpleNamespace as NS
from sglang.srt.managers.scheduler import Scheduler
s = Scheduler(NS(speculative_num_steps=3, speculative_num_draft_tokens=None))  # D = 3 + 1
for lengths in ([3, 0], [1, 2, 3]):
    result = NS(num_accepted_tokens=sum(lengths), accept_length_per_req_cpu=lengths)
    s.process_batch_result_decode(NS(reqs=[None] * len(lengths)), result)
s.process_batch_result_decode(NS(reqs=[None]), NS(num_accepted_tokens=0, accept_length_per_req_cpu=[]))
s.update_spec_metrics(2, 1)  # counted outside a decode result: no split to take
s.update_spec_metrics(0, 0)  # an empty batch counts nothing
print(f"accept len {s.spec_num_accepted_tokens / s.spec_num_forward_ct:.4f}", flush=True)
"""


def test_sglang_acceptance_is_the_schedulers_own_count_split_by_request(tmp_path):
    pkg = tmp_path / "engine" / "sglang" / "srt" / "managers"
    pkg.mkdir(parents=True)
    for folder in [pkg, *pkg.parents][:3]:
        (folder / "__init__.py").write_text("")
    (tmp_path / "engine" / "sglang" / "__init__.py").write_text('__version__ = "0.5.10"\n')
    (pkg / "scheduler.py").write_text(SGLANG_SCHEDULER)
    (tmp_path / "engine.py").write_text(SGLANG_ENGINE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(tmp_path / "engine"), "KIT_WATCH_INTERVAL": "0.1"}
    report, proc = _watch(tmp_path, env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    r = read_report(report)
    totals = r["acceptance"]["totals"]
    assert totals == {
        "drafts": 8, "draft_tokens": 24, "accepted": 10, "per_position": [4, 3, 2],
        "unsplit_drafts": 3,
    }  # fmt: skip
    engine_len = float(out.split("accept len ")[1])
    assert round(1 + totals["accepted"] / totals["drafts"], 4) == engine_len
    assert r["engine"] == {"name": "sglang", "version": "0.5.10"}
    found = next(f for f in r["findings"] if f["code"] == "OBSERVED_ACCEPTANCE")
    assert found["engine"] == "sglang==0.5.10"
    assert found["source"].startswith("0.5.10 observability/scheduler_metrics_mixin.py:180")
    assert "over the 5 drafts counted per request: [0.8, 0.6, 0.4] (3 more" in found["evidence"][1]
    rate = f"{engine_len / 4:.2f}"  # 0.5.10's decode log: accept len / D, D = 3 + 1 here
    assert found["evidence"][2].startswith(
        f"over the whole run, SGLang's decode log would print accept len {engine_len:.2f}, "
        f"accept rate {rate} (accept_len / D, D = 4; "
    )


SGLANG_COMPONENTS = {
    "managers/scheduler_components/metrics_reporter.py": '''
class SchedulerMetricsReporter:
    """sglang 0.5.23's counter (managers/scheduler_components/metrics_reporter.py:543)."""

    def __init__(self):
        self.spec_num_accept_tokens = self.spec_num_forward_ct = 0

    def update_spec_metrics(self, bs, num_correct_drafts, num_accept_tokens, num_block_accept_tokens=0):
        self.spec_num_accept_tokens += num_accept_tokens
        self.spec_num_forward_ct += bs
''',
    "managers/scheduler_components/batch_result_processor.py": '''
class SchedulerBatchResultProcessor:
    """sglang 0.5.23's decode path (batch_result_processor.py:952,986)."""

    def __init__(self, reporter):
        self.metrics_reporter = reporter

    def process_batch_result_decode(self, batch, result):
        bs = len(batch.reqs)
        self.metrics_reporter.update_spec_metrics(
            bs, result.num_correct_drafts, num_accept_tokens=result.num_correct_drafts + bs)
''',
    "runtime_context.py": """
from types import SimpleNamespace

def get_spec():
    return SimpleNamespace(speculative_num_steps=3, speculative_num_draft_tokens=6)
""",
    "managers/scheduler.py": '''
class Scheduler:
    """Still there in 0.5.23, without the count: a hook placed here would see nothing."""
''',
}

SGLANG_COMPONENTS_ENGINE = """
from types import SimpleNamespace as NS
from sglang.srt.managers.scheduler_components.batch_result_processor import (
    SchedulerBatchResultProcessor)
from sglang.srt.managers.scheduler_components.metrics_reporter import SchedulerMetricsReporter
r = SchedulerMetricsReporter()
p = SchedulerBatchResultProcessor(r)
for lengths in ([2, 1], [0, 3]):  # accept_length_per_req_cpu: a dLLM block length there
    result = NS(num_correct_drafts=3, num_correct_drafts_per_req_cpu=lengths,
                accept_length_per_req_cpu=[3, 0])
    p.process_batch_result_decode(NS(reqs=[None, None]), result)
print(f"accept len {r.spec_num_accept_tokens / r.spec_num_forward_ct:.4f}", flush=True)
"""


def _fake_sglang(tmp_path, version: str, files: dict[str, str], engine: str) -> dict[str, str]:
    """An `sglang` package at `version` with `files` under srt/, and the environment to run it."""
    root = tmp_path / "engine" / "sglang"
    for rel, text in files.items():
        path = root / "srt" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [p for p in root.rglob("*") if p.is_dir()] + [root]:
        (folder / "__init__.py").touch()
    (root / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (tmp_path / "engine.py").write_text(engine)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env | {"PYTHONPATH": str(tmp_path / "engine"), "KIT_WATCH_INTERVAL": "0.1"}


def test_sglang_0_5_23_is_counted_in_its_metrics_reporter_by_num_correct_drafts(tmp_path):
    env = _fake_sglang(tmp_path, "0.5.23", SGLANG_COMPONENTS, SGLANG_COMPONENTS_ENGINE)
    report, proc = _watch(tmp_path, env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    r = read_report(report)
    totals = r["acceptance"]["totals"]  # per position from [2, 1], [0, 3]; not the block lengths
    assert totals == {"drafts": 4, "draft_tokens": 20, "accepted": 6, "per_position": [3, 2, 1]}
    engine_len = float(out.split("accept len ")[1])
    assert round(1 + totals["accepted"] / totals["drafts"], 4) == engine_len
    found = next(f for f in r["findings"] if f["code"] == "OBSERVED_ACCEPTANCE")
    assert found["source"].startswith("0.5.23 managers/scheduler_components/metrics_reporter.py")
    assert "((accept_len - 1) / (D - 1), D = 6; " in found["evidence"][2]  # D from get_spec()


SGLANG_0_5_13 = {
    "managers/scheduler_components/metrics_reporter.py": '''
from types import SimpleNamespace as NS

class SchedulerMetricsReporter:
    """sglang 0.5.13's counter (metrics_reporter.py:347), D from its scheduler (:713-718)."""

    def __init__(self):
        self.spec_num_accept_tokens = self.spec_num_forward_ct = 0
        args = NS(speculative_num_steps=2, speculative_num_draft_tokens=None)  # D = 2 + 1
        self.scheduler = NS(server_args=args)

    def update_spec_metrics(self, bs, num_correct_drafts):
        self.spec_num_accept_tokens += num_correct_drafts + bs
        self.spec_num_forward_ct += bs
''',
    "managers/scheduler_components/batch_result_processor.py": SGLANG_COMPONENTS[
        "managers/scheduler_components/batch_result_processor.py"
    ].replace(", num_accept_tokens=result.num_correct_drafts + bs", ""),
    "managers/scheduler.py": SGLANG_COMPONENTS["managers/scheduler.py"],
}  # no runtime_context.py: 0.5.13 has none


def test_sglang_0_5_13_is_counted_in_its_metrics_reporter_with_d_from_its_scheduler(tmp_path):
    engine = SGLANG_COMPONENTS_ENGINE.replace("[0, 3]", "[0, 2]").replace(
        "num_correct_drafts=3", "num_correct_drafts=sum(lengths)"
    )
    env = _fake_sglang(tmp_path, "0.5.13", SGLANG_0_5_13, engine)
    report, proc = _watch(tmp_path, env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    r = read_report(report)
    totals = r["acceptance"]["totals"]  # per position from [2, 1], [0, 2], 2 drafted per step
    assert totals == {"drafts": 4, "draft_tokens": 8, "accepted": 5, "per_position": [3, 2]}
    engine_len = float(out.split("accept len ")[1])
    assert round(1 + totals["accepted"] / totals["drafts"], 4) == engine_len
    found = next(f for f in r["findings"] if f["code"] == "OBSERVED_ACCEPTANCE")
    assert found["source"].startswith("0.5.13 managers/scheduler_components/metrics_reporter.py")


def test_sglang_0_5_11_splits_by_its_renamed_per_request_list(tmp_path):
    engine = SGLANG_ENGINE.replace("accept_length_per_req_cpu", "num_accepted_drafts_per_req_cpu")
    files = {"managers/scheduler.py": SGLANG_SCHEDULER}
    env = _fake_sglang(tmp_path, "0.5.11", files, engine)
    report, proc = _watch(tmp_path, env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    r = read_report(report)
    assert r["acceptance"]["totals"]["per_position"] == [4, 3, 2]  # 5 drafts split, 3 in sum only
    assert r["acceptance"]["totals"]["unsplit_drafts"] == 3
    found = next(f for f in r["findings"] if f["code"] == "OBSERVED_ACCEPTANCE")
    assert found["source"].startswith("0.5.11 observability/scheduler_metrics_mixin.py:191")


@pytest.mark.parametrize(
    ("version", "per_request"),
    [
        ("0.5.6", None), ("0.5.9", None), ("0.5.10", "accept_length_per_req_cpu"),
        ("0.5.11", "num_accepted_drafts_per_req_cpu"), ("0.5.12", "num_correct_drafts_per_req_cpu"),
        ("0.5.22", "num_correct_drafts_per_req_cpu"), ("0.5.23", "num_correct_drafts_per_req_cpu"),
        ("0.6.0+cpu", "num_correct_drafts_per_req_cpu"),
    ],
)  # fmt: skip
def test_sglang_count_sites_cover_their_ranges_once(version, per_request):
    from kit.watch.sglang_sites import COUNT_SITES, site_for

    row = site_for(version)
    assert row is not None and row.value.per_request == per_request
    assert row.source.startswith(row.versions.first + " ")  # each row cites its first release
    assert sum(site_for(version) is r for r in COUNT_SITES) == 1


# Each release's counting as its wheel has it: the class holding update_spec_metrics, the file
# the row must cite for it, the per-request list, and where its decode log reads D from.
MIXIN, REPORTER_PY = "observability/scheduler_metrics_mixin.py", "metrics_reporter.py"
SGLANG_RELEASE_SITES = [
    ("0.5.11", "Scheduler", MIXIN, "num_accepted_drafts_per_req_cpu", "server_args"),
    ("0.5.12", "Scheduler", MIXIN, "num_correct_drafts_per_req_cpu", "server_args"),
    ("0.5.12.post1", "Scheduler", MIXIN, "num_correct_drafts_per_req_cpu", "server_args"),
    ("0.5.13", "SchedulerMetricsReporter", REPORTER_PY, "num_correct_drafts_per_req_cpu",
     "scheduler"),
    ("0.5.16", "SchedulerMetricsReporter", REPORTER_PY, "num_correct_drafts_per_req_cpu",
     "scheduler"),
    ("0.5.17", "SchedulerMetricsReporter", REPORTER_PY, "num_correct_drafts_per_req_cpu", "spec"),
    ("0.5.19", "SchedulerMetricsReporter", REPORTER_PY, "num_correct_drafts_per_req_cpu", "spec"),
    ("0.5.20", "SchedulerMetricsReporter", REPORTER_PY, "num_correct_drafts_per_req_cpu", "spec"),
    ("0.5.22", "SchedulerMetricsReporter", REPORTER_PY, "num_correct_drafts_per_req_cpu", "spec"),
    ("0.5.23", "SchedulerMetricsReporter", REPORTER_PY, "num_correct_drafts_per_req_cpu", "spec"),
]  # fmt: skip


@pytest.mark.parametrize(("version", "counter", "cited", "per_request", "d_from"),
                         SGLANG_RELEASE_SITES)  # fmt: skip
def test_sglang_each_release_is_hooked_where_its_wheel_counts(
    monkeypatch, version, counter, cited, per_request, d_from
):
    from types import ModuleType
    from types import SimpleNamespace as NS

    from kit.watch.sglang_sites import site_for

    spec = ModuleType("sglang.srt.runtime_context")
    spec.get_spec = lambda: NS(speculative_num_steps=1, speculative_num_draft_tokens=6)
    monkeypatch.setitem(sys.modules, "sglang.srt.runtime_context", spec)
    # one object answering every way a release reads D, each with its own D: 4, 5 or 6
    own = NS(speculative_num_steps=1, speculative_num_draft_tokens=4)
    counting = NS(server_args=own, scheduler=NS(server_args=NS(speculative_num_steps=4)))
    row = site_for(version)
    assert row is not None and row.value.counter.split(":")[1] == counter
    decoder = "Scheduler" if counter == "Scheduler" else "SchedulerBatchResultProcessor"
    assert row.value.decoder.split(":")[1] == decoder
    assert row.value.per_request == per_request and per_request in row.source
    assert row.source.split(" ")[1].split(":")[0].endswith(cited)
    assert row.value.drafted(counting) == {"server_args": 3, "scheduler": 4, "spec": 5}[d_from]


def test_sglang_0_5_23_reads_d_from_its_scheduler_where_no_spec_bag_is_published():
    from types import SimpleNamespace as NS

    from kit.watch.sglang_sites import site_for

    args = NS(speculative_num_steps=3, speculative_num_draft_tokens=None)  # D = 3 + 1
    assert site_for("0.5.23").value.drafted(NS(scheduler=NS(server_args=args))) == 3


@pytest.mark.parametrize("version", ["0.4.10", "0.5.5", "unknown", ""])
def test_sglang_releases_outside_the_table_get_no_counting_hook(version):
    from kit.watch.sglang_sites import site_for

    assert site_for(version) is None


def test_sglang_zero_acceptance_is_critical_with_the_engines_counts():
    report = {
        "engine": {"name": "sglang", "version": "0.5.10"},
        "acceptance": {"totals": {"drafts": 4, "draft_tokens": 12, "accepted": 0,
                                  "per_position": []}},
    }  # fmt: skip
    (found,) = watch_findings(report, compare=False)
    assert found.code == "OBSERVED_ZERO_ACCEPTANCE" and found.severity == Severity.CRITICAL
    assert found.engine == "sglang==0.5.10" and "update_spec_metrics" in found.source
    assert found.evidence[1] == "per-position acceptance: []"
    assert "accept len 1.00, accept rate 0.25 (accept_len / D, D = 4;" in found.evidence[2]


@pytest.mark.parametrize(
    ("version", "said"),
    [
        ("0.5.11", "accept rate 0.50 ((accept_len - 1) / (D - 1), D = 3;"),  # drafts only
        ("0.4.10", "accept len 2.00 and no accept rate (0.4.10 managers/"),
        ("0.3.0", "(no accept-rate rule of the kit's covers this release)"),
    ],
)
def test_sglang_log_figures_follow_the_releases_formula(version, said):
    from kit.watch.observed import sglang_log_figures

    report = {"engine": {"name": "sglang", "version": version}}
    assert said in sglang_log_figures(report, 2.0, 10, 20)


def test_watch_forwards_signals_to_the_command(tmp_path, fake_engine):
    report, proc = _watch(tmp_path, fake_engine, "wait")
    assert proc.stdout.readline().startswith("kit appended last")
    while proc.stdout.readline().strip() != "ready":
        pass
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == 7  # the command caught the forwarded SIGTERM and chose its code
    assert read_report(report)["exit_code"] == 7


def test_watch_without_a_command_is_one_clear_error():
    out = subprocess.run(
        [sys.executable, "-m", "kit", "watch", "--"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: watch: no command given; use python -m kit watch -- COMMAND …"
    ]


def test_an_unwritable_report_is_one_clear_error_and_nothing_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    marker = tmp_path / "ran"
    cmd = [sys.executable, "-m", "kit", "watch", "--report", str(blocker / "r.json"), "--"]
    cmd += ["touch", str(marker)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and not marker.exists()
    assert out.stderr.startswith("error: ") and "cannot write the watch report" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_vllm_plugin_entry_point_is_declared_and_inert_without_a_report():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = meta["project"]["entry-points"]["vllm.general_plugins"]["kit_watch"]
    assert target == "kit.watch.boot:vllm_plugin"
    probe = (
        "import os, sys; os.environ.pop('KIT_WATCH_REPORT', None)\n"
        "from kit.watch import boot; boot.vllm_plugin()\n"
        "print(boot._installed, any(type(f).__name__ == '_Finder' for f in sys.meta_path))\n"
        "os.environ['KIT_WATCH_REPORT'] = 'r.json'; boot.vllm_plugin()\n"
        "print(boot._installed, any(type(f).__name__ == '_Finder' for f in sys.meta_path))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "False", "True", "True"], out.stderr


# --- as evidence: doctor --watch, run --watch, the postmortem --------------------------------------


def _skipped_report(tmp_path) -> Path:
    draft = faulty_copy(
        tmp_path / "d", rename=lambda k: "t2d." + k if k.startswith("layers.0.") else k
    )
    path = tmp_path / "kit-watch.json"
    path.write_text(json.dumps(recorded("skipped", draft)))
    return path


def test_doctor_watch_ranks_the_observed_fault_above_every_prediction(tmp_path):
    import kit

    report = kit.doctor(watch=_skipped_report(tmp_path))  # draft, target, release: the report's
    found = report.findings
    assert report.engine == "vllm==0.32.0"
    assert found[0].code == "OBSERVED_PARAMS_UNWRITTEN"
    observed = [i for i, f in enumerate(found) if f.code.startswith("OBSERVED_")]
    predicted = [i for i, f in enumerate(found) if not f.code.startswith("OBSERVED_")]
    assert predicted and max(observed) < min(predicted)  # the kit's own replay ran, and ranks below
    assert report.facts["observed_width"] == 384 and report.facts["observed_accept_len"] == 1.0


def test_doctor_watch_on_the_command_line(tmp_path):
    path = _skipped_report(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "kit", "doctor", "--watch", str(path), "--json"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["findings"][0]["code"] == "OBSERVED_PARAMS_UNWRITTEN"


def test_run_and_postmortem_show_the_observed_evidence_first(tmp_path):
    from kit.report.postmortem import render
    from kit.report.runs import Run, load_run

    observed = watch_findings(recorded("noaux", faulty_copy(tmp_path / "d")))
    predicted = Finding(
        code="PARAM_LEFT_AT_INIT", severity=Severity.CRITICAL, title="p", root_cause=True
    )
    records = {"findings": [predicted.to_dict()]}
    step = StepResult("02_load_weights_simulation", Status.OK, records=records)
    run = Run({"watch": "kit-watch.json"}, [step], 1.0, observed)
    assert (
        run.findings[0].code == "OBSERVED_FC_NOT_RUN"
        and run.findings[-1].code == "PARAM_LEFT_AT_INIT"
    )
    (tmp_path / "run.json").write_text(json.dumps(run.to_dict()))
    assert [f.code for f in load_run(tmp_path).observed] == [f.code for f in observed]
    page = render(run)
    assert "Observed in the running engine" in page and "OBSERVED_FC_NOT_RUN" in page
    assert page.index("OBSERVED_FC_NOT_RUN") < page.index("PARAM_LEFT_AT_INIT")
