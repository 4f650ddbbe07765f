"""CPU stand-ins that let a released SGLang serve an EAGLE-3 chain draft (topk 1) on a host with
no CUDA device, and the launch that asks for them.

SGLang's target and draft model classes, weight loader, scheduler, EAGLE worker and acceptance
counters run as shipped, with `--device cpu --attention-backend torch_native --sampling-backend
pytorch --disable-cuda-graph`. What its CPU path lacks is CUDA-only or missing pieces; each row
of `STANDINS` supplies one, for a range of releases, citing the SGLang line it replaces. Triton
kernels SGLang launches on that path run on CPU tensors under Triton's own interpreter
(`TRITON_INTERPRET=1`, set by `launch_env`). Nothing here changes what the target or the draft
computes: greedy, the engine emits the target's greedy text whatever the draft.

Nothing is installed unless asked: `launch_env()` is the environment that asks. Every Python
process SGLang then starts runs `site/sitecustomize.py`, which calls `install()`; each patch
waits for SGLang to import its module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kit.engines.base import EngineRelease, Row, VersionRange
from kit.engines.sglang.cpu import attention, kernels, modules, v2, verify
from kit.watch import lazy

ENV_FLAG = "KIT_SGLANG_CPU"
SITE = Path(__file__).resolve().parent / "site"
KIT_ROOT = Path(__file__).resolve().parents[4]
SERVER_ARGS = (
    "--device", "cpu", "--attention-backend", "torch_native", "--sampling-backend", "pytorch",
    "--disable-cuda-graph",
)  # fmt: skip
ENVIRONMENT = {
    "SGLANG_USE_CPU_ENGINE": "1",  # SGLang's own switch for its CPU path
    "TRITON_INTERPRET": "1",  # SGLang's Triton kernels on CPU tensors, in Triton's interpreter
    "TORCHDYNAMO_DISABLE": "1",  # no torch.compile of SGLang's CPU ops
}


@dataclass(frozen=True)
class StandIn:
    """One piece SGLang's CPU path lacks: `patch` applied to `module` as SGLang imports it
    (`around`: while it executes), or `process` run once at start-up."""

    what: str
    module: str | None = None
    patch: lazy.Patch | None = None
    around: lazy.Around | None = None
    process: object | None = None


STANDINS: tuple[Row[StandIn], ...] = (
    Row(VersionRange("0.5.10"), StandIn("sgl_kernel", process=kernels.install),
        "0.5.10, 0.5.11, 0.5.12 mem_cache/memory_pool_host.py:46-47 import sgl_kernel.kvcacheio "
        "at module level on a CPU; 0.5.23 its CPU kernels (kernels/ops/speculative/"
        "spec_tree.py:39-43, cache_locs.py:27-31, eagle.py:9-10, kernels/ops/kvcache/"
        "cache_move.py:9-10, mem_cache/allocation.py:45-46)"),
    Row(VersionRange("0.5.10", "0.5.23"),
        StandIn("torchvision for image decoding", "sglang.srt.utils.common",
                around=modules.absent_torchvision),
        "0.5.10, 0.5.11, 0.5.12 utils/common.py:90 (lazy from 0.5.23, utils/common.py:2114)"),
    Row(VersionRange("0.5.10"),
        StandIn("torchvision for InternVL image transforms", "sglang.srt.multimodal.internvl_utils",
                around=modules.absent_torchvision),
        "0.5.10 multimodal/internvl_utils.py:3,5; 0.5.11, 0.5.12, 0.5.23 :5,7; imported at "
        "start-up by configs/__init__.py (0.5.10 and 0.5.11 :22, 0.5.12 :25, 0.5.23 :71) through "
        "configs/nano_nemotron_vl.py:22"),
    Row(VersionRange("0.5.23"),
        StandIn("torchvision for DeepSeek-OCR image transforms", "sglang.srt.configs.deepseek_ocr",
                around=modules.absent_torchvision),
        "0.5.23 configs/deepseek_ocr.py:7-8; imported at start-up by configs/__init__.py:95 "
        "through configs/unlimited_ocr.py:16"),
    Row(VersionRange("0.5.10", "0.5.23"),
        StandIn("torch.cuda.synchronize", "sglang.srt.models.llama", modules.no_cuda_synchronize),
        "0.5.10 models/llama.py:763,778; 0.5.11 :772,791; 0.5.12 :774,793"),
    Row(VersionRange("0.5.11"),
        StandIn("Tensor.record_stream on CPU tensors", "sglang.srt.managers.overlap_utils",
                modules.no_cpu_record_stream),
        "0.5.11 managers/overlap_utils.py:146, speculative/eagle_worker_v2.py:763"),
    Row(VersionRange("0.5.11", "0.5.23"),
        StandIn("spec v2 verify cache locations", "sglang.srt.speculative.eagle_info_v2",
                v2.extend_cache_locs),
        "0.5.11 speculative/eagle_info_v2.py:534-575 (no CPU branch)"),
    Row(VersionRange("0.5.10"),
        StandIn("torch_native draft backends", "sglang.srt.speculative.draft_utils",
                attention.draft_backends),
        "0.5.10 speculative/draft_utils.py:39-94 (no torch_native entry)"),
    Row(VersionRange("0.5.10"),
        StandIn("torch_native verify and draft-extend lengths",
                "sglang.srt.layers.attention.torch_native_backend",
                attention.verify_and_draft_extend),
        "0.5.10 layers/attention/torch_native_backend.py:192-237, forward_batch_info.py:545, "
        "speculative/eagle_info.py:695-725"),
    Row(VersionRange("0.5.10", "0.5.23"),
        StandIn("EAGLE tree kernels", "sglang.srt.speculative.eagle_utils", verify.tree_kernels),
        "0.5.10 speculative/eagle_utils.py:13-16,137,161-199; 0.5.11 and 0.5.12 :14-17,138,"
        "162-202"),
)  # fmt: skip


def installed_release() -> EngineRelease | None:
    """The SGLang this Python would import (from its metadata: importing sglang is slow)."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        return EngineRelease("sglang", Version(Version(version("sglang")).base_version))
    except PackageNotFoundError:
        return None


def for_release(release: EngineRelease) -> list[Row[StandIn]]:
    """The stand-ins `release` needs on a CPU."""
    return [row for row in STANDINS if release in row.versions]


def install() -> list[str]:
    """Install the stand-ins the installed SGLang needs, when the launch asked for them (the
    `ENV_FLAG` that `launch_env` sets); what was installed."""
    release = installed_release()
    if os.environ.get(ENV_FLAG) != "1" or release is None:
        return []
    done = []
    for row in for_release(release):
        s = row.value
        if s.process is not None:
            if not s.process():
                continue
        else:
            lazy.when_imported(s.module, after=s.patch, around=s.around)
        done.append(s.what)
    return done


def launch_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an SGLang launch on a CPU with the stand-ins: SGLang's CPU switches,
    and `site/` first on PYTHONPATH so every process it starts installs them."""
    env = dict(os.environ if base is None else base)
    env.update(ENVIRONMENT)
    env[ENV_FLAG] = "1"
    env["KIT_SGLANG_CPU_ROOT"] = str(KIT_ROOT)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SITE) + (os.pathsep + old if old else "")
    return env
