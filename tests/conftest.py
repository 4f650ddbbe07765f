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


@pytest.fixture(scope="session", autouse=True)
def incident_draft() -> Path:
    """The incident team's draft checkpoint (`kit.incident`), written before any test reads the
    bundled incident, so every test sees the same folder whether or not `make demo` ran first."""
    from kit.incident import draft_checkpoint

    return draft_checkpoint()


@pytest.fixture
def kimi_config_only(tmp_path: Path) -> Path:
    """The incident draft's config.json alone: a draft folder that holds no weights."""
    folder = tmp_path / "kimi-draft-config"
    folder.mkdir()
    source = DATA / "incident" / "kimi-k2.5" / "draft" / "config.json"
    (folder / "config.json").write_bytes(source.read_bytes())
    return folder
