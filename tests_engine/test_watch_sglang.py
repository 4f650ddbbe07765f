"""`kit watch`'s SGLang hooks against SGLang's own classes (sglang 0.5.10 from its wheel).

SGLang does not run on CPU end to end, so this builds its real `LlamaForCausalLMEagle3` on CPU
(gloo, one rank, `SGLANG_USE_CPU_ENGINE=1`), hands the real `load_weights` the bundled draft's
tensors and calls the real draft `LlamaModel.forward` on an empty batch (the idle-batch path, after
its fc gate). The acceptance counts go through the real `Scheduler.process_batch_result_decode`
(with real `Req`s, `ScheduleBatch`, `GenerationBatchResult`, KV allocator and cache) of a
`Scheduler` made without its `__init__` (which would load a model): its real `update_spec_metrics`
counts, and its real decode log prints `accept len`. Needs an interpreter with sglang importable:
SGLANG_PYTHON (see the README for how the one used here was made); skipped without it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
TARGET, DRAFT = ROOT / "data/pair/target", ROOT / "data/pair/draft"
SGLANG_PYTHON = os.environ.get("SGLANG_PYTHON")

pytestmark = pytest.mark.skipif(
    not SGLANG_PYTHON or not Path(SGLANG_PYTHON).exists(),
    reason="no interpreter with sglang (set SGLANG_PYTHON)",
)

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


def exercise(tmp_path: Path, draft: Path, width: int) -> dict:
    script = tmp_path / "exercise.py"
    script.write_text(EXERCISE)
    report = tmp_path / "kit-watch.json"
    env = {**os.environ, "SGLANG_USE_CPU_ENGINE": "1", "KIT_WATCH_REPORT": str(report)}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [SGLANG_PYTHON, str(script), str(draft), str(width), str(TARGET), str(tmp_path / "init")]
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


def test_keys_sglang_drops_without_a_word_are_named(tmp_path):
    from kit.watch.analyze import watch_findings

    report = exercise(tmp_path, DRAFT, 384)
    assert report["engine"] == {"name": "sglang", "version": "0.5.10"}
    states = {p["name"]: p["state"] for p in report["load"]["params"]}
    assert states["model.midlayer.self_attn.qkv_proj.weight"] == "never_written"
    assert states["model.fc.weight"] == "written"
    found = watch_findings(report)
    assert found[0].code == "OBSERVED_PARAMS_UNWRITTEN"
    assert "layers.0.self_attn.q_proj.weight" in found[0].data["skipped_keys"]
    assert "d2t" not in found[0].data["skipped_keys"]  # consumed as hot_token_id


def test_midlayer_names_load_whole_and_fc_runs_at_three_states(tmp_path):
    report = exercise(tmp_path, midlayer_copy(tmp_path / "d"), 384)
    assert all(p["state"] == "written" for p in report["load"]["params"])
    assert (report["first_forward"]["width"], report["first_forward"]["fc_ran"]) == (384, True)


def test_one_state_wide_input_skips_fc_by_sglangs_shape_gate(tmp_path):
    report = exercise(tmp_path, midlayer_copy(tmp_path / "d"), 128)
    assert (report["first_forward"]["width"], report["first_forward"]["fc_ran"]) == (128, False)


# sgl_kernel (CUDA kernels) loads libcuda.so.1 at import; the scheduler's module imports it only
# for host KV transfer (sglang 0.5.10 mem_cache/memory_pool_host.py:47). This stand-in imports and
# raises on any call, so a kernel the exercised path did call would fail the test.
STAND_IN = """
import importlib.abc, importlib.machinery, sys, types

class _Kernel:
    def __init__(self, name):
        self.name = name
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Kernel(self.name + "." + name)
    def __call__(self, *args, **kwargs):
        raise RuntimeError("sgl_kernel." + self.name + " called: no CUDA kernel on CPU")

class _Module(types.ModuleType):
    __path__ = []
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Kernel(name)

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.startswith("sgl_kernel."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        return _Module(spec.name)
    def exec_module(self, module):
        pass

sys.meta_path.insert(0, _Finder())
sys.modules[__name__].__class__ = _Module
"""

SCHEDULE = """
import json, logging, sys
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

    args = ServerArgs(model_path=target, device="cpu")
    args.speculative_num_steps, args.speculative_num_draft_tokens = 3, 6  # a tree: D != steps + 1
    args.decode_log_interval = len(batches)  # one decode log line over every batch
    set_global_server_args_for_scheduler(args)
    s = Scheduler.__new__(Scheduler)  # one rank, no model: what init_metrics and the decode path read
    s.server_args, s.device, s.attn_tp_rank, s.dp_rank = args, "cpu", 0, 0
    s.enable_kv_cache_events = s.is_hybrid_swa = s.is_hybrid_ssm = False
    s.init_metrics(0, 0, None)
    s.is_generation, s.enable_overlap = True, False
    s.spec_algorithm = SpeculativeAlgorithm.EAGLE3
    s.disaggregation_mode = DisaggregationMode.NULL
    s.send_to_detokenizer = SenderWrapper(None)
    s.waiting_queue, s.max_total_num_tokens = [], 64
    s.token_to_kv_pool_allocator = TokenToKVPoolAllocator(64, torch.float32, "cpu", None, False)
    s.tree_cache = ChunkCache(CacheInitParams(disable=True, req_to_token_pool=None,
        token_to_kv_pool_allocator=s.token_to_kv_pool_allocator, page_size=1))
    s.draft_worker = SimpleNamespace(speculative_num_draft_tokens=6)
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
        else:  # spec v1: the EAGLE worker's verify output
            result = GenerationBatchResult(
                next_token_ids=torch.arange(sum(accepted) + len(accepted)),
                num_accepted_tokens=sum(accepted), accept_length_per_req_cpu=list(accepted))
        s.process_batch_result_decode(batch, result)
    print("exercised", batch.is_spec_v2)
"""


def schedule(tmp_path: Path, batches: list) -> tuple[dict, str]:
    """Run the real scheduler's decode path over `batches` ([overlap, accepted drafts per
    request]); the report and the engine's own output."""
    (tmp_path / "kernels" / "sgl_kernel").mkdir(parents=True)
    (tmp_path / "kernels" / "sgl_kernel" / "__init__.py").write_text(STAND_IN)
    script = tmp_path / "schedule.py"
    script.write_text(SCHEDULE)
    report = tmp_path / "kit-watch.json"
    env = {**os.environ, "SGLANG_USE_CPU_ENGINE": "1", "KIT_WATCH_REPORT": str(report)}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "kernels"), str(ROOT)])
    cmd = [SGLANG_PYTHON, str(script), str(TARGET), json.dumps(batches)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "exercised" in out.stdout, out.stderr[-3000:]
    return json.loads(report.read_text()), out.stdout


def logged(stdout: str) -> tuple[str, str]:
    """The `accept len` and `accept rate` of SGLang's own decode log line."""
    (line,) = [x for x in stdout.splitlines() if x.startswith("Decode batch")]
    return re.search(r"accept len: ([0-9.]+), accept rate: ([0-9.]+),", line).groups()


def test_acceptance_is_the_schedulers_own_count_per_request(tmp_path):
    from kit.watch.analyze import watch_findings

    batches = [[False, [2, 1]], [True, [3, 0]], [False, [0]]]  # spec v1, v2 (overlap), v1
    report, stdout = schedule(tmp_path, batches)
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
    assert report["engine"] == {"name": "sglang", "version": "0.5.10"}
    (found,) = [f for f in watch_findings(report) if f.code == "OBSERVED_ACCEPTANCE"]
    assert found.engine == "sglang==0.5.10" and found.data["mean_acceptance_length"] == mean
    said = f"would print accept len {accept_len}, accept rate {accept_rate} (accept_len / D, D = 6;"
    assert said in found.evidence[2]  # the kit's rate rule for 0.5.10, against the real log


def test_a_draft_the_scheduler_never_accepts_is_critical(tmp_path):
    from kit.watch.analyze import watch_findings

    report, stdout = schedule(tmp_path, [[False, [0, 0]], [True, [0]]])
    assert logged(stdout)[0] == "1.00"
    found = watch_findings(report)
    assert found[0].code == "OBSERVED_ZERO_ACCEPTANCE"
    assert found[0].title == "the engine accepted none of 15 drafted tokens"
    assert f"accept rate {logged(stdout)[1]} (accept_len / D" in found[0].evidence[2]
