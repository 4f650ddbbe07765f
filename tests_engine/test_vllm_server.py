"""A real vLLM 0.32.0 api_server on 127.0.0.1 serving the bundled pair: `kit probe` and
`kit acceptance` (on the server's own log) must read its counters exactly.

The server is started the one way its CPU build starts (`python -m vllm.entrypoints.openai
.api_server`: the `vllm` console script looks for a distribution named vllm and fails), its log
written every second (`VLLM_LOG_STATS_INTERVAL`), and given the kit's prompts greedily.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import PROMPTS, TARGET
from drafts import DRAFT

START_TIMEOUT_S = 420
COUNTERS = {
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "drafted",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"api_server exited {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return
        except OSError:
            time.sleep(1)
    pytest.fail(f"api_server not up after {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "vllm-server.log"
    port = free_port()
    spec = {"method": "eagle3", "model": str(DRAFT), "num_speculative_tokens": 5}
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(TARGET), "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--enforce-eager", "--no-enable-prefix-caching",
        "--speculative-config", json.dumps(spec),
    ]  # fmt: skip
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOG_STATS_INTERVAL": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, proc, log)
        send_prompts(url)
        time.sleep(3)  # the stats loop logs the interval that holds the last request
        yield url, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def send_prompts(url: str) -> None:
    """The kit's prompts as completions of token ids, greedy, stopping at their stop ids."""
    prompts = [json.loads(line) for line in PROMPTS.read_text().splitlines() if line.strip()]
    by_stop: dict[tuple, list] = {}
    for p in prompts:
        by_stop.setdefault(tuple(p.get("stop_ids", [])), []).append(p["ids"])
    for stop, ids in by_stop.items():
        body = {
            "model": str(TARGET),
            "prompt": ids,
            "max_tokens": 24,
            "temperature": 0,
            "stop_token_ids": list(stop),
            "ignore_eos": True,
        }
        req = urllib.request.Request(
            url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=300) as r:
            assert len(json.loads(r.read())["choices"]) == len(ids)


def counters(url: str) -> dict:
    """vLLM's own totals, read from its /metrics text here (not by the kit)."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    got: dict = {"per_position": {}}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        value = float(line.rsplit(" ", 1)[-1]) if not line.startswith("#") else None
        if name in COUNTERS:
            got[COUNTERS[name]] = int(value)
        elif name == "vllm:spec_decode_num_accepted_tokens_per_pos_total":
            pos = int(line.split('position="', 1)[1].split('"', 1)[0])
            got["per_position"][pos] = int(value)
    got["per_position"] = [got["per_position"][i] for i in sorted(got["per_position"])]
    return got


def test_probe_reads_the_counters_exactly(server):
    import kit
    from kit.acceptance.model import Scope

    url, _ = server
    want = counters(url)
    assert want["drafts"] > 0
    report = kit.probe(url, interval=1.0)
    assert report.engine == "vllm"
    life = [w for w in report.run.windows if w.kind.scope == Scope.LIFETIME]
    assert len(life) == 1
    w = life[0]
    assert (w.accepted, w.drafted) == (want["accepted"], want["drafted"])
    assert w.accept_len == pytest.approx(1 + want["accepted"] / want["drafts"], abs=1e-9)
    rates = [a / want["drafts"] for a in want["per_position"]]
    assert w.per_position == pytest.approx(rates, abs=1e-9)


def test_acceptance_on_the_servers_log_adds_up_to_its_counters(server):
    """Every `SpecDecoding metrics:` line of the server's own log, read by `kit acceptance`:
    the accepted and drafted tokens add up to the server's totals, to the token."""
    url, log = server
    want = counters(url)
    done = subprocess.run(
        [sys.executable, "-m", "kit", "acceptance", str(log), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import kit

    (run,) = kit.analyze_logs([log]).runs
    assert run.window_count > 0
    assert sum(w.accepted for w in run.windows) == want["accepted"]
    assert sum(w.drafted for w in run.windows) == want["drafted"]
    assert json.loads(done.stdout)["runs"], "the command reports the run it read"


def test_server_matches_the_kits_prediction(server, predict):
    url, _ = server
    want = counters(url)
    predicted = predict(DRAFT).result
    assert (want["drafts"], want["accepted"]) == (predicted.verify_steps, predicted.accepted)
