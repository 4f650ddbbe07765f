from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
SAMPLE = DATA / "samples" / "speculators-0.9.0-tiny"


@pytest.fixture
def sample_dir() -> Path:
    """The real speculators 0.9.0 trainer output, kept as the trainer wrote it."""
    return SAMPLE
