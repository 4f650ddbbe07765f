"""Mutated and hostile safetensors headers through every call that opens a checkpoint.

The seed is the bundled draft's real header and data. A case lies about the header length, gives
a tensor an unknown dtype, a shape whose product overflows, offsets that overlap or leave the
file, breaks the header's bytes, cuts the file, or nests the header deep; inspect, simulate,
release_matrix and fix (planned, and written to a folder) either read it or refuse it with one
`KitError`, and nothing is written outside the folder named.
"""

from __future__ import annotations

import json
import struct

from fuzz_inputs import (
    DRAFT,
    RELEASES,
    Fence,
    deep_text,
    dumps,
    flip_bytes,
    hostile_values,
    more,
    safetensors_parts,
    survives,
)
from hypothesis import given
from hypothesis import strategies as st

import kit

HEADER, DATA = safetensors_parts()
NAMES = sorted(k for k in HEADER if k != "__metadata__")
FIELDS = ("dtype", "shape", "data_offsets")
LENGTHS = [0, 1, 7, 2**31, 2**40, 2**62, 2**64 - 1]


@st.composite
def hostile_file(draw: st.DrawFn) -> bytes:
    """The real header and data with one to three of the ways a file lies."""
    header = json.loads(json.dumps(HEADER))
    lie, cut, text = None, None, None
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["field", "overflow", "overlap", "meta", "length", "cut",
                                    "bytes", "deep", "duplicate", "dtype"]))  # fmt: skip
        name = draw(st.sampled_from(NAMES))
        entry = header.setdefault(name, {})
        if how == "field" and isinstance(entry, dict):
            entry[draw(st.sampled_from(FIELDS))] = draw(hostile_values)
        elif how == "overflow" and isinstance(entry, dict):
            entry["shape"] = [2**31] * draw(st.integers(2, 6))
        elif how == "overlap" and isinstance(entry, dict):
            other = HEADER[draw(st.sampled_from(NAMES))]["data_offsets"]
            shift = draw(st.integers(-(2**20), 2**62))
            entry["data_offsets"] = [other[0] + shift, other[1] + shift]
        elif how == "meta":
            header["__metadata__"] = draw(hostile_values)
        elif how == "dtype" and isinstance(entry, dict):
            entry["dtype"] = draw(st.sampled_from(["Q4_K", "bf16", "F8_E4M3FNUZ", "", "C128"]))
        elif how == "length":
            lie = draw(st.one_of(st.sampled_from(LENGTHS), st.integers(0, 2**64 - 1)))
        elif how == "cut":
            cut = draw(st.integers(0, len(DATA) + 8))
        elif how in ("bytes", "deep", "duplicate"):
            text = how
    raw = dumps(header).encode()
    if text == "bytes":
        edits = draw(st.lists(st.tuples(st.integers(0, len(raw)), st.integers(0, 255)), max_size=6))
        raw = flip_bytes(raw, edits)
    elif text == "deep":
        raw = (
            '{"x":' + deep_text(draw(st.integers(100, 50000))) + "," + dumps(header)[1:]
        ).encode()
    elif text == "duplicate":
        raw = raw[:-1] + b"," + raw[1:]
    body = struct.pack("<Q", len(raw) if lie is None else lie) + raw + DATA
    return body if cut is None else body[: 8 + len(raw) + cut]


@given(hostile_file(), st.sampled_from(RELEASES))
def test_hostile_headers_are_read_or_refused_in_one_line(body: bytes, engine: str):
    with Fence() as fence:
        (fence.inside / "model.safetensors").write_bytes(body)
        fence.copy(DRAFT / "config.json")
        folder = fence.inside
        for stats in ("none", "sampled"):
            survives(kit.inspect, folder, stats=stats)
        survives(kit.simulate, folder, engine)
        survives(kit.fix, folder, engine, out=fence.inside / "fixed")
        survives(kit.doctor, folder, engine=engine)


@more(3)
@given(hostile_file())
def test_hostile_headers_through_every_release(body: bytes):
    with Fence() as fence:
        (fence.inside / "model.safetensors").write_bytes(body)
        fence.copy(DRAFT / "config.json")
        survives(kit.release_matrix, fence.inside, "sglang")


SHARD_NAMES = st.one_of(
    st.sampled_from(["../x.safetensors", "../../x.safetensors", "/etc/passwd", "a/../../x",
                     "sub/model.safetensors", "model.safetensors", "", ".", "..", "\x00"]),
    st.text(max_size=30),
)  # fmt: skip


@more(3)
@given(st.dictionaries(st.sampled_from(NAMES), SHARD_NAMES, min_size=1), st.sampled_from(RELEASES))
def test_index_shard_names_never_lead_outside_the_folder(weight_map: dict, engine: str):
    """An index may name any shard; the kit reads and writes only inside the index's folder
    (a bait shard sits beside the folder, where `../x.safetensors` points)."""
    with Fence() as fence:
        bait = fence.parent / "x.safetensors"
        bait.write_bytes((DRAFT / "model.safetensors").read_bytes())
        fence.copy(DRAFT / "model.safetensors")
        fence.copy(DRAFT / "config.json")
        index = {"metadata": {}, "weight_map": weight_map}
        (fence.inside / "model.safetensors.index.json").write_text(json.dumps(index))
        report = survives(kit.inspect, fence.inside, stats="none")
        if report is not None:
            assert all(
                f.resolve().is_relative_to(fence.inside.resolve()) for f in report.checkpoint.files
            )
        survives(kit.fix, fence.inside, engine, out=fence.inside / "fixed")
        bait.unlink()  # the one file allowed outside: the case's own bait


PICKLE = (DRAFT.parent.parent / "layouts" / "eagle-official" / "pytorch_model.bin").read_bytes()


@given(st.lists(st.tuples(st.integers(0, len(PICKLE) - 1), st.integers(0, 255)), max_size=8),
       st.integers(0, len(PICKLE)))  # fmt: skip
def test_broken_torch_archives_are_read_or_refused_in_one_line(edits: list, cut: int):
    """The trainer's pytorch_model.bin with bytes changed and its tail cut: weights_only
    unpickling refuses code, and a broken zip is one error."""
    with Fence() as fence:
        (fence.inside / "pytorch_model.bin").write_bytes(flip_bytes(PICKLE, edits)[:cut])
        fence.copy(DRAFT.parent.parent / "layouts" / "eagle-official" / "config.json")
        survives(kit.inspect, fence.inside, stats="none")
        survives(kit.simulate, fence.inside, "sglang==0.5.10")
