"""Real inputs to mutate, hostile values to put in them, and the one rule every case checks.

The seeds are the bundled checkpoints' headers and configs, the incident's logs and launch script,
the acceptance lines the format tests read, and the Prometheus text and server info the fake
engine servers send. `survives` runs a call and lets only a `KitError` through, one line long;
`Fence` is a folder whose parent must stay empty: a write outside the folder the user named
shows up there.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from kit.acceptance.fields import mentions_acceptance
from kit.errors import KitError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
DRAFT, TARGET = DATA / "pair" / "draft", DATA / "pair" / "target"
CONFIGS = sorted([DRAFT / "config.json", *DATA.glob("layouts/*/config.json")])
TARGET_CONFIGS = [TARGET / "config.json", DATA / "layouts" / "targets" / "kimi-k2.5-config.json"]
LAUNCH = DATA / "incident" / "launch.sh"
RELEASES = ["sglang==0.5.10", "sglang==0.4.4.post2", "sglang==0.5.23", "vllm==0.9.2",
            "vllm==0.33.0", "tensorrt_llm==1.2.0rc2", "lmdeploy==0.18.0"]  # fmt: skip

HUGE_NUMBERS = ["9" * 400, "1e999", "-1e999", "nan", "NaN", "inf", "-inf", "Infinity",
                "18446744073709551616", "-1", "0", "1e-400", "4" * 5000, "0x10", "1_000"]  # fmt: skip


def safetensors_parts(file: Path = DRAFT / "model.safetensors") -> tuple[dict, bytes]:
    """(header as a dict, data section bytes) of a real safetensors file."""
    raw = file.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def log_lines() -> list[str]:
    """Real engine lines: the incident's logs, and every acceptance line the format tests hold."""
    lines = []
    for log in sorted((DATA / "incident" / "logs").glob("*.log")):
        lines += log.read_text().splitlines()
    for test in sorted((ROOT / "tests").glob("test_acceptance_*.py")):
        for node in ast.walk(ast.parse(test.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                lines += [s for s in node.value.splitlines() if mentions_acceptance(s)]
    return lines


def server_texts() -> tuple[dict, bytes, bytes]:
    """(SGLang server info, SGLang metrics text, vLLM metrics text) as the fake servers send."""
    from engine_servers import VLLM, SGLang

    sglang = SGLang(accepted=1.5)
    info = json.loads(sglang.server_info(None)[2])
    return info, sglang.gauges(None)[2], VLLM().counters(None)[2]


# --- hostile values -------------------------------------------------------------------------


def deep(levels: int, kind: str = "dict") -> Any:
    """A value nested `levels` deep, built without recursion."""
    value: Any = 0
    for _ in range(levels):
        value = {"a": value} if kind == "dict" else [value]
    return value


def deep_text(levels: int) -> str:
    """Nesting as text (a parser, not a builder, must meet it)."""
    return '{"a":' * levels + "0" + "}" * levels


scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**62, 2**63, 2**64, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=20),
    st.sampled_from(["BF16", "F32", "Q4", "", "\udcff", "..", "../../x", "/etc/passwd"]),
)
hostile_values = st.one_of(
    scalars,
    st.lists(scalars, max_size=5),
    st.dictionaries(st.text(max_size=6), scalars, max_size=4),
    st.integers(min_value=1, max_value=400).map(deep),  # json.dumps writes 400 levels; deeper
    st.integers(min_value=1, max_value=400).map(lambda n: deep(n, "list")),  # is `deep_text`
)


def dumps(value: Any) -> str:
    """JSON text of `value`, NaN and infinities written as Python's json writes them."""
    return json.dumps(value, allow_nan=True)


def set_path(obj: Any, path: list, value: Any) -> Any:
    """`obj` with the value at `path` (keys or indices, wrapped into range) replaced."""
    if not path or not isinstance(obj, dict | list) or not obj:
        return value
    if isinstance(obj, dict):
        keys = list(obj)
        key = keys[path[0] % len(keys)] if isinstance(path[0], int) else path[0]
        return {**obj, key: set_path(obj.get(key), path[1:], value)}
    i = path[0] % len(obj) if isinstance(path[0], int) else 0
    return [*obj[:i], set_path(obj[i], path[1:], value), *obj[i + 1 :]]


paths = st.lists(st.one_of(st.integers(0, 50), st.text(max_size=8)), min_size=1, max_size=4)


@st.composite
def mutated_json(draw: st.DrawFn, seed: Any) -> bytes:
    """The seed's JSON with values replaced, keys duplicated, bytes broken or nesting deepened."""
    value = seed
    for _ in range(draw(st.integers(1, 3))):
        value = set_path(value, draw(paths), draw(hostile_values))
    text = dumps(value)
    how = draw(st.sampled_from(["plain", "duplicate", "bytes", "deep", "truncate", "number"]))
    if how == "duplicate" and text.startswith("{") and len(text) > 2:
        text = text[:-1] + "," + text[1:]  # every key twice: the later one wins in json
    elif how == "deep":
        text = '{"a":' + deep_text(draw(st.integers(50, 20000))) + "," + text[1:]
    elif how == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "number":
        text = re.sub(r"\d+", draw(st.sampled_from(HUGE_NUMBERS)), text, count=3)
    raw = text.encode("utf-8", "surrogatepass")
    if how == "bytes":
        raw = flip_bytes(raw, draw(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)),
                                            max_size=6)))  # fmt: skip
    return raw


def flip_bytes(raw: bytes, edits: list[tuple[int, int]]) -> bytes:
    out = bytearray(raw)
    for at, byte in edits:
        if out:
            out[at % len(out)] = byte
    return bytes(out)


@st.composite
def mutated_line(draw: st.DrawFn, line: str) -> bytes:
    """A real line with its numbers made hostile, bytes broken, cut, or blown up."""
    how = draw(st.sampled_from(["numbers", "bytes", "cut", "long", "json", "repeat"]))
    if how == "numbers":
        line = re.sub(r"\d+(\.\d+)?", lambda _m: draw(st.sampled_from(HUGE_NUMBERS)), line)
    elif how == "cut":
        line = line[: draw(st.integers(0, len(line)))]
    elif how == "long":
        line = line + "x" * draw(st.integers(1, 300_000))
    elif how == "json":
        line = line + " " + deep_text(draw(st.integers(10, 5000)))
    elif how == "repeat":
        line = ", ".join([line] * draw(st.integers(2, 50)))
    raw = line.encode("utf-8", "surrogatepass")
    if how == "bytes":
        raw = flip_bytes(raw, draw(st.lists(st.tuples(st.integers(0, 4096), st.integers(0, 255)),
                                            min_size=1, max_size=8)))  # fmt: skip
    return raw


def more(factor: int) -> settings:
    """The loaded profile with `factor` times its cases, for a test that is cheap per case."""
    return settings(max_examples=settings.default.max_examples * factor)


# --- the rule --------------------------------------------------------------------------------


def survives(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The call's result, or None when it refused the input with a one-line `KitError`. Any
    other exception propagates: the case fails."""
    try:
        return call(*args, **kwargs)
    except KitError as e:
        assert str(e).strip(), "a KitError with no message"
        assert "\n" not in str(e), f"a KitError of more than one line: {e!r}"
        return None


class Fence:
    """A folder `inside` for the case's files in an otherwise empty parent: anything the kit
    writes outside `inside` (`../x` in a shard name, a report name) is found by `check`."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="kit-fuzz-")
        self.parent = Path(self._tmp.name)
        self.inside = self.parent / "in"
        self.inside.mkdir()

    def __enter__(self) -> Fence:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.check()
        finally:
            self._tmp.cleanup()

    def check(self) -> None:
        strays = [p for p in self.parent.rglob("*") if not p.is_relative_to(self.inside)]
        assert not strays, f"written outside the folder named: {strays}"

    def copy(self, src: Path, name: str | None = None) -> Path:
        dest = self.inside / (name or src.name)
        shutil.copy(src, dest)
        return dest
