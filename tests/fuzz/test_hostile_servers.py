"""`probe` against servers on 127.0.0.1 that misbehave on purpose, and against fuzzed answers.

Each hostile server makes probe end within its time bound (the whole call's `timeout`, not each
read's) and byte bound (`web.MAX_BODY_BYTES`) with one `KitError` naming the URL and what went
wrong. The gigabyte answer and the gzip bomb run in a child process that reports its peak RSS.
"""

from __future__ import annotations

import functools
import gzip
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from engine_servers import as_json, serve
from fuzz_inputs import more, mutated_json, server_texts, survives
from hypothesis import given
from hypothesis import strategies as st

from kit.acceptance import web
from kit.acceptance.live import probe
from kit.errors import KitError

TIMEOUT = 1.0
INFO, SGLANG_METRICS, VLLM_METRICS = server_texts()


@contextmanager
def raw_server(talk: Callable[[socket.socket, int], None]) -> Iterator[str]:
    """A server that runs `talk(connection, request number)` for each connection it accepts."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def loop() -> None:
        n = 0
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            n += 1
            threading.Thread(target=_serve_one, args=(talk, conn, n), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def _serve_one(talk: Callable[[socket.socket, int], None], conn: socket.socket, n: int) -> None:
    with conn:
        try:
            conn.recv(65536)
            talk(conn, n)
        except OSError:
            pass  # the client hung up: what a bounded client does


def trickle(conn: socket.socket, _n: int) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99\r\n")
    for _ in range(100):  # a header byte every 0.1 s: each read times out never
        conn.sendall(b"X")
        time.sleep(0.1)


def trickle_body(conn: socket.socket, _n: int) -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9999\r\n\r\n"
    )
    for _ in range(100):
        conn.sendall(b" ")
        time.sleep(0.1)


def gigabytes(conn: socket.socket, _n: int, declare: bool = False) -> None:
    length = b"Content-Length: 4000000000\r\n" if declare else b""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + length + b"\r\n[")
    block = b"1," * (1 << 19)
    for _ in range(4000):  # 4 GB unless the client stops reading
        conn.sendall(block)


@functools.cache
def bomb() -> bytes:
    """256 MiB of spaces (8 times the byte bound) gzipped to 250 kB, made once."""
    return gzip.compress(b" " * (1 << 28), compresslevel=9)


def gzip_bomb(conn: socket.socket, _n: int) -> None:
    body = bomb()
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    conn.sendall(head + body)


def redirect_loop(conn: socket.socket, n: int) -> None:
    conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: /hop{n}\r\nContent-Length: 0\r\n\r\n".encode())


def close_mid(conn: socket.socket, _n: int) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b'{"internal_states": [')


def status(code: int) -> Callable[[socket.socket, int], None]:
    def talk(conn: socket.socket, _n: int) -> None:
        conn.sendall(f"HTTP/1.1 {code} X\r\nContent-Length: 2\r\n\r\n{{}}".encode())

    return talk


def not_utf8(conn: socket.socket, _n: int) -> None:
    body = b"\xff\xfe\x00vllm:\xc3(" * 100
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n"
                 + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)  # fmt: skip


CASES = {
    "slowloris headers": (trickle, "no answer within 1 s"),
    "slowloris body": (trickle_body, "no answer within 1 s"),
    "gigabytes streamed": (gigabytes, "runs past"),
    "gigabytes declared": (lambda c, n: gigabytes(c, n, declare=True), "declares 4000000000 bytes"),
    "gzip bomb": (gzip_bomb, "inflates past"),
    "redirect loop": (redirect_loop, "redirects in a loop"),
    "close mid-answer": (close_mid, "closed the connection mid-answer"),
    "HTTP 500": (status(500), "HTTP 500"),
    "HTTP 404": (status(404), "not an SGLang or vLLM server"),
    "not UTF-8, wrong type": (not_utf8, "not valid Prometheus text exposition"),
}


@pytest.mark.parametrize("case", CASES)
def test_probe_ends_each_hostile_server_within_its_bounds(case: str):
    talk, why = CASES[case]
    bomb()  # made before the clock starts
    with raw_server(talk) as url:
        t0 = time.monotonic()
        with pytest.raises(KitError) as err:
            probe(url, interval=0, timeout=TIMEOUT)
        elapsed = time.monotonic() - t0
    assert url in str(err.value) and why in str(err.value), str(err.value)
    assert "\n" not in str(err.value)
    # three endpoints at most before it gives up, each within its timeout (plus start-up)
    assert elapsed < 3 * TIMEOUT + 2, elapsed


CHILD = """
import resource, sys
from kit.acceptance.live import probe
from kit.errors import KitError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    probe(sys.argv[1], interval=0, timeout=20)
except KitError as e:
    print(str(e), file=sys.stderr)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.parametrize("case", ["gigabytes streamed", "gzip bomb"])
def test_memory_stays_flat_on_a_gigabyte_answer(case: str):
    """Peak RSS grows by little more than the byte bound, never by the gigabytes sent."""
    with raw_server(CASES[case][0]) as url:
        out = subprocess.run([sys.executable, "-c", CHILD, url], capture_output=True, text=True,
                             timeout=120, check=True)  # fmt: skip
    growth_kib = int(out.stdout.split()[-1])
    assert CASES[case][1] in out.stderr, out.stderr
    limit_kib = 3 * web.MAX_BODY_BYTES // 1024  # the chunks, their join, one decode
    assert growth_kib < limit_kib, f"peak RSS grew by {growth_kib} KiB"


SERVERS = st.sampled_from(["sglang", "vllm"])


@pytest.fixture(scope="module")
def fuzz_server():
    """One server whose answers each case sets."""
    answers: dict[str, bytes] = {}
    routes = {path: (lambda p: lambda _b: (200, "application/json", answers.get(p, b"")))(path)
              for path in ("/get_server_info", "/server_info", "/metrics", "/version",
                           "/v1/models", "/generate", "/v1/completions")}  # fmt: skip
    with serve(routes) as url:
        yield url, answers


@more(3)
@given(
    engine=SERVERS,
    info=mutated_json(INFO),
    metrics=st.sampled_from([SGLANG_METRICS, VLLM_METRICS]).flatmap(
        lambda m: st.binary(max_size=64).map(lambda b: m[: len(m) // 2] + b)
    ),
)
def test_probe_reads_or_refuses_fuzzed_answers_in_one_line(fuzz_server, engine, info, metrics):
    url, answers = fuzz_server
    answers.clear()
    answers["/metrics"] = metrics
    if engine == "sglang":
        answers["/get_server_info"] = info
    else:
        answers["/version"] = json.dumps({"version": info[:20].decode("latin-1")}).encode()
        answers["/v1/models"] = info
    answers["/generate"] = answers["/v1/completions"] = info  # the answer to each request
    report = survives(probe, url, interval=0, requests=2, timeout=TIMEOUT)
    if report is not None:
        json.dumps(report.to_dict())


def test_as_json_is_what_the_fuzz_server_sends():
    """The fuzz server's route answers are what the fake engines send (a shared helper)."""
    assert as_json({"a": 1}) == (200, "application/json", b'{"a": 1}')
