"""The few HTTP calls the live probe makes, with one clear error for each way they fail.

Standard library only (`urllib.request`). A refused connection, a timeout, an answer that is not
HTTP 200, a body cut short and a body that is not the JSON asked for each raise a `KitError` that
names the URL and what happened; nothing is retried.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from typing import Any

from kit.errors import KitError


class NotFound(KitError):
    """The server answered, but has no such endpoint (404 / 405)."""


class NotJSON(KitError):
    """The server answered 200 with something that is not JSON."""


def fetch(url: str, timeout: float, body: dict[str, Any] | None = None) -> bytes:
    """GET `url` (or POST `body` as JSON) and return the body of a 200 answer."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data is not None else {}
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        if e.code in (404, 405):
            raise NotFound(f"no such endpoint (HTTP {e.code})", url) from None
        raise KitError(f"the server answered HTTP {e.code} {e.reason}", url) from None
    except urllib.error.URLError as e:
        raise KitError(_why(e.reason, timeout), url) from None
    except http.client.IncompleteRead as e:
        raise KitError(
            f"the server closed the connection mid-answer ({len(e.partial)} bytes of "
            f"{len(e.partial) + (e.expected or 0)})",
            url,
        ) from None
    except (http.client.HTTPException, ConnectionError) as e:
        raise KitError(f"the server broke off the answer ({type(e).__name__})", url) from None
    except TimeoutError:
        raise KitError(f"no answer within {timeout:g} s", url) from None


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
    try:
        return json.loads(raw)
    except ValueError:
        head = raw[:80].decode("utf-8", "replace")
        raise NotJSON(f"the answer is not JSON: {head!r}", url) from None


def fetch_text(url: str, timeout: float) -> str:
    return fetch(url, timeout).decode("utf-8", "replace")
