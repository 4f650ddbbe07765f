"""Every registered engine package answers the one interface the engine-independent code asks,
for every release it lists (a gap in a version table would raise in `pick`)."""

from __future__ import annotations

import inspect
import re

import pytest
from packaging.version import Version

from kit.checkpoint.config import load_draft_config
from kit.engines import ENGINES, all_releases
from kit.engines.base import Engine
from kit.engines.classes import Shape

# What `Engine` asks of each rule module: its delegating methods name them.
ASKED = {
    "config": ["CONFIG_FIX", "refuses_config", "constructor_failure", "rewritten_config",
               "num_aux", "honours"],
    "params": ["engine_params"],
    "load": ["SHAPE_CHECK", "resolve_key", "from_target", "missing_d2t_failure", "d2t_source"],
    "capture": ["capture"],
    "forward": ["era"],
    "acceptance": ["STOP_COUNTING"],
    "registry": ["CLASSES", "draft_class", "for_shape"],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_package_provides_the_interface(name):
    engine = ENGINES[name]
    assert isinstance(engine, Engine) and name == engine.NAME
    missing = [f"{m}.{a}" for m, attrs in ASKED.items() for a in attrs
               if not hasattr(getattr(engine, m), a)]  # fmt: skip
    assert missing == []
    versions = [Version(v) for v in engine.RELEASES]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)


def test_every_method_names_a_module_function_the_test_checks():
    """A method added to `Engine` is added to `ASKED` too, so no engine lacks what it asks."""
    source = inspect.getsource(Engine)
    asked = {f"self.{m}.{a}" for m, attrs in ASKED.items() for a in attrs}
    modules = "config|params|load|capture|forward|acceptance|registry"
    used = set(re.findall(rf"self\.(?:{modules})\.\w+", source))
    assert used <= asked, used - asked


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
        assert pkg.class_for(Shape.LLAMA, rel) is not None  # every release has a Llama draft
