"""`make lab`: the command it runs, started for real on 127.0.0.1, serving the scripts as notebooks.

The server is the one `make lab` starts (its command line read from `make -n lab`, rooted at the
repository). What a browser does with it (opening, running, widgets) is driven in headless
chromium by tests_browser/ (`make test-browser`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from kit.report.notebook import ROOT

pytestmark = pytest.mark.slow  # a real Jupyter server; still part of `make test`

TOKEN = "kit-test"
SCRIPT = "notebooks/05_offline_acceptance.py"


def lab_command(*args: str) -> str:
    """The shell command `make lab LAB_ARGS=…` runs (the venv's stamp target is not run)."""
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", "lab", f"LAB_ARGS={' '.join(args)}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.replace("\\\n", " ")
    return next(line for line in out.splitlines() if "jupyter lab" in line)


def test_lab_runs_as_root_and_takes_remote_arguments():
    """Jupyter refuses to start as root without --allow-root, the usual case in a GPU container;
    --ip / --no-browser for a remote machine pass through LAB_ARGS."""
    cmd = lab_command("--ip=0.0.0.0", "--no-browser")
    assert ("--allow-root" in cmd) == (os.getuid() == 0)
    assert "--ip=0.0.0.0 --no-browser" in cmd
    assert cmd.rstrip().endswith("notebooks/01_key_inspection.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(url: str, method: str = "GET", body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"token {TOKEN}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def lab():
    """`make lab`'s server on a free port, and a scratch folder for notebooks saved from it."""
    port = _free_port()
    cmd = lab_command("--no-browser", "--ip=127.0.0.1", f"--port={port}",
                      f"--IdentityProvider.token={TOKEN}")  # fmt: skip
    server = subprocess.Popen(
        cmd, shell=True, cwd=ROOT, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    scratch = ROOT / "runs" / f"lab-test-{port}"  # inside the server's root, ignored by git
    try:
        for _ in range(240):
            if server.poll() is not None:
                pytest.fail(f"make lab exited {server.returncode}: {server.stderr.read()[-2000:]}")
            try:
                _call(f"{url}/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        else:
            pytest.fail("make lab did not answer within 120 s")
        scratch.mkdir(parents=True)
        yield url, scratch
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_script_opens_as_a_notebook_by_default(lab):
    """Lab's default viewer for a .py is the text editor; `make lab` makes it jupytext's
    notebook, so a double click (and the notebook it opens on) shows cells, not code."""
    url, _ = lab
    settings = _call(f"{url}/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
    default = settings["schema"]["properties"]["defaultViewers"]["default"]
    assert default["python"] == "Jupytext Notebook"
    model = _call(f"{url}/api/contents/{SCRIPT}?type=notebook&content=1")
    cells = model["content"]["cells"]
    assert model["type"] == "notebook" and cells[0]["cell_type"] == "markdown"
    assert any("parameters" in c["metadata"].get("tags", []) for c in cells)
    assert model["content"]["metadata"]["kernelspec"]["name"] == "python3"


def test_saving_from_lab_keeps_the_script_as_it_was(lab):
    """Saved unchanged, the script is byte for byte what was read; an edited one stays a percent
    script with its parameters tag and no tool version in its header."""
    url, scratch = lab
    original = (ROOT / SCRIPT).read_bytes()
    model = _call(f"{url}/api/contents/{SCRIPT}?type=notebook&content=1")
    try:
        _call(f"{url}/api/contents/{SCRIPT}", "PUT",
              {"type": "notebook", "format": "json", "content": model["content"]})  # fmt: skip
        assert (ROOT / SCRIPT).read_bytes() == original
    finally:
        (ROOT / SCRIPT).write_bytes(original)

    model["content"]["cells"].append(
        {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [],
         "execution_count": 3}
    )  # fmt: skip
    edited = scratch / "edited.py"
    _call(f"{url}/api/contents/{edited.relative_to(ROOT)}", "PUT",
          {"type": "notebook", "format": "json", "content": model["content"]})  # fmt: skip
    assert edited.read_text() == original.decode() + "\n# %%\nx = 1\n"
    assert [p.name for p in scratch.iterdir()] == ["edited.py"]  # no paired .ipynb beside it


def test_a_save_after_the_kernel_starts_leaves_every_script_as_it_was(lab):
    """On connecting, Lab writes the running kernel's spec into the notebook (the venv's kernel
    is "Python 3 (ipykernel)"): a header naming another display name marks the notebook modified
    as it opens and puts a diff into the tracked script at the first save."""
    url, _ = lab
    spec = _call(f"{url}/api/kernelspecs")["kernelspecs"]["python3"]["spec"]
    running = {
        "display_name": spec["display_name"],
        "language": spec["language"],
        "name": "python3",
    }
    for script in sorted((ROOT / "notebooks").glob("*.py")):
        rel = script.relative_to(ROOT).as_posix()
        original = script.read_bytes()
        model = _call(f"{url}/api/contents/{rel}?type=notebook&content=1")
        assert model["content"]["metadata"]["kernelspec"] == running, rel
        try:
            _call(f"{url}/api/contents/{rel}", "PUT",
                  {"type": "notebook", "format": "json", "content": model["content"]})  # fmt: skip
            assert script.read_bytes() == original, rel
        finally:
            script.write_bytes(original)


def test_the_printed_url_opens_notebook_1(lab):
    """With --no-browser the URL Jupyter prints is its default URL: `make lab` points it at
    notebook 1, not at the launcher."""
    url, _ = lab
    request = urllib.request.Request(f"{url}/?token={TOKEN}")
    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(request, timeout=30)
    assert redirect.value.headers["Location"].startswith("/lab/tree/notebooks/01_key_inspection.py")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
