"""What a fix costs elsewhere: the releases that load the checkpoint as given but not as fixed.

`kit fix --engine vllm==0.10.2` writes the config.json that release reads; another engine may
refuse that form (SGLang wants an `*Eagle3` architecture, vLLM 0.10.2 a plain Llama one). A team
serving one draft from two engines must hear that before it overwrites the only copy, so `fix`
replays the checkpoint before and after the plan on every release the kit knows (header-only
replays: milliseconds for all of them) and names each release the output stops loading on.
"""

from __future__ import annotations

from packaging.version import Version

from kit.checkpoint.config import DraftConfig
from kit.checkpoint.files import Checkpoint
from kit.engines import RELEASES, EngineRelease
from kit.load.replay import simulate_keys
from kit.load.rewrite import FixPlan


def stops_loading_on(ck: Checkpoint, cfg: DraftConfig, plan: FixPlan) -> dict[str, list[str]]:
    """Per engine, the releases under which every tensor of `ck` loads as given and not after
    `plan` (renames and config.json), oldest first; engines it costs nothing are left out."""
    before = {n: t.shape for n, t in ck.tensors.items()}
    after = {plan.renames.get(n, n): shape for n, shape in before.items()}
    lost: dict[str, list[str]] = {}
    for name, versions in RELEASES.items():
        for v in versions:
            rel = EngineRelease(name, Version(v))
            if str(rel) == plan.engine:
                continue
            was = simulate_keys(before, cfg, rel, suggest_upgrade=False)
            now = simulate_keys(after, plan.cfg_after, rel, suggest_upgrade=False)
            if _loads(was) and not _loads(now):
                lost.setdefault(name, []).append(v)
    return lost


def _loads(report) -> bool:
    return report.refusal is None and report.loads_cleanly


def spans(lost: dict[str, list[str]]) -> str:
    """`sglang 0.4.4.post2 … 0.5.23 (36 releases)` per engine, joined."""
    parts = []
    for name, versions in lost.items():
        span = versions[0] if len(versions) == 1 else f"{versions[0]} … {versions[-1]}"
        parts.append(f"{name} {span} ({len(versions)} release{'s' * (len(versions) > 1)})")
    return "; ".join(parts)
