"""The two EAGLE tree kernels SGLang has only for CUDA, HIP and NPU, written for CPU tensors.

`build_tree` lays out the verify batch (tree mask, positions, the links verification walks);
`verify_greedy` walks it against the target's greedy tokens. Both follow sgl-kernel's
`build_tree_efficient` / `VerifyTreeGreedy` step by step, as SGLang's own Triton port of them
does (sglang 0.5.23 `kernels/ops/speculative/spec_tree.py:52-208` and `:210-315`), one request
at a time in Python: a batch holds a few requests of a few draft tokens each.
"""

from __future__ import annotations

from typing import Any

FULL_MASK = 0  # TreeMaskMode.FULL_MASK; the other modes index the mask per request


def _parent_slot(selected: list[int], parents: list[int], slot: int, topk: int, n: int):
    """Where the parent of the draft token at `slot` sits among the selected ones (0: the root,
    the verified token), or None when it is not among them."""
    parent_tb = int(selected[slot]) // topk
    if parent_tb == 0:
        return 0
    parent_token = parents[parent_tb]
    for p in range(n - 1):
        if selected[p] == parent_token:
            return p + 1
    return None


def build_tree(
    parent_list: Any,
    selected_index: Any,
    verified_seq_len: Any,
    tree_mask: Any,
    positions: Any,
    retrieve_index: Any,
    retrieve_next_token: Any,
    retrieve_next_sibling: Any,
    topk: int,
    depth: int,
    draft_token_num: int,
    tree_mask_mode: int = FULL_MASK,
) -> None:
    """Fill `tree_mask`, `positions` and the three retrieve tensors in place."""
    n, bs = draft_token_num, verified_seq_len.shape[0]
    parents = parent_list.reshape(bs, -1).tolist()
    selected = selected_index.reshape(bs, -1).tolist()
    seq_lens = verified_seq_len.tolist()
    mask, pos = tree_mask.view(-1), positions.view(-1)
    prefix = 0
    for b in range(bs):
        seq_len, sel, par = seq_lens[b], selected[b], parents[b]
        pos[b * n] = seq_len
        for i in range(n - 1, 0, -1):
            retrieve_index[b, i] = b * n + i
            slot = _parent_slot(sel, par, i - 1, topk, n)
            if slot is not None:
                sibling = int(retrieve_next_token[b, slot])
                retrieve_next_token[b, slot] = i
                if sibling != -1:
                    retrieve_next_sibling[b, i] = sibling
        retrieve_index[b, 0] = b * n
        for t in range(n):
            if int(tree_mask_mode) == FULL_MASK:
                row = n * n * b + prefix * n + (seq_len + n) * t + seq_len + 1
            else:
                row = n * n * b + n * t + 1
            mask[row - 1] = True
            mask[row : row + n - 1] = False
            if t > 0:
                pos[b * n + t] = seq_len + _mark_path(mask, row, sel, par, t - 1, topk, depth, n)
        prefix += seq_len


def _mark_path(mask, row: int, sel: list[int], par: list[int], cur: int, topk, depth, n) -> int:
    """Mark the ancestors of one draft token in its mask row; its depth in the tree."""
    depth_of = 0
    for _ in range(depth):
        depth_of += 1
        mask[row + cur] = True
        slot = _parent_slot(sel, par, cur, topk, n)
        if slot is None or slot == 0:
            break
        cur = slot - 1
    return depth_of


def verify_greedy(
    predicts: Any,
    accept_index: Any,
    accept_token_num: Any,
    candidates: Any,
    retrieve_index: Any,
    retrieve_next_token: Any,
    retrieve_next_sibling: Any,
    target_predict: Any,
) -> None:
    """Accept, per request, the longest path of draft tokens equal to the target's greedy ones;
    `predicts`, `accept_index` and `accept_token_num` are written in place."""
    bs, num_spec = candidates.shape[0], accept_index.shape[1]
    index, nxt = retrieve_index.tolist(), retrieve_next_token.tolist()
    sibling, cand = retrieve_next_sibling.tolist(), candidates.tolist()
    target, pred = target_predict.reshape(-1).tolist(), predicts.view(-1)
    for b in range(bs):
        last = index[b][0]
        accept_index[b, 0] = last
        accepted, cur = 0, 0
        for _ in range(1, num_spec):
            cur = nxt[b][cur]
            while cur != -1 and cand[b][cur] != target[last]:
                cur = sibling[b][cur]
            if cur == -1:
                break
            pred[last] = target[last]
            accepted += 1
            accept_index[b, accepted] = index[b][cur]
            last = index[b][cur]
        accept_token_num[b] = accepted
        pred[last] = target[last]
