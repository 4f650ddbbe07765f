"""`kit watch`'s SGLang hooks against SGLang's own classes, once per interpreter in SGLANG_PYTHON
(exercised: sglang 0.5.10, 0.5.11, 0.5.12 and 0.5.23, each from its wheel).

The hooks on a running server are `test_sglang_scenarios.py`'s (its servers run under `kit
watch`); this file drives single classes, which pins each release's counting site on batches
chosen to cover every case. It builds SGLang's real `LlamaForCausalLMEagle3` on CPU (gloo, one
rank, `SGLANG_USE_CPU_ENGINE=1`), hands the real `load_weights` the bundled draft's
tensors and calls the real draft `LlamaModel.forward` on an empty batch (the idle-batch path, after
its fc gate); these load checks are written for 0.5.10 and 0.5.11. The acceptance counts go
through the release's real decode path with real `Req`s, `ScheduleBatch`, `GenerationBatchResult`,
KV allocator and cache: up to 0.5.22, `Scheduler.process_batch_result_decode` of a `Scheduler`
made without its `__init__` (which would load a model); from 0.5.23, the scheduler's components
(`SchedulerBatchResultProcessor`, `SchedulerMetricsReporter`, ...). The release's real counter
counts, and its real decode log prints `accept len`. SGLANG_PYTHON: interpreters with sglang
importable, os.pathsep-separated (`make test-engine` sets the venvs it builds); skipped
without one. vLLM is not needed (`NEEDS_VLLM = False` for the suite's conftest).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
TARGET, DRAFT = ROOT / "data/pair/target", ROOT / "data/pair/draft"
NEEDS_VLLM = False  # the suite's conftest lets this file run where vLLM is not installed
PYTHONS = [p for p in os.environ.get("SGLANG_PYTHON", "").split(os.pathsep) if p]


@functools.cache
def release_of(python: str) -> str:
    """The sglang release an interpreter imports (from its metadata: importing sglang is slow)."""
    ask = "import importlib.metadata as m; print(m.version('sglang'))"
    out = subprocess.run([python, "-c", ask], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{python}: no sglang: {out.stderr[-500:]}"
    return out.stdout.strip()


NONE_SET = pytest.mark.skip(reason="no interpreter with sglang: set SGLANG_PYTHON (os.pathsep)")


@pytest.fixture(
    scope="module",
    params=[pytest.param(p, id=release_of(p)) for p in PYTHONS]
    or [pytest.param(None, marks=NONE_SET)],
)
def sglang(request) -> tuple[str, str]:
    """(interpreter, sglang release): every test runs once per interpreter in SGLANG_PYTHON."""
    return request.param, release_of(request.param)


EXERCISE = """
import json, os, sys, types
from pathlib import Path
import torch

if __name__ == "__main__":
    from kit.watch import boot
    assert boot.install()
    draft, width, target = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    from sglang.srt.distributed import parallel_state as ps
    ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                    distributed_init_method="file://" + sys.argv[4])
    ps.initialize_model_parallel(1, 1)
    from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler
    set_global_server_args_for_scheduler(ServerArgs(model_path=target, device="cpu"))
    from transformers import LlamaConfig
    cfg = json.loads((draft / "config.json").read_text())
    layer = {k: v for k, v in cfg["transformer_layer_config"].items() if k != "model_type"}
    config = LlamaConfig(**layer)
    config.draft_vocab_size = cfg["draft_vocab_size"]
    from sglang.srt.models.llama_eagle3 import LlamaForCausalLMEagle3
    model = LlamaForCausalLMEagle3(config)
    from safetensors.torch import load_file
    model.load_weights(load_file(str(draft / "model.safetensors")).items())
    spec = types.SimpleNamespace(hidden_states=torch.zeros(0, width))
    empty = torch.zeros(0, dtype=torch.long)
    model.model(empty, empty, types.SimpleNamespace(spec_info=spec), input_embeds=torch.zeros(0, 128))
    print("exercised", type(model).__name__)
"""


def cpu_env(report: Path) -> dict[str, str]:
    """SGLang's CPU launch as every SGLang run in this suite has it: its CPU switches and the
    kit's stand-ins (`sgl_kernel`, whose CUDA build loads libcuda.so.1 at import; torchvision,
    whose PyPI build does not load beside torch's CPU build), plus `kit watch`'s report."""
    from kit.engines.sglang.cpu import launch_env

    return launch_env({**os.environ, "KIT_WATCH_REPORT": str(report), "PYTHONPATH": str(ROOT)})


def exercise(python: str, tmp_path: Path, draft: Path, width: int) -> dict:
    if legacy_map(python):  # not a pass: these checks did not run there
        pytest.skip(
            "load checks written for 0.5.10/0.5.11: from 0.5.12 the decoder layer is layers.0 "
            "with midlayer.* mapped onto it (0.5.12 models/llama_eagle3.py:293-346; 0.5.23 "
            ":199,338-339), so the drop does not happen there, and 0.5.23 needs a published "
            "runtime context before initialize_model_parallel()"
        )
    script = tmp_path / "exercise.py"
    script.write_text(EXERCISE)
    report = tmp_path / "kit-watch.json"
    env = cpu_env(report)
    cmd = [python, str(script), str(draft), str(width), str(TARGET), str(tmp_path / "init")]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "exercised LlamaForCausalLMEagle3" in out.stdout, out.stderr[-3000:]
    return json.loads(report.read_text())


def midlayer_copy(dst: Path) -> Path:
    """The bundled draft with SGLang's module name for the decoder layer."""
    dst.mkdir()
    tensors = load_file(str(DRAFT / "model.safetensors"))
    renamed = {k.replace("layers.0.", "midlayer."): v for k, v in tensors.items()}
    save_file(renamed, str(dst / "model.safetensors"))
    (dst / "config.json").write_text((DRAFT / "config.json").read_text())
    return dst


def test_keys_sglang_drops_without_a_word_are_named(sglang, tmp_path):
    from kit.watch.analyze import watch_findings

    report = exercise(sglang[0], tmp_path, DRAFT, 384)
    assert report["engine"] == {"name": "sglang", "version": sglang[1]}
    states = {p["name"]: p["state"] for p in report["load"]["params"]}
    assert states["model.midlayer.self_attn.qkv_proj.weight"] == "never_written"
    assert states["model.fc.weight"] == "written"
    found = watch_findings(report)
    assert found[0].code == "OBSERVED_PARAMS_UNWRITTEN"
    assert "layers.0.self_attn.q_proj.weight" in found[0].data["skipped_keys"]
    assert "d2t" not in found[0].data["skipped_keys"]  # consumed as hot_token_id


def test_midlayer_names_load_whole_and_fc_runs_at_three_states(sglang, tmp_path):
    report = exercise(sglang[0], tmp_path, midlayer_copy(tmp_path / "d"), 384)
    assert all(p["state"] == "written" for p in report["load"]["params"])
    assert (report["first_forward"]["width"], report["first_forward"]["fc_ran"]) == (384, True)


def test_one_state_wide_input_skips_fc_by_sglangs_shape_gate(sglang, tmp_path):
    report = exercise(sglang[0], tmp_path, midlayer_copy(tmp_path / "d"), 128)
    assert (report["first_forward"]["width"], report["first_forward"]["fc_ran"]) == (128, False)


SCHEDULE = """
import dataclasses, json, logging, sys
from types import SimpleNamespace
import torch

if __name__ == "__main__":
    from kit.watch import boot
    assert boot.install()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
    target, batches = sys.argv[1], json.loads(sys.argv[2])
    from sglang.srt.managers.scheduler import Scheduler, SenderWrapper
    from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.mem_cache.allocator import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.chunk_cache import ChunkCache
    from sglang.srt.disaggregation.utils import DisaggregationMode
    from sglang.srt.sampling.sampling_params import SamplingParams
    from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    fields = {f.name for f in dataclasses.fields(GenerationBatchResult)}
    total, per_req = ("num_accepted_tokens", "accept_length_per_req_cpu")  # 0.5.10
    if "num_accepted_drafts" in fields:  # 0.5.11 managers/utils.py:30-31
        total, per_req = ("num_accepted_drafts", "num_accepted_drafts_per_req_cpu")
    if "num_correct_drafts" in fields:  # 0.5.12 managers/utils.py:30-31
        total, per_req = ("num_correct_drafts", "num_correct_drafts_per_req_cpu")
    args = ServerArgs(model_path=target, device="cpu")
    args.speculative_num_steps, args.speculative_num_draft_tokens = 3, 6  # a tree: D != steps + 1
    args.decode_log_interval = len(batches)  # one decode log line over every batch
    set_global_server_args_for_scheduler(args)
    s = Scheduler.__new__(Scheduler)  # one rank, no model: what init_metrics and the decode path read
    s.server_args, s.device, s.attn_tp_rank, s.dp_rank = args, "cpu", 0, 0
    s.enable_kv_cache_events = s.is_hybrid_swa = s.is_hybrid_ssm = False
    s.enable_hisparse = False  # read by 0.5.11's pool stats
    s.init_metrics(0, 0, None)
    s.is_generation, s.enable_overlap, s.enable_overlap_mlx = True, False, False  # mlx: 0.5.11
    s.spec_algorithm = SpeculativeAlgorithm.EAGLE3
    s.disaggregation_mode = DisaggregationMode.NULL
    s.send_to_detokenizer = SenderWrapper(None)
    s.waiting_queue, s.max_total_num_tokens, s.max_running_requests = [], 64, 8
    s.token_to_kv_pool_allocator = TokenToKVPoolAllocator(64, torch.float32, "cpu", None, False)
    s.tree_cache = ChunkCache(CacheInitParams(disable=True, req_to_token_pool=None,
        token_to_kv_pool_allocator=s.token_to_kv_pool_allocator, page_size=1))
    s.draft_worker = SimpleNamespace(speculative_num_draft_tokens=6)
    s.model_config = SimpleNamespace(think_end_id=None)  # read by 0.5.11 per token
    for overlap, accepted in batches:
        reqs = []
        for i in range(len(accepted)):
            sampling = SamplingParams(max_new_tokens=100)
            sampling.normalize(None)
            reqs.append(Req(f"r{i}", "", [1, 2, 3], sampling, vocab_size=1000))
        s.enable_overlap = overlap
        batch = ScheduleBatch(reqs=reqs, spec_algorithm=SpeculativeAlgorithm.EAGLE3,
                              enable_overlap=overlap)
        s.running_batch = batch
        if overlap:  # spec v2: the scheduler resolves accept_lens (bonus token included)
            result = GenerationBatchResult(next_token_ids=torch.arange(6 * len(accepted)),
                                           accept_lens=torch.tensor([a + 1 for a in accepted]))
        else:  # spec v1: the EAGLE worker's verify output, by the release's field names
            result = GenerationBatchResult(
                next_token_ids=torch.arange(sum(accepted) + len(accepted)),
                **{total: sum(accepted), per_req: list(accepted)})
        s.process_batch_result_decode(batch, result)
    print("exercised")
"""


# From 0.5.23 the scheduler is split into components: the decode path is
# `SchedulerBatchResultProcessor.process_batch_result_decode` (managers/scheduler_components/
# batch_result_processor.py:952), counting through `SchedulerMetricsReporter.update_spec_metrics`
# (metrics_reporter.py:543), which also prints the decode log (:901). Every spec result there is
# resolved from `accept_lens` (bonus included, :770-788): the v2 workers are the only ones left.
# Real components throughout, but for the scheduler the reporter reads its attributes from, and the
# workers' verify-complete callback.
SCHEDULE_COMPONENTS = """
import dataclasses, json, logging, sys
from types import SimpleNamespace
import torch

if __name__ == "__main__":
    from kit.watch import boot
    assert boot.install()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
    target, batches = sys.argv[1], json.loads(sys.argv[2])
    from sglang.srt.disaggregation.utils import DisaggregationMode
    from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
    from sglang.srt.managers.scheduler_components import (
        batch_result_processor, kv_events_publisher, metrics_reporter, output_sender,
        output_streamer, pool_stats_observer)
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.mem_cache.allocator import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.radix_cache import RadixCache
    from sglang.srt.observability.metrics_collector import SchedulerMetricsCollectorContext
    from sglang.srt.runtime_context import SpawnRanks, publish
    from sglang.srt.sampling.sampling_params import SamplingParams
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    args = ServerArgs(model_path=target, device="cpu")
    args.speculative_num_steps, args.speculative_num_draft_tokens = 3, 6  # a tree: D != steps + 1
    args.decode_log_interval = len(batches)  # one decode log line over every batch
    publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0))
    eagle3 = SpeculativeAlgorithm.EAGLE3
    alloc = TokenToKVPoolAllocator(64, torch.float32, "cpu", None, False)
    cache = RadixCache(CacheInitParams(disable=True, req_to_token_pool=None,
                                       token_to_kv_pool_allocator=alloc, page_size=1))
    worker = SimpleNamespace(on_verify_complete_cpu=lambda *a, **k: None,
                             speculative_num_steps=3, speculative_num_draft_tokens=6)
    scheduler = SimpleNamespace(device="cpu", forward_ct=0, spec_algorithm=eagle3,
                                disaggregation_mode=DisaggregationMode.NULL, waiting_queue=[],
                                draft_worker=worker)
    scheduler.pool_stats_observer = pool_stats_observer.SchedulerPoolStatsObserver(
        tree_cache=cache, token_to_kv_pool_allocator=alloc, req_to_token_pool=None,
        session_controller=None, hisparse_coordinator=None, is_hybrid_swa=False,
        is_hybrid_ssm=False, enable_hisparse=False, full_tokens_per_layer=None,
        swa_tokens_per_layer=None, max_total_num_tokens=64)
    scheduler.kv_events_publisher = kv_events_publisher.SchedulerKvEventsPublisher(
        kv_events_config=None, tree_cache=cache, send_metrics_from_scheduler=None,
        max_running_requests=8, max_total_num_tokens=64, get_stats=lambda: None)
    context = SchedulerMetricsCollectorContext(
        enable_metrics=False, is_stats_logging_rank=True, current_scheduler_metrics_enabled=False,
        enable_kv_cache_events=False, collector=None)
    reporter = metrics_reporter.SchedulerMetricsReporter(
        scheduler=scheduler, metrics_collector_context=context, metrics_collector=None)
    streamer = output_streamer.SchedulerOutputStreamer(
        send_to_detokenizer=output_sender.SenderWrapper(None), tree_cache=cache, server_args=args,
        is_generation=True, spec_algorithm=eagle3, disaggregation_mode=DisaggregationMode.NULL,
        enable_hicache_storage=lambda: False)
    cls = batch_result_processor.SchedulerBatchResultProcessor
    unused = {f.name: None for f in dataclasses.fields(cls)}  # read only off the decode path
    processor = cls(**unused | dict(
        is_generation=True, disaggregation_mode=DisaggregationMode.NULL, enable_overlap=False,
        enable_overlap_mlx=False, token_to_kv_pool_allocator=alloc, tree_cache=cache,
        model_config=SimpleNamespace(think_end_id=None, self_opened_think_start_ids=None),
        metrics_reporter=reporter, draft_worker=worker, model_worker=worker,
        output_streamer=streamer))
    for overlap, accepted in batches:
        reqs = []
        for i in range(len(accepted)):
            sampling = SamplingParams(max_new_tokens=100)
            sampling.normalize(None)
            reqs.append(Req(f"r{i}", "", [1, 2, 3], sampling, vocab_size=1000))
        batch = ScheduleBatch(reqs=reqs, spec_algorithm=eagle3, enable_overlap=overlap)
        scheduler.running_batch = batch
        result = GenerationBatchResult(next_token_ids=torch.arange(6 * len(accepted)),
                                       accept_lens=torch.tensor([a + 1 for a in accepted]),
                                       speculative_num_draft_tokens=6)
        dataclasses.replace(processor, enable_overlap=overlap).process_batch_result_decode(
            batch, result)
    print("exercised")
"""


def legacy_map(python: str) -> bool:
    """Whether the release maps `midlayer.*` onto its `layers.0` (0.5.12 and later)."""
    from packaging.version import Version

    return Version(release_of(python)) >= Version("0.5.12")


def components(python: str) -> bool:
    """Whether the release splits the scheduler into components (0.5.23 and later)."""
    from packaging.version import Version

    return Version(release_of(python)) >= Version("0.5.23")


def schedule(python: str, tmp_path: Path, batches: list) -> tuple[dict, str]:
    """Run the real scheduler's decode path over `batches` ([overlap, accepted drafts per
    request]); the report and the engine's own output."""
    if release_of(python) == "0.5.12":  # not a pass: these checks did not run there
        pytest.skip(
            "the scheduler harness is written for 0.5.10, 0.5.11 and 0.5.23; 0.5.12 counts on "
            "a running server in test_sglang_scenarios.py (its servers run under kit watch)"
        )
    script = tmp_path / "schedule.py"
    script.write_text(SCHEDULE_COMPONENTS if components(python) else SCHEDULE)
    report = tmp_path / "kit-watch.json"
    env = cpu_env(report)
    cmd = [python, str(script), str(TARGET), json.dumps(batches)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "exercised" in out.stdout, out.stderr[-3000:]
    return json.loads(report.read_text()), out.stdout


def logged(stdout: str) -> tuple[str, str]:
    """The `accept len` and `accept rate` of SGLang's own decode log line."""
    (line,) = [x for x in stdout.splitlines() if x.startswith("Decode batch")]
    return re.search(r"accept len: ([0-9.]+), accept rate: ([0-9.]+),", line).groups()


def test_acceptance_is_the_schedulers_own_count_per_request(sglang, tmp_path):
    from kit.watch.analyze import watch_findings

    batches = [[False, [2, 1]], [True, [3, 0]], [False, [0]]]  # spec v1, v2 (overlap), v1
    report, stdout = schedule(sglang[0], tmp_path, batches)
    totals = report["acceptance"]["totals"]
    accepted = [a for _, batch in batches for a in batch]
    assert totals == {
        "drafts": len(accepted),
        "draft_tokens": 5 * len(accepted),  # D - 1 = speculative_num_draft_tokens - 1 each
        "accepted": sum(accepted),
        "per_position": [sum(a > i for a in accepted) for i in range(max(accepted))],
    }
    mean = 1 + totals["accepted"] / totals["drafts"]
    accept_len, accept_rate = logged(stdout)  # what SGLang's decode log printed
    assert f"{mean:.2f}" == accept_len
    intervals = report["acceptance"]["intervals"]
    assert sum(i["delta"]["accepted"] for i in intervals) == totals["accepted"]
    assert report["engine"] == {"name": "sglang", "version": sglang[1]}
    (found,) = [f for f in watch_findings(report) if f.code == "OBSERVED_ACCEPTANCE"]
    assert found.engine == f"sglang=={sglang[1]}" and found.data["mean_acceptance_length"] == mean
    assert found.source.startswith(f"{sglang[1]} ")  # the release table's row for this release
    said = f"would print accept len {accept_len}, accept rate {accept_rate} ("
    assert said in found.evidence[2] and ", D = 6;" in found.evidence[2]  # the kit's rate rule


def test_a_draft_the_scheduler_never_accepts_is_critical(sglang, tmp_path):
    from kit.watch.analyze import watch_findings

    report, stdout = schedule(sglang[0], tmp_path, [[False, [0, 0]], [True, [0]]])
    assert logged(stdout)[0] == "1.00"
    found = watch_findings(report)
    assert found[0].code == "OBSERVED_ZERO_ACCEPTANCE"
    assert found[0].title == "the engine accepted none of 15 drafted tokens"
    assert f"accept rate {logged(stdout)[1]} (" in found[0].evidence[2]
