"""A Hugging Face Hub on 127.0.0.1 for the tests: the file and model-info endpoints that
huggingface_hub calls, answering as the Hub does.

- `GET /api/models/{repo}` and `/api/models/{repo}/revision/{rev}`: id, sha, siblings;
- `HEAD|GET /{repo}/resolve/{rev}/{file}`: X-Repo-Commit, ETag, Content-Length, and for weight
  files (LFS on the Hub) X-Linked-Etag and X-Linked-Size; `Range: bytes=a-b` answers 206 with
  Content-Range;
- refusals with the X-Error-Code header hf_raise_for_status reads: RepoNotFound (401, as the Hub
  answers an anonymous caller, for a missing or a private repo), GatedRepo, RevisionNotFound,
  EntryNotFound; `missing` answers a missing repo otherwise, as a mirror or proxy might (a 404
  with EntryNotFound, or with no error code at all).

Every body byte sent is counted, so a test can hold the kit's "bytes fetched" against what the
server actually sent.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$")
_RANGE = re.compile(r"bytes=(\d+)-(\d*)")
_LFS = (".safetensors", ".bin", ".pt")


@dataclass
class Repo:
    """A repo: its files (name -> local path) per revision name, each revision at one commit."""

    files: dict[str, Path]
    commit: str
    revisions: dict[str, str] = field(default_factory=dict)  # branch/tag -> commit
    gated: bool = False
    private: bool = False


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    token: str = "hf_test_token"
    ranges: bool = True  # False: answer a range request with the whole file, as some proxies do
    missing: tuple[int, str | None] = (401, "RepoNotFound")  # the answer for a missing repo
    sent: int = 0  # body bytes sent, every request
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, repo: str, folder: Path, commit: str | None = None, **kw) -> Repo:
        files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
        sha = commit or hashlib.sha1(repo.encode()).hexdigest()
        entry = Repo(files, sha, {"main": sha}, **kw)
        self.repos[repo] = entry
        return entry

    def reset_counts(self) -> None:
        with self.lock:
            self.sent = 0
            self.requests.clear()


def _commit(repo: Repo, rev: str) -> str | None:
    if rev in repo.revisions:
        return repo.revisions[rev]
    return rev if rev in repo.revisions.values() else None


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        with self.hub.lock:
            self.hub.requests.append(f"{self.command} {path} {self.headers.get('range', '')}")
        if m := _INFO.match(path):
            return self._info(m.group("repo"), unquote(m.group("rev") or "main"))
        if m := _RESOLVE.match(path):
            return self._file(m.group("repo"), unquote(m.group("rev")), unquote(m["file"]), body)
        self._refuse(404, "RepoNotFound", "no such route")

    def _repo(self, name: str, for_files: bool) -> Repo | None:
        repo = self.hub.repos.get(name)
        authorised = self.headers.get("authorization") == f"Bearer {self.hub.token}"
        if repo is None:
            self._refuse(*self.hub.missing, "Repository not found")
            return None
        if repo.private and not authorised:
            self._refuse(401, "RepoNotFound", "Repository not found")
            return None
        if repo.gated and for_files and not authorised:
            self._refuse(401, "GatedRepo", "Access to this model is restricted.")
            return None
        return repo

    def _info(self, name: str, rev: str) -> None:
        repo = self._repo(name, for_files=False)
        if repo is None:
            return
        sha = _commit(repo, rev)
        if sha is None:
            return self._refuse(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        data = {
            "id": name,
            "sha": sha,
            "private": repo.private,
            "gated": "auto" if repo.gated else False,
            "siblings": [{"rfilename": f} for f in sorted(repo.files)],
        }
        self._send(200, json.dumps(data).encode(), {"Content-Type": "application/json"}, True)

    def _file(self, name: str, rev: str, file: str, body: bool) -> None:
        repo = self._repo(name, for_files=True)
        if repo is None:
            return
        sha = _commit(repo, rev)
        if sha is None:
            return self._refuse(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        local = repo.files.get(file)
        if local is None:
            return self._refuse(404, "EntryNotFound", f"{file} does not exist")
        size = local.stat().st_size
        etag = hashlib.sha256(f"{sha}:{file}:{size}".encode()).hexdigest()
        headers = {"X-Repo-Commit": sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        if file.endswith(_LFS):
            headers |= {"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(size)}
        first, last, status = 0, size - 1, 200
        if self.hub.ranges and (m := _RANGE.match(self.headers.get("range", ""))):
            first = int(m.group(1))
            last = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            status = 206
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        with open(local, "rb") as f:
            f.seek(first)
            data = f.read(max(last - first + 1, 0)) if body else b""
        headers["Content-Length"] = str(last - first + 1)
        self._send(status, data, headers, body)

    def _refuse(self, status: int, code: str | None, message: str) -> None:
        headers = {"X-Error-Code": code} if code else {}
        headers["X-Error-Message"] = message
        self._send(status, json.dumps({"error": message}).encode(), headers, True)

    def _send(self, status: int, data: bytes, headers: dict[str, str], body: bool) -> None:
        try:
            self.send_response(status)
            headers.setdefault("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client hung up (the kit refusing a whole file sent unasked): not sent
        if body:
            with self.hub.lock:
                self.hub.sent += len(data)


def serve(hub: FakeHub) -> tuple[ThreadingHTTPServer, str]:
    """Start the server in a daemon thread; returns it (call .shutdown()) and its endpoint URL."""
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
