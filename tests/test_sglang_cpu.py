"""The kit's SGLang CPU stand-ins where SGLang is not installed: the tree kernels against what a
chain must give, the import hooks, the sgl_kernel stand-in, the launch environment, and the
start-up hand-over between the kit's two sitecustomize files. The stand-ins inside real SGLang,
changing no result, are `tests_engine/test_sglang_scenarios.py` (`make test-engine`)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kit.engines.base import EngineRelease
from kit.engines.sglang import cpu
from kit.engines.sglang.cpu import kernels, modules, tree
from kit.watch.lazy import when_imported
from kit.watch.supervise import SITE as WATCH_SITE


def chain_tree(seq_lens: list[int], n: int) -> dict:
    """A topk-1 chain of n - 1 drafts per request, in SGLang's encoding: the drafts are the
    flattened scores 0 … n-2, each the child of the one before (parent_list[s] = s - 1)."""
    bs = len(seq_lens)
    buffers = {
        "parent_list": torch.tensor([[-1, *range(n - 2)]] * bs, dtype=torch.int64),
        "selected_index": torch.tensor([list(range(n - 1))] * bs, dtype=torch.int64),
        "verified_seq_len": torch.tensor(seq_lens, dtype=torch.int64),
        "tree_mask": torch.ones(sum(seq_lens) * n + n * n * bs, dtype=torch.bool),
        "positions": torch.empty(bs * n, dtype=torch.int64),
        "retrieve_index": torch.full((bs, n), -1, dtype=torch.int64),
        "retrieve_next_token": torch.full((bs, n), -1, dtype=torch.int64),
        "retrieve_next_sibling": torch.full((bs, n), -1, dtype=torch.int64),
    }
    tree.build_tree(*buffers.values(), topk=1, depth=n - 1, draft_token_num=n)
    return buffers


def test_a_chain_is_laid_out_one_position_after_another():
    n, seq_lens = 5, [7, 3]
    t = chain_tree(seq_lens, n)
    assert t["positions"].tolist() == [s + i for s in seq_lens for i in range(n)]
    assert t["retrieve_index"].tolist() == [[b * n + i for i in range(n)] for b in range(2)]
    assert t["retrieve_next_token"].tolist() == [[1, 2, 3, 4, -1]] * 2
    assert (t["retrieve_next_sibling"] == -1).all()
    # FULL_MASK: each request's rows are its prefix then its draft tokens; a chain is causal
    offset = 0
    for s in seq_lens:
        rows = t["tree_mask"][offset : offset + n * (s + n)].view(n, s + n)
        assert rows[:, :s].all()
        assert torch.equal(rows[:, s:], torch.ones(n, n, dtype=torch.bool).tril())
        offset += n * (s + n)


@pytest.mark.parametrize("agree", [0, 2, 4])
def test_greedy_verification_accepts_the_drafts_that_match_the_target(agree):
    """Draft tokens are accepted while each equals the target's greedy token at its parent;
    the bonus token is the target's token after the last accepted one."""
    n = 5
    t = chain_tree([6], n)
    target = torch.tensor([[11, 12, 13, 14, 15]])
    drafts = [11, 12, 13, 14][:agree] + [90, 91, 92, 93][: 4 - agree]
    candidates = torch.tensor([[10, *drafts]])
    predicts = torch.full((n,), -7, dtype=torch.int64)
    accept_index = torch.full((1, n), -1, dtype=torch.int64)
    accept_num = torch.zeros(1, dtype=torch.int64)
    tree.verify_greedy(
        predicts, accept_index, accept_num, candidates, t["retrieve_index"],
        t["retrieve_next_token"], t["retrieve_next_sibling"], target,
    )  # fmt: skip
    assert accept_num.tolist() == [agree]
    assert accept_index.tolist() == [[*range(agree + 1), *[-1] * (n - agree - 1)]]
    assert predicts[: agree + 1].tolist() == target[0, : agree + 1].tolist()


def test_a_patch_runs_when_the_module_is_imported_and_around_its_execution(tmp_path, monkeypatch):
    (tmp_path / "kit_hooked_mod.py").write_text("import builtins\nSEEN = builtins.kit_marker\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins
    from contextlib import contextmanager

    @contextmanager
    def around():
        builtins.kit_marker = "during"
        yield
        del builtins.kit_marker

    when_imported("kit_hooked_mod", after=lambda m: setattr(m, "AFTER", True), around=around)
    try:
        import kit_hooked_mod

        assert (kit_hooked_mod.SEEN, kit_hooked_mod.AFTER) == ("during", True)
        assert not hasattr(builtins, "kit_marker")
    finally:
        sys.modules.pop("kit_hooked_mod", None)


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None, reason="installed here")
def test_torchvision_exists_only_while_sglangs_image_modules_execute():
    """SGLang's module-level imports (0.5.10 internvl_utils.py:3,5, utils/common.py:90) succeed,
    their names raise only when an image request would call them, and afterwards nothing else
    (transformers' image processors) finds a torchvision."""
    with modules.absent_torchvision():
        import torchvision.transforms as T
        from torchvision.io import decode_jpeg
        from torchvision.transforms.functional import InterpolationMode

        assert "torchvision.transforms.functional" in sys.modules
    bicubic = InterpolationMode.BICUBIC  # a default argument's value: read, never called
    assert importlib.util.find_spec("torchvision") is None
    assert not any(n.split(".")[0] == "torchvision" for n in sys.modules)
    for use in (lambda: decode_jpeg(b""), lambda: T.Compose([]), lambda: bicubic()):
        with pytest.raises(ModuleNotFoundError, match="torchvision is not installed"):
            use()


def test_an_installed_torchvision_is_left_alone(monkeypatch):
    """Where torchvision is installed, the real one is imported: the stand-in adds no finder."""
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    before = list(sys.meta_path)
    with modules.absent_torchvision():
        assert sys.meta_path == before


KERNELS = """
import sys
from kit.engines.sglang.cpu import kernels
assert kernels.install()
from sgl_kernel import build_tree_kernel_efficient_cpu
from sgl_kernel.kvcacheio import transfer_kv_per_layer
try:
    from sgl_kernel import flash_ops
except ImportError:
    print("absent")
try:
    transfer_kv_per_layer()
except NotImplementedError as e:
    print("raised:", e)
"""


def test_the_sgl_kernel_stand_in_holds_named_kernels_only():
    done = subprocess.run([sys.executable, "-c", KERNELS], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "absent"  # SGLang's own `try: from sgl_kernel import …` fallbacks hold
    assert lines[1].startswith("raised: sgl_kernel.kvcacheio.transfer_kv_per_layer was called")


def test_the_kv_copy_reads_every_source_row_before_writing():
    """Rows 0 and 1 swapped in place (the Triton kernel's tile is read whole, then stored)."""
    buffers = [torch.arange(12, dtype=torch.float32).view(3, 4).clone() for _ in range(2)]
    ptrs = torch.tensor([b.data_ptr() for b in buffers])
    strides = torch.tensor([b.stride(0) * b.element_size() for b in buffers])
    kernels.copy_all_layer_kv_cache_cpu(ptrs, strides, torch.tensor([0, 1]), torch.tensor([1, 0]))
    for b in buffers:
        assert b.tolist() == [[4, 5, 6, 7], [0, 1, 2, 3], [8, 9, 10, 11]]


def _release(v: str) -> EngineRelease:
    from packaging.version import Version

    return EngineRelease("sglang", Version(v))


def test_each_release_gets_the_stand_ins_its_source_needs():
    names = {v: [r.value.what for r in cpu.for_release(_release(v))] for v in ("0.5.10", "0.5.23")}
    assert "EAGLE tree kernels" in names["0.5.10"] and "EAGLE tree kernels" not in names["0.5.23"]
    assert "spec v2 verify cache locations" not in names["0.5.10"]
    assert "sgl_kernel" in names["0.5.23"] and "torch_native draft backends" in names["0.5.23"]
    assert cpu.for_release(_release("0.5.9")) == []  # no release before 0.5.10 was run
    for row in cpu.STANDINS:  # each cites the release and the file:line it replaces
        assert re.search(r"0\.5\.\d+ [\w/]+\.py:\d+", row.source), row.source


def test_nothing_is_installed_unless_the_launch_asks(monkeypatch):
    monkeypatch.setattr(cpu, "installed_release", lambda: _release("0.5.10"))
    monkeypatch.delenv(cpu.ENV_FLAG, raising=False)
    assert cpu.install() == []
    env = cpu.launch_env({"PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"] == f"{cpu.SITE}{os.pathsep}/elsewhere"
    assert (env[cpu.ENV_FLAG], env["TRITON_INTERPRET"], env["SGLANG_USE_CPU_ENGINE"]) == ("1",) * 3


def test_the_two_sitecustomize_files_hand_over_once_in_either_order(tmp_path):
    """kit watch and the CPU stand-ins each run their sitecustomize, then the next one on the
    path: the environment's own runs once, and neither hands back to the other."""
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("print('own sitecustomize')\n")
    code = textwrap.dedent("""
        import os
        print('stand-ins:', os.environ.get('KIT_SGLANG_CPU'))
    """)
    for first, second in ((WATCH_SITE, cpu.SITE), (cpu.SITE, WATCH_SITE)):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (first, second, own)))}
        env.pop("KIT_WATCH_REPORT", None)
        env.pop(cpu.ENV_FLAG, None)
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["own sitecustomize", "stand-ins: None"]


def test_the_stand_ins_sources_are_in_the_package():
    assert (Path(cpu.__file__).parent / "site" / "sitecustomize.py").is_file()
