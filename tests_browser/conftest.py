"""The browser drive of JupyterLab (`make test-browser`): Lab as `make lab` starts it, chromium
driven by playwright, the headless run of the same notebooks as the reference of what each cell
shows. Never collected by `make test` (pyproject's testpaths is tests/).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lab_server import ROOT, running_lab  # noqa: E402

SHOTS = ROOT / "runs" / "test-browser"  # screenshots a person looks at after the drive
RUN_TIMEOUT_S = 600


def chromium_path() -> str | None:
    """$CHROMIUM, else a chromium on PATH (Debian's `chromium` package)."""
    given = os.environ.get("CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def pytest_configure(config) -> None:
    if importlib.util.find_spec("playwright") is None:
        pytest.exit("the browser drive needs playwright: run `make test-browser`", returncode=2)
    if chromium_path() is None:
        where = os.environ.get("CHROMIUM") or "chromium on PATH"
        pytest.exit(
            f"no chromium found ({where}): install it (apt-get install chromium) or set "
            "CHROMIUM=/path/to/chromium",
            returncode=2,
        )


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> Path:
    """`python -m kit run` on the bundled incident (what `make demo` runs): its executed
    notebooks say what each cell shows, and the postmortem notebook reads this run."""
    out = tmp_path_factory.mktemp("reference") / "run"
    done = subprocess.run(
        [sys.executable, "-m", "kit", "run", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, f"kit run failed: {done.stderr[-2000:]}"
    from kit.report.notebook import script_path
    from kit.report.runbook import execute_notebook

    error = execute_notebook(
        script_path("postmortem"), out / "postmortem.ipynb", {"run_dir": str(out)}, RUN_TIMEOUT_S
    )
    assert error is None, f"the postmortem notebook failed headless: {error}"
    return out


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    with running_lab(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_path())
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context.new_page()
    context.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS
