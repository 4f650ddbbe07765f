"""A draft or target named by its Hugging Face Hub repo id, judged before anyone downloads it.

`org/name` or `org/name@revision` (a branch, tag or commit) resolves, in this order, to a local
path, a complete entry of the local Hugging Face cache, or the Hub. From the Hub only the small
files are downloaded (`hf_hub_download`: config.json, the index, the tokenizer files the template
rule reads) and each safetensors header is read by HTTP range requests, the way
`HfApi.get_safetensors_metadata` reads it (`hf_hub_url` + `get_session` + `build_hf_headers`),
so HF_ENDPOINT, HF_TOKEN, proxies, HF_HUB_OFFLINE and the cache behave as they do for every
Hugging Face tool. The raw header bytes are parsed by the kit's own parser, so a header judged
from the Hub gets the verdict the same file gets on disk; the file's size comes from the
range answer's Content-Range, which the safetensors checks need and
`get_safetensors_metadata` does not return.

Everything is pinned to the commit the revision resolved to (`HfApi.model_info`), so a verdict
names what it read and is reproducible by that hash. The small files land in the cache's
snapshot folder of that commit; code that takes a folder reads them there, and `source_of`
recognises such a folder (also in another process, e.g. a notebook kernel) as a Hub checkpoint
whose weights stay remote. Tensor bytes (statistics, d2t) are read as bounded ranges;
`--download` fetches the whole repo instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.checkpoint.header import INDEX_NAME, PICKLE_NAMES, has_complete_weights, header_length
from kit.errors import KitError

# `org/name`, `org/name@v1.0`, `org/name@refs/pr/3`, `org/name@<40 hex>`.
REPO_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<rev>[\w./-]+))?$")
# What the rules read besides the weights: the config, and for a target the tokenizer and chat
# template (the template rule, kit.deployment.tokens).
DRAFT_FILES = ("config.json", INDEX_NAME)
TARGET_FILES = (
    *DRAFT_FILES,
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "chat_template.jinja",
)
# The first range of a shard: a draft's header is a few KB (a longer one takes a second range).
FIRST_RANGE_BYTES = 16 * 1024
# Bytes of each tensor a sampled statistic reads from the Hub (on disk: files.SAMPLE_BYTES, 1
# MiB): 8 Ki BF16 values, enough for the untrained-init tests, whose tolerances follow the
# count, and a few hundred KB for a whole draft whatever its size.
HUB_SAMPLE_BYTES = 16 * 1024
RANGE_IGNORED = (
    "{endpoint} answered a range request with the whole file (HTTP 200, not 206); rather than "
    "download it unasked, nothing was read: pass --download to fetch the repo"
)
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


@dataclass
class HubSource:
    """One repo at one commit: what was asked, what it resolved to, and what was fetched."""

    repo: str
    revision: str | None
    commit: str
    folder: Path  # the cache's snapshot folder of `commit`: the small files sit here
    files: frozenset[str]
    endpoint: str
    fetched: int = 0
    sizes: dict[str, int] = field(default_factory=dict)
    headers: dict[str, bytes] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.repo}@{self.revision}" if self.revision else self.repo

    def describe(self) -> str:
        return (
            f"{self.label} from {self.endpoint}, commit {self.commit}: {self.fetched:,} bytes "
            "fetched (small files, safetensors headers, sampled ranges; no full download)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "revision": self.revision,
            "commit": self.commit,
            "endpoint": self.endpoint,
            "bytes_fetched": self.fetched,
        }

    def read(self, file: Path, start: int, length: int) -> bytes:
        """`length` bytes of repo file `file.name` from `start` (one HTTP range request)."""
        body, _ = self._range(file.name, start, start + length - 1)
        if len(body) != length:
            raise KitError(
                f"the Hub sent {len(body)} of {length} bytes asked for", self.where(file)
            )
        return body

    def where(self, file: Path | str) -> Path:
        """How errors name a repo file: repo, commit and file, not a cache path."""
        return Path(f"{self.repo}@{self.commit[:12]}") / Path(file).name

    def _range(self, name: str, first: int, last: int) -> tuple[bytes, int]:
        from huggingface_hub import constants, get_session, hf_hub_url
        from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

        url = hf_hub_url(self.repo, name, revision=self.commit, endpoint=constants.ENDPOINT)
        headers = {**build_hf_headers(), "range": f"bytes={first}-{last}"}
        timeout = constants.HF_HUB_DOWNLOAD_TIMEOUT
        stream = get_session().stream("GET", url, headers=headers, timeout=timeout)
        with hub_errors(self.repo, self.commit, name), stream as response:
            if response.status_code == 200:  # the range ignored: the body is the whole file
                raise KitError(RANGE_IGNORED.format(endpoint=constants.ENDPOINT), self.where(name))
            body = response.read()
            hf_raise_for_status(response)
        self.fetched += len(body)
        m = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
        return body, int(m.group(3)) if m else len(body)

    def header(self, name: str) -> tuple[bytes, int]:
        """The 8-byte length plus the JSON header of repo file `name`, and the file's size."""
        if name not in self.headers:
            head, size = self._range(name, 0, FIRST_RANGE_BYTES - 1)
            n = header_length(head, size, self.where(name))
            if 8 + n > len(head):
                rest, _ = self._range(name, len(head), 8 + n - 1)
                head += rest
            self.headers[name], self.sizes[name] = head[: 8 + n], size
        return self.headers[name], self.sizes[name]


# Sources met in this process, by snapshot folder: one set of header reads per commit.
_SOURCES: dict[Path, HubSource] = {}
# Repo ids resolved in this process: the revision is asked for once, every later open agrees.
_RESOLVED: dict[tuple, Path] = {}


def parse_repo_id(text: str) -> tuple[str, str | None] | None:
    """(repo, revision) when `text` is spelled as a Hub repo id, else None."""
    m = REPO_ID.match(text)
    if not m or text.startswith(".") or ".." in text or looks_local(text):
        return None
    return m.group("repo"), m.group("rev")


# File names a user types for a checkpoint or a config: `drafts/config.json` is a path, whatever
# the Hub allows in a repo name.
_FILE_SUFFIXES = (".json", ".safetensors", ".bin", ".pt", ".pth", ".gguf", ".jinja")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def looks_local(text: str) -> bool:
    """Whether `text` is spelled as a path on this machine, never a repo id: `./x`, `../x`,
    `/x`, `~/x`, a Windows path (`C:\\x`, `x\\y`), a trailing `/`, or a file's name."""
    head = text.split("@", 1)[0]
    return (
        text.startswith(("./", "../", "/", "~", ".\\"))
        or "\\" in text
        or _WINDOWS_DRIVE.match(text) is not None
        or head.endswith("/")
        or head.lower().endswith(_FILE_SUFFIXES)
    )


def sources() -> list[HubSource]:
    """Every Hub repo read in this process, for the report's "what was read" line."""
    return list(_SOURCES.values())


def resolve(text: str | Path, *, target: bool = False, download: bool = False) -> Path:
    """A local folder for `text`: itself when it exists; else the cache's or the Hub's snapshot
    folder of the repo id it names. `target`: also the tokenizer files. `download`: every file."""
    path = Path(text)
    if path.exists():
        return path
    ids = parse_repo_id(str(text))
    if ids is None:
        return path  # the caller's "no such file or folder" stays the error
    key = (*ids, target, download)
    if key not in _RESOLVED:
        cached = _cached_snapshot(*ids)
        _RESOLVED[key] = cached or _from_hub(*ids, target=target, download=download)
    return _RESOLVED[key]


# The arguments that name a draft or target, and whether the tokenizer files are wanted too.
ARGUMENTS = {
    "path": False,
    "draft": False,
    "config": False,
    "draft_config": False,
    "trace_draft": False,
    "target": True,
    "target_config": True,
    "tokenizer": True,
    "served_tokenizer": True,
    "train_tokenizer": True,
}


def resolve_arguments(args: Any, argv: list[str] | None = None) -> None:
    """Replace each repo id among a command's arguments by the local folder it resolves to, so
    every later step (and a notebook kernel handed the path) reads a folder. `argv`, the words
    as typed, keeps a missing path that is spelled as one (`./drafts/mine`, which argparse's
    `Path` shortens to `drafts/mine`) from being looked up on the Hub."""
    download = bool(getattr(args, "download", False))
    for name, target in ARGUMENTS.items():
        value = getattr(args, name, None)
        if isinstance(value, str | Path) and not Path(value).exists():
            typed = _as_typed(value, argv or [])
            if typed is not None and looks_local(typed) and parse_repo_id(str(Path(value))):
                raise KitError("no such file or directory (spelled as a local path, so the Hub "
                               "was not asked)", typed)  # fmt: skip
            resolved = resolve(value, target=target, download=download)
            setattr(args, name, resolved if isinstance(value, Path) else str(resolved))


def _as_typed(value: str | Path, argv: list[str]) -> str | None:
    """The command-line word (or the part after `--flag=`) that argparse turned into `value`."""
    for word in argv:
        text = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if text and (text == str(value) or Path(text) == Path(value)):
            return text
    return None


def report_sources(kernels: bool = False) -> None:
    """One stderr line per Hub repo read: what, at which commit, and how many bytes (`kernels`:
    notebook kernels read their own ranges of the same commits, counted in no line here)."""
    import sys

    for source in sources():
        print(f"hub: {source.describe()}", file=sys.stderr)
    if kernels and sources():
        print("hub: the notebooks' kernels read the headers they need themselves", file=sys.stderr)


def resolve_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """The Python API's keyword inputs with each repo id resolved as `resolve_arguments` does."""
    out = dict(inputs)
    for name, value in inputs.items():
        if name in ARGUMENTS and isinstance(value, str | Path):
            out[name] = resolve(value, target=ARGUMENTS[name])
    return out


WEIGHTS_NEEDED = (
    "runs the target and the draft, so it needs their weights on disk: pass --download (or "
    "fetch the repo with `hf download`) to read {label} whole"
)


def require_local(*paths: str | Path | None) -> None:
    """Refuse a step that needs every tensor byte of a checkpoint whose weights stay remote."""
    for path in paths:
        source = source_of(Path(path)) if path is not None else None
        if source is not None:
            raise KitError(
                "offline acceptance " + WEIGHTS_NEEDED.format(label=source.label),
                Path(source.label),
            )


def is_remote(path: str | Path | None) -> bool:
    """Whether `path` is a Hub checkpoint whose weights are not on disk."""
    return path is not None and source_of(Path(path)) is not None


def _cached_snapshot(repo: str, revision: str | None) -> Path | None:
    """The local cache's snapshot when it holds the weights (a partial one, such as the small
    files an earlier header-only read left, is not a checkpoint)."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(repo, revision=revision, local_files_only=True))
    except (OSError, ValueError):  # LocalEntryNotFoundError is an OSError
        return None
    return folder if has_complete_weights(folder) else None


def _from_hub(repo: str, revision: str | None, *, target: bool, download: bool) -> Path:
    from huggingface_hub import HfApi, constants, hf_hub_download

    with hub_errors(repo, revision):
        info = HfApi(endpoint=constants.ENDPOINT).model_info(repo, revision=revision)
    commit = info.sha or revision or "main"
    files = frozenset(s.rfilename for s in info.siblings or ())
    folder = _snapshot_folder(repo, commit)
    if download:  # every file the revision lists, as snapshot_download fetches them; by the
        # revision asked (not its hash) so the cache records the branch for offline use later
        for name in sorted(files):
            with hub_errors(repo, revision, name):
                hf_hub_download(repo, name, revision=revision, endpoint=constants.ENDPOINT)
        return folder
    source = _SOURCES.get(folder) or HubSource(
        repo, revision, commit, folder, files, constants.ENDPOINT
    )
    for name in TARGET_FILES if target else DRAFT_FILES:
        if name in files and not (folder / name).is_file():
            with hub_errors(repo, revision, name):
                got = hf_hub_download(repo, name, revision=commit, endpoint=constants.ENDPOINT)
            source.fetched += Path(got).stat().st_size
    folder.mkdir(parents=True, exist_ok=True)
    _SOURCES[folder] = source
    return folder


def _snapshot_folder(repo: str, commit: str) -> Path:
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    name = repo_folder_name(repo_id=repo, repo_type="model")
    return Path(constants.HF_HUB_CACHE) / name / "snapshots" / commit


def source_of(folder: Path) -> HubSource | None:
    """The Hub source behind a snapshot folder that holds no weights of its own: one this
    process resolved, or one a path of the cache's layout names (models--org--name/snapshots/
    <commit>), as a notebook kernel receives it."""
    folder = Path(folder)
    parts = folder.parts
    if len(parts) < 3 or parts[-2] != "snapshots" or not parts[-3].startswith("models--"):
        return None
    if not folder.is_dir() or has_complete_weights(folder):
        return None  # downloaded since (--download): the weights are read on disk
    if folder in _SOURCES:
        return _SOURCES[folder]
    repo = parts[-3].removeprefix("models--").replace("--", "/", 1)
    from huggingface_hub import HfApi, constants

    with hub_errors(repo, parts[-1]):
        info = HfApi(endpoint=constants.ENDPOINT).model_info(repo, revision=parts[-1])
    files = frozenset(s.rfilename for s in info.siblings or ())
    source = HubSource(repo, parts[-1], parts[-1], folder, files, constants.ENDPOINT)
    _SOURCES[folder] = source
    return source


@contextmanager
def hub_errors(repo: str, revision: str | None, file: str | None = None) -> Iterator[None]:
    """Each way the Hub says no, as one line that says what to do (exit 2). Without `file` the
    call asked about the repo itself (its info at a revision): any "not found" there means the
    repo, whatever a mirror or proxy puts in its error code; with `file`, that file."""
    import httpx
    from huggingface_hub import constants
    from huggingface_hub import errors as e

    where = Path(f"{repo}@{revision}" if revision else repo)
    try:
        yield
    except e.OfflineModeIsEnabled:
        raise KitError(
            "HF_HUB_OFFLINE=1 and the local cache (HF_HUB_CACHE) does not hold this repo's "
            "weights: unset HF_HUB_OFFLINE to read its headers from the Hub, or download it first",
            where,
        ) from None
    except e.GatedRepoError:
        raise KitError(
            "a gated repo: accept its terms on its Hub page, then set HF_TOKEN (or `hf auth "
            "login`) to a token of that account",
            where,
        ) from None
    except e.RepositoryNotFoundError:
        raise KitError(_no_repo(), where) from None
    except e.RevisionNotFoundError:
        raise KitError(
            f"the repo exists but has no revision {revision!r} (no branch, tag or commit of "
            "that name): check its spelling after the @",
            where,
        ) from None
    except e.RemoteEntryNotFoundError:
        if file is None:
            raise KitError(_no_repo(), where) from None
        raise KitError(f"the repo lists {file} but the Hub has no such file", where) from None
    except (httpx.TransportError, e.LocalEntryNotFoundError) as err:
        raise KitError(
            f"cannot reach the Hub at {constants.ENDPOINT} ({type(err).__name__}): check the "
            "network or proxy (HTTPS_PROXY), or set HF_HUB_OFFLINE=1 to use the local cache only",
            where,
        ) from None
    except e.HfHubHTTPError as err:
        status = err.response.status_code if err.response is not None else None
        if status == 404 and file is None:
            raise KitError(_no_repo(), where) from None
        first = " ".join(str(err).split())[:160]  # the client's text, on one line
        raise KitError(f"the Hub refused: {first}", where) from None


def _no_repo() -> str:
    """A repo the Hub does not show: missing, mistyped, or private to a caller without access
    (the Hub answers all of them alike)."""
    from huggingface_hub import constants, get_token

    access = (
        "the token set has no access to it"
        if get_token()
        else "no token is set: set HF_TOKEN or run `hf auth login`"
    )
    return (
        f"no such local file or folder, nor a repo on {constants.ENDPOINT}: the name is "
        f"mistyped, or the repo is private and {access}"
    )


def no_safetensors(source: HubSource, singles: list[str]) -> str:
    if singles:
        names = ", ".join(singles[:4])
        return (
            f"{len(singles)} .safetensors files ({names}) but no {INDEX_NAME} to say how they "
            "fit: --download fetches the repo, then pass the one file that is the draft"
        )
    pickles = [n for n in PICKLE_NAMES if n in source.files]
    if pickles:
        return (
            f"no safetensors in the repo, only {pickles[0]}: a pickle has no header to read by "
            "range; pass --download to fetch the repo and read it on disk"
        )
    return "the repo holds no weights (no .safetensors, index or pytorch_model.bin)"
