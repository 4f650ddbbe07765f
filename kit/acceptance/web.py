"""The few HTTP calls the live probe makes, with one clear error for each way they fail.

Standard library only (`urllib.request`). A refused connection, a timeout, an answer that is not
HTTP 200, a body cut short and a body that is not the JSON asked for each raise a `KitError` that
names the URL and what happened; nothing is retried.

Every call is bounded whatever the server does (docs/limits.md): `timeout` is the whole call's
time, not each read's (a server that trickles a byte a second is cut off at the deadline: the
socket is shut down under the blocked read), the body is read in chunks up to `MAX_BODY_BYTES`
(a gigabyte answer is refused at the limit, never held), a gzip body inflates to the same limit
at most, and redirects stop after urllib's ten.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
import zlib
from typing import Any

from kit.errors import KitError
from kit.limits import NOT_JSON, try_loads

# The largest answer read: a busy vLLM server's /metrics is a few hundred kB.
MAX_BODY_BYTES = 32 << 20
_CHUNK = 1 << 16
_LOCAL = threading.local()


class NotFound(KitError):
    """The server answered, but has no such endpoint (404 / 405)."""


class NotJSON(KitError):
    """The server answered 200 with something that is not JSON."""


def fetch(url: str, timeout: float, body: dict[str, Any] | None = None) -> bytes:
    """GET `url` (or POST `body` as JSON) and return the body of a 200 answer, within `timeout`
    seconds and `MAX_BODY_BYTES` in all."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data is not None else {}
    req = urllib.request.Request(url, data=data, headers=headers)
    watch = _Deadline(timeout)
    try:
        with watch, _OPENER.open(req, timeout=timeout) as resp:
            return _decoded(_body(resp, url), resp.headers.get("Content-Encoding"), url)
    except KitError:
        raise
    except Exception as e:
        if watch.fired:
            raise KitError(f"no answer within {timeout:g} s (for the whole answer)", url) from None
        raise _failure(e, url, timeout) from None


def _failure(e: Exception, url: str, timeout: float) -> KitError:
    """The one error for a failed call, by what failed."""
    if isinstance(e, urllib.error.HTTPError):
        if e.code in (404, 405):
            return NotFound(f"no such endpoint (HTTP {e.code})", url)
        if 300 <= e.code < 400:
            return KitError(f"the server redirects in a loop or too often (HTTP {e.code})", url)
        return KitError(f"the server answered HTTP {e.code} {e.reason}", url)
    if isinstance(e, urllib.error.URLError):
        return KitError(_why(e.reason, timeout), url)
    if isinstance(e, http.client.IncompleteRead):
        got, more = len(e.partial), e.expected or 0
        return KitError(
            f"the server closed the connection mid-answer ({got} bytes of {got + more})", url
        )
    if isinstance(e, TimeoutError):
        return KitError(f"no answer within {timeout:g} s", url)
    if isinstance(e, http.client.HTTPException | OSError | ValueError):
        return KitError(f"the server broke off the answer ({type(e).__name__})", url)
    raise e


def _body(resp: http.client.HTTPResponse, url: str) -> bytes:
    """The body read in chunks, refused once it passes `MAX_BODY_BYTES` (a declared length
    over it is refused before a byte is read)."""
    declared = resp.headers.get("Content-Length", "")
    if declared.strip().isdigit() and int(declared) > MAX_BODY_BYTES:
        raise KitError(f"the answer declares {int(declared)} bytes; {_OVER}", url)
    parts, size = [], 0
    while chunk := resp.read(_CHUNK):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise KitError(f"the answer runs past {MAX_BODY_BYTES} bytes; {_OVER}", url)
        parts.append(chunk)
    if resp.length:  # the connection ended before the declared length
        raise http.client.IncompleteRead(b"".join(parts), resp.length)
    return b"".join(parts)


_OVER = f"the probe reads at most {MAX_BODY_BYTES} bytes (MAX_BODY_BYTES)"


def _decoded(body: bytes, encoding: str | None, url: str) -> bytes:
    """The body as sent, or inflated when the server gzipped it unasked, to the same limit."""
    encoding = (encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise KitError(f"the answer is {encoding!r}-encoded, which the probe cannot read", url)
    inflate = zlib.decompressobj(wbits=zlib.MAX_WBITS | 32)  # gzip or zlib, by its header
    try:
        out = inflate.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error as e:
        raise KitError(f"the answer says {encoding} but does not inflate ({e})", url) from None
    if len(out) > MAX_BODY_BYTES or inflate.unconsumed_tail:
        raise KitError(f"the {encoding} answer inflates past {MAX_BODY_BYTES} bytes; {_OVER}", url)
    return out


class _Deadline:
    """Shuts down every socket the call opened once `seconds` have passed: a read blocked on a
    server that trickles bytes returns then, where a per-read timeout would wait forever."""

    def __init__(self, seconds: float) -> None:
        self.socks: list[socket.socket] = []
        self.fired = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        _LOCAL.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        _LOCAL.deadline = None

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self.socks.append(sock)
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self.socks:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed: nothing is blocked on it
        sock.shutdown(socket.SHUT_RDWR)


def _watched(conn: http.client.HTTPConnection) -> None:
    deadline = getattr(_LOCAL, "deadline", None)
    if deadline is not None and conn.sock is not None:
        deadline.add(conn.sock)


class _Conn(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _watched(self)


class _TLSConn(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _watched(self)


class _HTTP(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_Conn, req)


class _HTTPS(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_TLSConn, req, context=self._context)


# http(s) only, under the deadline: no ftp or file handler a redirect could lead to.
_OPENER = urllib.request.OpenerDirector()
for _handler in (
    urllib.request.ProxyHandler(),
    _HTTP(),
    _HTTPS(),
    urllib.request.HTTPDefaultErrorHandler(),
    urllib.request.HTTPRedirectHandler(),
    urllib.request.HTTPErrorProcessor(),
    urllib.request.UnknownHandler(),
):
    _OPENER.add_handler(_handler)


def _why(reason: object, timeout: float) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused: no server listens there"
    if isinstance(reason, TimeoutError | socket.timeout):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, socket.gaierror):
        return f"unknown host ({reason.strerror})"
    return f"cannot connect ({reason})"


def fetch_json(url: str, timeout: float, body: dict[str, Any] | None = None) -> Any:
    """`fetch`, decoded as JSON; a body that is not JSON is an error naming the URL."""
    raw = fetch(url, timeout, body)
    value = try_loads(raw)
    if value is NOT_JSON:
        head = raw[:80].decode("utf-8", "replace")
        raise NotJSON(f"the answer is not JSON (or nests too deep): {head!r}", url)
    return value


def fetch_text(url: str, timeout: float) -> str:
    return fetch(url, timeout).decode("utf-8", "replace")
