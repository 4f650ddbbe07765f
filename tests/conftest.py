from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
SAMPLE = DATA / "samples" / "speculators-0.9.0-tiny"
PAIR = DATA / "pair"  # the bundled small target and its trained draft
TARGET, DRAFT, PROMPTS = PAIR / "target", PAIR / "draft", PAIR / "prompts.jsonl"


@pytest.fixture
def sample_dir() -> Path:
    """The real speculators 0.9.0 trainer output, kept as the trainer wrote it."""
    return SAMPLE


@pytest.fixture(scope="session")
def target():
    """The bundled target, loaded once: every offline test only reads it."""
    from kit.offline_acceptance import load_target

    return load_target(TARGET)


@pytest.fixture(scope="session")
def prompts():
    """Every held-out prompt of the bundled pair (a module that wants fewer overrides this)."""
    from kit.offline_acceptance import load_prompts

    return load_prompts(PROMPTS)
