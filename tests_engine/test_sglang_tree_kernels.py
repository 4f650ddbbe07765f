"""The kit's Python tree kernels (`kit.engines.sglang.cpu.tree`) against SGLang's own Triton port
of sgl-kernel's (sglang 0.5.23 kernels/ops/speculative/spec_tree.py, its XPU path), run by
Triton's interpreter in the 0.5.23 venv: the same outputs on draft trees SGLang's own draft
step builds (`select_top_k_tokens`, `organize_draft_results`) from random scores, topk 1 to 3,
both mask layouts, and on greedy verification of random target tokens."""

from __future__ import annotations

import json
import subprocess

import pytest
from sglang_engine import ROOT, python_for

NEEDS_VLLM = False  # the suite's conftest lets this file run where vLLM is not installed
PYTHON = python_for("sglang==0.5.23")

COMPARE = """
import itertools, json, torch
from sglang.kernels.ops.speculative import spec_tree
from sglang.srt.speculative.eagle_utils import organize_draft_results
from sglang.srt.speculative.spec_utils import select_top_k_tokens
from kit.engines.sglang.cpu import tree

def draft_tree(g, bs, topk, steps, n):
    # the draft step's own bookkeeping, scores drawn at random (eagle_worker_v2's draft_forward)
    vocab = 50
    p = torch.rand(bs, vocab, generator=g).softmax(-1)
    topk_p, topk_index = p.topk(topk, -1)
    scores, score_list, token_list, parents_list = None, [], [], []
    for i in range(steps):
        _, _, scores, (s, t, par) = select_top_k_tokens(i, topk_p, topk_index, None, scores, topk)
        score_list.append(s); token_list.append(t); parents_list.append(par)
        p = torch.rand(bs * topk, vocab, generator=g).softmax(-1)
        topk_p, topk_index = p.topk(topk, -1)
    return organize_draft_results(score_list, token_list, parents_list, n)

def buffers(bs, n, seq_lens, mode):
    size = sum(seq_lens) * n + n * n * bs if mode == 0 else n * n * bs
    return [torch.ones(size, dtype=torch.bool), torch.zeros(bs * n, dtype=torch.int64),
            torch.full((bs, n), -1, dtype=torch.int64), torch.full((bs, n), -1, dtype=torch.int64),
            torch.full((bs, n), -1, dtype=torch.int64)]

g, cases, differ = torch.Generator().manual_seed(0), 0, []
for topk, steps, mode, rep in itertools.product((1, 2, 3), (2, 4), (0, 1), range(2)):
    bs, n = 3, min(topk * steps, 6) + 1
    seq_lens = torch.randint(4, 20, (bs,), generator=g)
    parents, selected, draft_tokens = draft_tree(g, bs, topk, steps, n)
    mine, theirs = buffers(bs, n, seq_lens.tolist(), mode), buffers(bs, n, seq_lens.tolist(), mode)
    args = (parents, selected, seq_lens)
    tree.build_tree(*args, *mine, topk, steps, n, mode)
    spec_tree.sgl_build_tree_kernel_triton(*args, *theirs, topk, steps, n, mode)
    same = all(torch.equal(a, b) for a, b in zip(mine, theirs))
    # greedy verification: targets agree with the candidates at random
    cand = torch.cat([torch.randint(0, 50, (bs, 1), generator=g), draft_tokens], 1)
    target = torch.where(torch.rand(bs, n, generator=g) < 0.7, cand.roll(-1, 1),
                         torch.randint(0, 50, (bs, n), generator=g))
    out = []
    for fn in (tree.verify_greedy, spec_tree.verify_tree_greedy_triton):
        pred = torch.full((bs * n,), -1, dtype=torch.int64)
        index = torch.full((bs, steps + 1), -1, dtype=torch.int64)
        num = torch.zeros(bs, dtype=torch.int64)
        fn(pred, index, num, cand, mine[2], mine[3], mine[4], target)
        out.append((pred, index, num))
    same = same and all(torch.equal(a, b) for a, b in zip(*out))
    cases += 1
    if not same:
        differ.append([topk, steps, mode, rep])
print(json.dumps({"cases": cases, "differ": differ}))
"""


@pytest.mark.skipif(PYTHON is None, reason="no interpreter with sglang==0.5.23: make test-engine")
def test_the_python_tree_kernels_are_sglangs_own():
    from kit.engines.sglang.cpu import launch_env

    env = launch_env()  # the Triton interpreter, SGLang's CPU path, the sgl_kernel stand-in
    done = subprocess.run(
        [PYTHON, "-c", COMPARE], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"cases": 24, "differ": []}
