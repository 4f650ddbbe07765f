"""Targets that do not fit the default path: sharded checkpoints, device maps, GPUs; the plots."""

from __future__ import annotations

import gc
import os
import shutil
import weakref

import pytest
import torch

from kit.offline_acceptance import fault_matrix, healthy, load_prompts, load_target
from kit.report.plots.acceptance import accept_len_by_wiring_figure, per_position_figure
from tests.conftest import DRAFT, PROMPTS, TARGET

torch.set_num_threads(1)

NO_GPU = "needs a CUDA device; this machine's torch sees none"


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(PROMPTS)[:30]


@pytest.fixture(scope="module")
def single(prompts):
    return healthy(TARGET, DRAFT, prompts=prompts, progress=False).result


def test_a_sharded_target_gives_the_same_counts(tmp_path, prompts, single):
    """A target saved in shards (`model.safetensors.index.json` + several files) loads and
    measures as the single file does."""
    load_target(TARGET).save_pretrained(tmp_path, max_shard_size="1MB")
    shutil.copy(TARGET / "tokenizer.json", tmp_path)
    assert (tmp_path / "model.safetensors.index.json").is_file()
    assert len(list(tmp_path.glob("model-*.safetensors"))) > 1
    r = healthy(tmp_path, DRAFT, prompts=prompts, progress=False).result
    assert r.figures()["counts"] == single.figures()["counts"]


def test_a_device_map_spreads_the_target_and_gives_the_same_counts(prompts, single):
    """`device_map="auto"` (accelerate) places the target over every visible device (here:
    the CPU only); the draft reads its states wherever they are."""
    target = load_target(TARGET, device_map="auto")
    assert {p.device.type for p in target.parameters()} <= {"cpu", "cuda"}
    r = healthy(TARGET, DRAFT, prompts=prompts, target=target, device_map="auto",
                progress=False).result  # fmt: skip
    assert r.figures()["counts"] == single.figures()["counts"]
    assert r.settings.device == "cpu, target auto"


def test_a_target_asked_for_again_is_the_one_loaded_until_its_files_change(tmp_path):
    """A second `load_target` of an unchanged folder, while the first model is alive, is that
    model (so its continuations are reused); a rewritten file, or another placement, loads anew;
    a dropped target is freed, not kept alive by the kit."""
    folder = tmp_path / "target"
    shutil.copytree(TARGET, folder)
    first = load_target(folder)
    assert load_target(str(folder)) is first
    assert load_target(folder, device_map="auto") is not first
    weights = folder / "model.safetensors"
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # retrained in place
    again = load_target(folder)
    assert again is not first
    alive = weakref.ref(again)
    del first, again
    gc.collect()
    assert alive() is None


def test_peak_memory_is_reported(single):
    assert single.resources["cpu_peak_rss_mb"] > 100  # torch alone is above that
    assert single.resources["seconds"] > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)
def test_the_gpu_path_measures_and_reports_gpu_memory(prompts, single):
    """On a GPU the target runs in its own dtype (bf16 here), the draft in fp32: the figure
    is close to the CPU one (bf16 rounding may flip a few near-ties), GPU memory is reported."""
    r = healthy(TARGET, DRAFT, prompts=prompts, device="cuda", progress=False).result
    assert abs(r.accept_len - single.accept_len) < 0.3
    assert r.resources["cuda:0_peak_mb"] > 0
    mapped = healthy(TARGET, DRAFT, prompts=prompts, device="cuda", device_map="auto",
                     progress=False).result  # fmt: skip
    assert mapped.verify_steps > 0


def test_plots_draw_each_offline_figure_with_its_interval(prompts):
    """Per-position bars and accept len by wiring carry error bars from the intervals; a row
    that cannot run is named, with no bar."""
    rows = fault_matrix(TARGET, DRAFT, "vllm==0.33.0", prompts=prompts[:10], progress=False)
    fig = per_position_figure([rows[0], rows[2].result])
    first = fig.data[0]
    assert first.name == "healthy"
    ci = rows[0].result.per_position_ci
    assert list(first.error_y.array) == pytest.approx(
        [c.hi - p for p, c in zip(rows[0].result.per_position, ci, strict=True)]
    )
    assert list(first.error_y.arrayminus) == pytest.approx(
        [p - c.lo for p, c in zip(rows[0].result.per_position, ci, strict=True)]
    )
    bars = accept_len_by_wiring_figure(rows).data[0]
    assert list(bars.y)[1] == "vllm==0.33.0, aux capture off (does not run)"
    assert bars.x[1] is None and bars.error_x.array[0] > 0
