"""`make lab`'s JupyterLab server, started for real on 127.0.0.1 for a browser to drive.

The command is the one `make lab` runs (read from `make -n lab`), rooted at the repository, with
a token and a free port. Lab's per-user state (settings, workspaces) goes to a scratch folder:
the drive sees Lab's defaults, not the settings of whoever runs it, and leaves them alone.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.test_lab import lab_command  # the line `make lab` runs, as its own test reads it

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "kit-browser-test"
START_TIMEOUT_S = 120

# Lab settings a person would not want a test to depend on: no news toast over the notebook, and
# no autosave, so a notebook edited by the drive (`interactive = True`) never reaches the script.
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


@dataclass
class Lab:
    """A running server: where it answers, and its token."""

    url: str
    token: str = TOKEN

    def api(self, path: str) -> dict:
        """A GET on the server's REST API."""
        request = urllib.request.Request(f"{self.url}{path}")
        request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(folder: Path) -> None:
    for name, values in USER_SETTINGS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@contextmanager
def running_lab(scratch: Path) -> Iterator[Lab]:
    """`make lab`'s server until the block ends; its own settings and workspaces in `scratch`.

    `expose_app_in_browser` lets the drive read the notebook model Lab holds (what a save would
    write), and the checkpoints a save makes go to `scratch`, not beside the scripts; nothing else
    differs from `make lab`.
    """
    _write_settings(scratch / "settings")
    port = _free_port()
    cmd = lab_command(
        "--no-browser", "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={TOKEN}",
        "--LabApp.expose_app_in_browser=True",
        f"--FileCheckpoints.checkpoint_dir={scratch / 'checkpoints'}",
    )  # fmt: skip
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(scratch / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
    }
    log = (scratch / "lab.log").open("w")
    server = subprocess.Popen(
        cmd, shell=True, cwd=ROOT, env=env, start_new_session=True, stdout=log, stderr=log
    )
    lab = Lab(f"http://127.0.0.1:{port}")
    try:
        _wait_until_up(lab, server, scratch / "lab.log")
        yield lab
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def _wait_until_up(lab: Lab, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"make lab exited {server.returncode}: {log.read_text()[-2000:]}")
        try:
            lab.api("/api/status")
            return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)
    raise RuntimeError(f"make lab did not answer within {START_TIMEOUT_S} s")
