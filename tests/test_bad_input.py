"""Broken input through the CLI: one line naming the file and the problem, exit 2, no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_bad import CASES

ROOT = Path(__file__).resolve().parent.parent


def run_inspect(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "kit", "inspect", str(path), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2(case, tmp_path):
    path, problem = CASES[case](tmp_path)
    out = run_inspect(path)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, out.stderr
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert lines[0].startswith(f"error: {path}"), lines[0]  # the file (or one inside it)
    assert problem in lines[0]
    assert out.stdout == ""  # no partial report


@pytest.mark.parametrize("case", ["malicious_torch_zip", "malicious_legacy_pickle"])
def test_malicious_pickle_never_runs(case, tmp_path):
    path, _ = CASES[case](tmp_path)
    # prove the payload is live: a plain unpickle would create the marker
    assert not (tmp_path / "PWNED").exists()
    out = run_inspect(path)
    assert out.returncode == 2
    assert not (tmp_path / "PWNED").exists()


def test_payload_is_live_under_plain_unpickle(tmp_path):
    """The corpus pickle really runs code when unpickled without weights_only (so the test above
    is not vacuous)."""
    import pickle

    path, _ = CASES["malicious_legacy_pickle"](tmp_path)
    pickle.loads(path.read_bytes())
    assert (tmp_path / "PWNED").exists()


def test_mutated_headers_give_kit_errors_only(tmp_path, sample_dir):
    """Seeded mutations of a real header (byte flips, wrong JSON types in every field): each
    either opens or raises KitError; nothing else escapes to become a traceback."""
    import json
    import random
    import struct

    from kit.checkpoint import open_checkpoint
    from kit.errors import KitError

    src = (sample_dir / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", src[:8])
    header = json.loads(src[8 : 8 + n])
    rng = random.Random(0)
    blobs = []
    for _ in range(300):
        b = bytearray(src)
        b[rng.randrange(8, 8 + n)] = rng.randrange(256)
        blobs.append(bytes(b))
    odd = [None, [], {}, "x", -1, 1.5, [1, 2, 3], True, 10**30, [[1]], {"a": 1}]
    for _ in range(300):
        h = json.loads(json.dumps(header))
        name = rng.choice([k for k in h if k != "__metadata__"])
        if rng.random() < 0.1:
            h["__metadata__"] = rng.choice(odd)
        else:
            h[name][rng.choice(["dtype", "shape", "data_offsets"])] = rng.choice(odd)
        body = json.dumps(h).encode()
        blobs.append(struct.pack("<Q", len(body)) + body + src[8 + n :])
    path = tmp_path / "model.safetensors"
    refused = 0
    for blob in blobs:
        path.write_bytes(blob)
        try:
            open_checkpoint(path)
        except KitError as e:
            refused += 1
            assert e.path == str(path)
    assert refused > 300  # most mutations break the file; all of those were KitErrors


def test_index_cannot_reach_outside_its_folder(tmp_path):
    import json

    inner = tmp_path / "ck"
    inner.mkdir()
    (inner / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"w": "../elsewhere.safetensors"}})
    )
    out = run_inspect(inner)
    assert out.returncode == 2 and "outside its folder" in out.stderr
