"""Mutated draft and target configs through inspect, simulate, trace and doctor.

The seeds are the bundled draft's config and every trainer layout's; a case replaces values with
hostile ones (numbers too large for a float, NaN, `true` where a list goes, deep nesting), writes
a key twice, breaks the bytes or cuts the text. Each call reads the config or refuses it with one
`KitError`.
"""

from __future__ import annotations

import json

from fuzz_inputs import (
    CONFIGS,
    DRAFT,
    RELEASES,
    TARGET,
    TARGET_CONFIGS,
    Fence,
    mutated_json,
    survives,
)
from hypothesis import given
from hypothesis import strategies as st

import kit

SEEDS = [json.loads(p.read_text()) for p in CONFIGS]
TARGET_SEEDS = [json.loads(p.read_text()) for p in TARGET_CONFIGS]


def any_config(seeds: list) -> st.SearchStrategy[bytes]:
    return st.sampled_from(seeds).flatmap(mutated_json)


@given(any_config(SEEDS), st.sampled_from(RELEASES))
def test_mutated_draft_configs_are_read_or_refused_in_one_line(config: bytes, engine: str):
    with Fence() as fence:
        fence.copy(DRAFT / "model.safetensors")
        (fence.inside / "config.json").write_bytes(config)
        draft = fence.inside
        survives(kit.inspect, draft, stats="none")
        survives(kit.simulate, draft, engine)
        survives(kit.fix, draft, engine, out=fence.inside / "fixed")
        survives(kit.trace, draft / "config.json", TARGET, engine)
        survives(kit.doctor, draft, target_config=TARGET, engine=engine)


@given(any_config(TARGET_SEEDS), st.sampled_from(RELEASES))
def test_mutated_target_configs_are_read_or_refused_in_one_line(config: bytes, engine: str):
    with Fence() as fence:
        target = fence.inside / "config.json"
        target.write_bytes(config)
        survives(kit.trace, DRAFT, target, engine)
        survives(kit.doctor, DRAFT, target_config=target, engine=engine)
