"""`probe(url)` / `python -m kit probe` against HTTP servers on 127.0.0.1 that answer as SGLang
0.5.10 and vLLM do (tests/engine_servers.py), and every way a server can fail to answer."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import pytest
from engine_servers import VLLM, SGLang, as_json, serve

from kit.acceptance import probe
from kit.cli import main
from kit.errors import KitError


def test_vllm_interval_acceptance_from_counter_differences():
    """vLLM's counters are totals since start (0.33.0 v1/spec_decode/metrics.py:178-196 gives
    the interval as the ratio of increases): the server's past accepted ~2 % of drafts, the
    interval between the two scrapes 50 % (0.75 / 0.5 / 0.25 per position). The probe reports the
    interval, not the lifetime average the totals give."""
    server = VLLM(rates=(0.75, 0.5, 0.25), lifetime_rates=(0.05, 0.02, 0.0))
    with serve(server.routes()) as url:
        report = probe(url, interval=0.2, requests=2)
    fig = report.figures()
    assert fig["interval"]["accept_len"]["mean"] == pytest.approx(2.5)
    assert fig["interval"]["draft_acceptance"] == pytest.approx(0.5)
    assert fig["interval"]["per_position"] == pytest.approx([0.75, 0.5, 0.25])
    assert fig["request"]["accept_len"]["mean"] == pytest.approx(2.5)  # 0.33 per-request metrics
    assert "lifetime" not in fig
    assert report.version == "0.11.0" and report.engine == "vllm"
    assert report.server_args == {
        "model": "llama-3.1-8b",
        "max_model_len": 8192,
        "num_speculative_tokens": 3,
    }
    assert report.interval_s >= 0.2
    assert not [f for f in report.findings if f.severity.name in ("ERROR", "CRITICAL")]


def test_vllm_idle_interval_falls_back_to_lifetime_totals_and_says_so():
    """No drafts between the scrapes: the lifetime figure, named as such, and a note."""
    server = VLLM(per_scrape=0, lifetime_rates=(0.0, 0.0, 0.0))
    with serve(server.routes()) as url:
        report = probe(url, interval=0.05)
    fig = report.figures()
    assert set(fig) == {"lifetime"} and fig["lifetime"]["accept_len"]["mean"] == 1.0
    assert any("nothing was drafted between the scrapes" in n for n in report.notes)
    assert "ZERO_ACCEPTANCE" in {f.code for f in report.findings}


def test_sglang_settings_and_zero_acceptance():
    """SGLang 0.5.10: /get_server_info gives the server arguments and version; the lifetime
    avg_spec_accept_length, the /metrics gauges and every request's meta_info show accept len
    1.00 (no draft accepted): ZERO_ACCEPTANCE under sglang==0.5.10."""
    server = SGLang(accepted=0.0)
    with serve(server.routes()) as url:
        report = probe(url, requests=3)
    assert report.engine == "sglang" and report.version == "0.5.10"
    assert report.server_args["speculative_algorithm"] == "EAGLE3"
    assert report.server_args["speculative_num_draft_tokens"] == 5
    assert report.run.engine == "sglang==0.5.10"
    fig = report.figures()
    assert fig["lifetime"]["accept_len"]["mean"] == 1.0
    assert fig["interval"]["accept_len"]["mean"] == 1.0
    assert fig["request"]["windows"] == 3 and fig["request"]["draft_acceptance"] == 0.0
    zero = [f for f in report.findings if f.code == "ZERO_ACCEPTANCE"]
    assert zero and zero[0].engine == "sglang==0.5.10"
    assert report.to_dict()["server_args"]["speculative_num_steps"] == 4


def test_sglang_healthy_is_quiet_and_metrics_off_is_a_note():
    """A draft accepting 3 of 4 drafts per step, metrics off: no finding at error level, and
    the note says how to turn metrics on."""
    server = SGLang(accepted=3.0, metrics=False)
    with serve(server.routes()) as url:
        report = probe(url, requests=2)
    assert not [f for f in report.findings if f.severity.name in ("ERROR", "CRITICAL")]
    assert any("--enable-metrics" in n for n in report.notes)
    assert report.figures()["request"]["draft_acceptance"] == pytest.approx(0.75)


def test_server_version_outside_the_modelled_releases_is_a_note():
    server = SGLang(accepted=0.0, version="0.6.1")
    with serve(server.routes()) as url:
        report = probe(url)
    assert report.run.engine == "sglang==0.6.1"
    assert any("outside the supported range" in n for n in report.notes)


def test_cli_json_and_fail_on(capsys):
    server = SGLang(accepted=0.0)
    with serve(server.routes()) as url:
        rc = main(["probe", url, "--requests", "1", "--json", "--fail-on", "critical"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert out["server_args"]["speculative_eagle_topk"] == 1
    assert out["findings"][0]["code"] == "ZERO_ACCEPTANCE"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raw_server(reply: bytes, hold: float = 0.0):
    """A socket server that answers every connection with `reply` bytes, then closes."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()

    def loop() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.recv(65536)
            time.sleep(hold)
            with contextlib.suppress(OSError):  # the client may have given up
                conn.sendall(reply)
            conn.close()

    threading.Thread(target=loop, daemon=True).start()
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_refused_connection_is_one_error():
    with pytest.raises(KitError, match="connection refused"):
        probe(f"http://127.0.0.1:{_free_port()}", timeout=2)


def test_timeout_is_one_error():
    sock, url = _raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", hold=3)
    try:
        with pytest.raises(KitError, match=r"no answer within 0\.5 s"):
            probe(url, timeout=0.5)
    finally:
        sock.close()


def test_half_written_answer_is_one_error():
    body = b'{"internal_states": [{"avg_spec'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
    sock, url = _raw_server(head + body)
    try:
        with pytest.raises(KitError, match="closed the connection mid-answer"):
            probe(url, timeout=2)
    finally:
        sock.close()


def test_a_server_that_is_not_an_engine_is_one_error():
    routes = {
        "/get_server_info": lambda _b: (200, "text/html", b"<html>hello</html>"),
        "/metrics": lambda _b: (200, "text/plain", b"# HELP up a gauge\nup 1\n"),
        "/health": lambda _b: as_json({"ok": True}),
    }
    with serve(routes) as url, pytest.raises(KitError) as e:
        probe(url, timeout=2)
    assert "not an SGLang or vLLM server" in str(e.value)
    assert "/server_info: no such endpoint (HTTP 404)" in str(e.value)


def test_cli_errors_are_one_line_exit_2(capsys):
    rc = main(["probe", f"http://127.0.0.1:{_free_port()}", "--timeout", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "connection refused" in err
