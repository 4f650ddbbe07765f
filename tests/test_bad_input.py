"""Broken input through the CLI: one line naming the file and the problem, exit 2, no traceback."""

import json
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
    # no partial report: with --json, stdout holds only the error object
    data = json.loads(out.stdout)
    assert data["exit_code"] == 2 and data["error"].strip() == lines[0].removeprefix("error: ")


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

    from kit.checkpoint.files import open_checkpoint
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


@pytest.mark.parametrize(
    "args",
    [
        ["acceptance", "data/incident/logs/before.log", "--num-draft-tokens", "0"],
        ["acceptance", "data/incident/logs/before.log", "--topk", "-1"],
        ["offline", "--target", "t", "--draft", "d", "--k", "0"],
        ["run", "--workers", "0"],
        ["run", "--timeout", "0"],
        ["doctor", "--draft", "d", "--num-prompts", "x"],
        ["trace", "--draft", "d", "--target-config", "t", "--tokens", "0"],
    ],
)
def test_counts_below_one_are_usage_errors(args, capsys):
    """A count of 0 must not be read later as "not given" (0 draft tokens fell back to the D
    inferred from the log) or divided by: argparse rejects it, exit 2, naming the option."""
    from kit.cli import main

    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    assert f"argument {args[-2]}:" in capsys.readouterr().err


def test_run_folder_that_is_a_file_is_one_line(tmp_path):
    in_the_way = tmp_path / "runs"
    in_the_way.write_text("not a folder")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "kit", "run", "--out", str(in_the_way)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        f"error: {in_the_way}: cannot use as the run folder: File exists"
    ]
    assert in_the_way.read_text() == "not a folder"
