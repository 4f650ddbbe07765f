"""Every citation stands on its own in a clone of the repository.

A fact the code relies on is cited to the engine's own source (a release and a file:line inside
its wheel or sdist, or an upstream PR / issue) or to a document in this repository (`docs/…`).
These tests fail when a file cites notes kept elsewhere (by their names, by a path leaving the
repository, or by a bare section mark, the section sign and a number, that only such notes
define), and when a
`docs/…md` path, a relative Markdown link or a `#anchor` in either points at nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED_DIRS = ("kit", "tests", "bench", "data", "notebooks", "docs")
SCANNED_TOP = ("README.md", "Makefile", "pyproject.toml", "requirements.txt", "jupytext.toml")
TEXT_SUFFIXES = {
    ".py", ".md", ".json", ".jsonl", ".toml", ".sh", ".txt", ".cfg", ".ini", ".yaml", ".yml",
    ".jinja", ".log", ".html", ".css", ".js",
}  # fmt: skip
# Build outputs and caches (see .gitignore): not part of the repository's text.
SKIPPED_DIRS = {
    ".venv", ".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "runs",
    "out",
}  # fmt: skip

SECTION = "\u00a7"  # the section sign, spelled by its code point so this file does not hold one
# The notes' own file names; no document of this repository carries any of them.
NOTE_NAMES = re.compile(
    r"(?<![\w-])(?:(?:sglang|vllm|lmdeploy|tensorrt-llm)-eagle3|checkpoint-formats|field-reports"
    r"|incident|organism-notes|notebook-toolchain)\.md\b"
)
# A folder of notes next to the repository, or a `reference/…md` document (the repository has
# no such folder).
OUTSIDE = re.compile(
    r"\.\./+sh[a]red\b|\bsh[a]red/(?:reference|samples)\b|\breference/[\w.-]+\.md\b"
)
# A repository-relative `docs/…md` path (not part of a longer path or URL), with its anchor.
DOCS_PATH = re.compile(r"(?<![\w./-])(docs/[\w./-]+?\.md)(?:#([\w-]+))?")
# A relative Markdown link to a Markdown file: [text](path.md#anchor).
MD_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s#]+\.md)(?:#([\w-]+))?\)")


def _scanned() -> list[Path]:
    files = [ROOT / name for name in SCANNED_TOP if (ROOT / name).is_file()]
    for top in SCANNED_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            rel = path.relative_to(ROOT)
            if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in rel.parts):
                continue
            if path.suffix == ".ipynb" and rel.parts[0] == "notebooks":
                continue  # generated from the .py notebooks, which are scanned
            if path.is_file() and path.suffix in TEXT_SUFFIXES:
                files.append(path)
    return files


FILES = _scanned()


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _where(path: Path, text: str, pos: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, pos) + 1}"


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (duplicates numbered as GitHub numbers them)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in _text(path).splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_the_scan_covers_the_repository():
    names = {str(p.relative_to(ROOT)) for p in FILES}
    assert "README.md" in names and "tests/test_citations.py" in names
    assert {"docs/engines.md", "docs/conventions.md"} <= names
    for top in SCANNED_DIRS:
        assert any(n.startswith(top + "/") for n in names), top


def test_no_citation_of_notes_kept_outside_the_repository():
    bad = []
    for path in FILES:
        text = _text(path)
        for rx in (NOTE_NAMES, OUTSIDE):
            bad += [f"{_where(path, text, m.start())}: {m.group(0)}" for m in rx.finditer(text)]
        bad += [
            f"{_where(path, text, m.start())}: a bare section mark"
            for m in re.finditer(SECTION, text)
        ]
    assert bad == [], "cite the engine's source or a docs/ section instead:\n" + "\n".join(bad)


def test_every_docs_path_exists_with_its_anchor():
    bad = []
    for path in FILES:
        text = _text(path)
        for m in DOCS_PATH.finditer(text):
            target, anchor = ROOT / m.group(1), m.group(2)
            if not target.is_file():
                bad.append(f"{_where(path, text, m.start())}: {m.group(1)} does not exist")
            elif anchor and anchor not in anchors(target):
                bad.append(f"{_where(path, text, m.start())}: no #{anchor} in {m.group(1)}")
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize(
    "path", [p for p in FILES if p.suffix == ".md"], ids=lambda p: str(p.relative_to(ROOT))
)
def test_relative_markdown_links_resolve_inside_the_repository(path):
    text = _text(path)
    bad = []
    for m in MD_LINK.finditer(text):
        target = (path.parent / m.group(1)).resolve()
        where = _where(path, text, m.start())
        if not target.is_relative_to(ROOT):
            bad.append(f"{where}: {m.group(1)} leaves the repository")
        elif not target.is_file():
            bad.append(f"{where}: {m.group(1)} does not exist")
        elif m.group(2) and m.group(2) not in anchors(target):
            bad.append(f"{where}: no #{m.group(2)} in {m.group(1)}")
    assert bad == [], "\n".join(bad)


def test_the_checks_catch_what_they_are_for():
    """The patterns themselves, on lines as the repository used to write them (spelled in pieces
    here, so that this file holds none of them)."""
    sign, md, notes = SECTION, ".md", "sha" + "red/reference/"
    cited = [
        f"(sglang-eagle3{md} {sign}E; 0.5.10 kimi_k25.py:841-850)",
        f"(vllm-eagle3{md} {sign}4)",
        f"per trainer layout of `../{notes}checkpoint-formats{md}`",
        f"The incident ({notes}incident{md})",
        f"see reference/lmdeploy-eagle3{md}",
        f"(checkpoint-formats{md} {sign}3)",
    ]
    for line in cited:
        assert NOTE_NAMES.search(line) or OUTSIDE.search(line), line
    assert sign in cited[1]
    fine = [
        "0.5.10 models/llama_eagle3.py:176",
        "vllm PR #26164",
        "docs/engines.md#sglang-keys-and-loading",
        "data/incident/kimi-k2.5/README.md",
    ]
    for line in fine:
        assert not (NOTE_NAMES.search(line) or OUTSIDE.search(line) or sign in line), line
    assert DOCS_PATH.findall("see docs/engines.md#vllm-config, not a/docs/x.md") == [
        ("docs/engines.md", "vllm-config")
    ]
    assert slug("Vocabulary maps: `d2t` and `t2d`") == "vocabulary-maps-d2t-and-t2d"
    assert slug("Trainers' checkpoint layouts") == "trainers-checkpoint-layouts"


# A release as the rows cite it: `0.32.0 llama_eagle3.py:420`, `(0.10.1.1)`.
CITED_RELEASE = re.compile(r"(?<![\w.])(\d+\.\d+\.\d+(?:\.\d+)?)(?!\w)")


def _rows_and_texts(module) -> list[tuple[str, str]]:
    """(name, cited text) of every row and source string a rule module defines."""
    from kit.engines.base import Row

    out = []
    for name, value in vars(module).items():
        if isinstance(value, str) and not name.startswith("_"):
            out.append((name, value))
            continue
        items = value.values() if isinstance(value, dict) else value
        items = items if isinstance(items, (list, tuple, type({}.values()))) else [value]
        out += [(name, r.source) for r in items if isinstance(r, Row)]
    return out


def test_vllm_rows_cite_only_releases_the_kit_read():
    """A row's citation names a release listed in RELEASES (its wheel was read), never one
    between them, so adding a release is adding it there; acceptance also cites the log formats
    of releases older than the modelled range."""
    from packaging.version import Version

    from kit.engines import vllm

    read, first = set(vllm.RELEASES), Version(vllm.RELEASES[0])
    bad = []
    for module in (
        vllm.config,
        vllm.params,
        vllm.load,
        vllm.capture,
        vllm.forward,
        vllm.acceptance,
    ):
        for name, text in _rows_and_texts(module):
            for v in CITED_RELEASE.findall(text):
                older_log = module is vllm.acceptance and Version(v) < first
                if v not in read and not older_log:
                    bad.append(f"{module.__name__}.{name}: {v}")
    assert bad == [], "\n".join(bad)


def test_the_vllm_releases_docs_list_are_the_releases_read():
    from kit.engines import vllm

    text = _text(ROOT / "docs" / "engines.md")
    listed = re.search(
        r"## vLLM\n\nReleases read: (.+?)\s\(`kit/engines/vllm/__init__.py`\)", text, re.S
    )
    assert listed is not None
    assert [v.strip() for v in listed.group(1).replace("\n", " ").split(",")] == list(vllm.RELEASES)
    assert "RELEASE_ASSUMED" not in {f.code for f in _findings_of("vllm==0.32.0")}


def _findings_of(release: str):
    from kit.engines import parse_engine, release_findings

    return release_findings(parse_engine(release))
