"""How SGLang runs the draft's forward pass: fc only when the handed width differs from the
draft's (`FcGate.WIDTH`), layers after the first open with `hidden_norm`, fused with the
residual (multi-layer drafts exist from 0.5.12), and the RoPE positions of the chain's steps
after the first: one late before 0.5.12 (`DRAFT_POSITIONS`)."""

from __future__ import annotations

from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.engines.vocab import Era, FcGate

# The gate is the same in every release; each row names the line in its releases. Later layers
# exist from 0.5.12 (llama_eagle3.py:93-100: hidden_norm(hidden_states, residual)).
_ERA = Era(FcGate.WIDTH, "hidden_norm")
_GATE = "models/llama_eagle3.py:{} fc iff hidden_states.shape[-1] != embeds.shape[-1] ({})"
ERAS: list[Row[Era]] = [
    Row(VersionRange(first, until), _ERA, _GATE.format(line, read))
    for first, until, line, read in (
        ("0.4.4.post2", "0.4.9", 128, "0.4.6.post1"),
        ("0.4.9", "0.5.3", 148, "0.4.10"),
        ("0.5.3", "0.5.6", 161, "0.5.3"),
        ("0.5.6", "0.5.10", 162, "0.5.6"),
        ("0.5.10", "0.5.12", 176, "0.5.10"),
        ("0.5.12", "0.5.15", 218, "0.5.12"),
        ("0.5.15", "0.5.20", 214, "0.5.15"),
        ("0.5.20", "0.5.23", 229, "0.5.20"),
        ("0.5.23", None, 238, "0.5.23"),
    )
]


def era(release: EngineRelease) -> Row[Era]:
    return pick(ERAS, release)


# Draft decode positions. The chain's first drafted token comes from the draft-extend pass, which
# runs each position p at p: the token after p with the target's state at p, the convention the
# draft is trained on (0.4.4.post2 speculative/eagle_utils.py:500-516; 0.5.10
# speculative/spec_utils.py:60-83; spec v2: the verified tokens extended from seq_lens, 0.5.10
# speculative/eagle_info_v2.py:188-198 and model_executor/forward_batch_info.py:558). The later
# steps start from positions = seq_lens, the bonus token's own position, and add 1 around each
# step's forward: before it up to 0.5.11, so step j >= 1 runs at seq_len + j, one position later
# than trained; after it from 0.5.12 (sglang PR #25015, "Fix Eagle draft decode positions",
# merged 2026-05-11). The same loop drafts chains and topk > 1 trees (every branch one position
# late), for one-layer and multi-layer drafts (these exist from 0.5.12 only), and a CUDA graph
# replays it as captured; 0.5.23's CUDA argmax kernel for chains advances the positions after the
# forward too (sglang/kernels/ops/speculative/topk1.py:70-71). The multi-layer MTP worker
# (--enable-multi-layer-eagle) drafts every step inside the extend pass and has no decode loop
# (0.5.10 speculative/multi_layer_eagle_worker.py:629-647): the rule does not reach it. Each read
# release (`RELEASES`) cites, per worker, the line that sets the positions and the add_(1)
# against the step's forward: speculative/eagle_worker.py (v1; gone from 0.5.13) and the spec-v2
# worker speculative/eagle_worker_v2.py (from 0.5.3.post2; its positions set in the file named).
_WORKERS = ("v1 speculative/eagle_worker.py:{}", "v2 speculative/{}")
_STEP = " positions = seq_lens, {}:{} add_(1) {} the forward at :{}"
POSITIONS_FIX = "sglang PR #25015"
_V1_FILE, _V2_FILE = "eagle_worker.py", "eagle_worker_v2.py"
_INFO_V2 = "eagle_info_v2.py:{}".format
Lines = tuple[int | str, int, int]  # positions set, add_(1), the step's forward
_READ: tuple[tuple[str, Lines | None, Lines | None], ...] = (
    ("0.4.4.post2", (322, 396, 401), None),
    ("0.4.4.post4", (386, 462, 467), None),
    ("0.4.6.post1", (382, 458, 463), None),
    ("0.4.7", (433, 531, 536), None),
    ("0.4.8", (489, 617, 622), None),
    ("0.4.9", (491, 619, 624), None),
    ("0.4.9.post6", (492, 624, 629), None),
    ("0.4.10", (494, 626, 631), None),
    ("0.5.1", (546, 678, 683), None),
    ("0.5.2", (608, 748, 753), None),
    ("0.5.3", (641, 781, 786), None),
    ("0.5.3.post1", (639, 779, 784), None),
    ("0.5.3.post2", (462, 607, 612), (_INFO_V2(105), 193, 198)),
    ("0.5.4", (448, 593, 598), (_INFO_V2(160), 350, 355)),
    ("0.5.5", (465, 610, 615), (_INFO_V2(162), 355, 360)),
    ("0.5.6", (493, 638, 643), (_INFO_V2(171), 384, 389)),
    ("0.5.7", (503, 648, 653), (_INFO_V2(175), 389, 394)),
    ("0.5.8", (511, 656, 661), (_INFO_V2(173), 421, 426)),
    ("0.5.9", (520, 665, 670), (_INFO_V2(175), 422, 427)),
    ("0.5.10", (527, 675, 680), (_INFO_V2(175), 443, 448)),
    ("0.5.11", (708, 856, 861), (_INFO_V2(203), 450, 455)),
    ("0.5.12", (741, 923, 908), (_INFO_V2(215), 481, 466)),
    ("0.5.13", None, (_INFO_V2(303), 598, 573)),
    ("0.5.14", None, ("base_spec_worker.py:265", 681, 649)),
    ("0.5.15", None, ("base_spec_worker.py:265", 722, 690)),
    ("0.5.16", None, ("eagle_worker_common.py:302", 675, 666)),
    ("0.5.17", None, ("eagle_worker_common.py:303", 660, 651)),
    ("0.5.18", None, ("eagle_worker_common.py:303", 670, 655)),
    ("0.5.19", None, ("eagle_worker_common.py:303", 686, 671)),
    ("0.5.20", None, ("eagle_worker_common.py:303", 772, 757)),
    ("0.5.21", None, ("eagle_worker_common.py:304", 803, 787)),
    ("0.5.22", None, ("eagle_worker_common.py:378", 816, 800)),
    ("0.5.23", None, ("eagle_worker_common.py:360", 866, 847)),
)  # fmt: skip


def _positions_row(i: int) -> Row[int]:
    """Read release `_READ[i]`'s row: 1 (steps after the first one position late) where its
    workers add before the forward, 0 where after; its source cites each worker's lines."""
    first, *workers = _READ[i]
    until = _READ[i + 1][0] if i + 1 < len(_READ) else None
    cited, late = [], set()
    for worker, file, lines in zip(_WORKERS, (_V1_FILE, _V2_FILE), workers, strict=True):
        if lines is not None:
            start, add, forward = lines
            late.add(int(add < forward))
            step = _STEP.format(file, add, "before" if add < forward else "after", forward)
            cited.append(worker.format(start) + step)
    (value,) = late  # both workers follow one rule in every release read
    fixed = f" ({POSITIONS_FIX})" if not value else ""
    return Row(VersionRange(first, until), value, f"{first} " + "; ".join(cited) + fixed)


# How many positions late the draft decode runs the chain's steps after the first.
DRAFT_POSITIONS: list[Row[int]] = [_positions_row(i) for i in range(len(_READ))]


def draft_positions(release: EngineRelease) -> Row[int]:
    return pick(DRAFT_POSITIONS, release)
