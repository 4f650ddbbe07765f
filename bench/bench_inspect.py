"""Header-only inspection: time independent of data size, flat memory; the sampled default.

Writes a small and a >= 2 GB safetensors file, and a 100-shard index with small and with large
shards, into a temp dir (deleted afterwards), then times:
  * `open_checkpoint` in-process against `safetensors.torch.load_file` of the same data;
  * `python -m kit inspect PATH --json --header-only` end to end against a bare
    `python -c "import safetensors"`;
and reads each subprocess's peak RSS with `getrusage(RUSAGE_CHILDREN)` in a fresh wrapper.
Then, on a 2.1 GB speculators draft with its config (the one bench_fix writes), the statistics
`inspect` reads by default (a sample of each tensor) against `--stats` (every byte), a bare
`load_file` of the same file, and `--header-only`.
Files are freshly written, so both sides read from a warm page cache. safetensors 0.8's
`load_file` maps the file lazily by default, so the byte-reading baseline is
`load_file(..., backend="pread")`; the lazy default is shown too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._files import write_streamed

ROOT = Path(__file__).resolve().parent.parent
BIG_BYTES = 2 << 30  # 2 GiB
SMALL_BYTES = 20 << 20  # 20 MiB
N_TENSORS = 16
N_SHARDS = 100
WRITE_CHUNK = 64 << 20

# Runs a command and prints its wall time and peak RSS (KiB); only that command is our child.
_WRAPPER = (
    "import resource, subprocess, sys, time;"
    "t = time.perf_counter();"
    "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode;"
    "w = time.perf_counter() - t;"
    "print(rc, w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def write_safetensors(path: Path, names: list[str], total_bytes: int) -> None:
    """A valid BF16 safetensors file of about `total_bytes`, written in chunks (never in RAM)."""
    per = total_bytes // len(names) // 2 // 1024 * 1024  # BF16 elements per tensor, rows of 1024
    header, offset = {}, 0
    for name in names:
        header[name] = {
            "dtype": "BF16",
            "shape": [per // 1024, 1024],
            "data_offsets": [offset, offset + per * 2],
        }
        offset += per * 2
    pattern = bytes(range(256)) * (WRITE_CHUNK // 256)  # non-zero: real pages, not a sparse file
    write_streamed(path, header, offset, pattern)


def write_sharded(folder: Path, shard_bytes: int) -> Path:
    """N_SHARDS shards of one tensor each behind a model.safetensors.index.json."""
    folder.mkdir()
    weight_map = {}
    for s in range(N_SHARDS):
        shard = f"model-{s + 1:05d}-of-{N_SHARDS:05d}.safetensors"
        name = f"model.layers.{s}.mlp.up_proj.weight"
        write_safetensors(folder / shard, [name], shard_bytes)
        weight_map[name] = shard
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return index


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """Fastest of `repeat` runs: on a shared machine the minimum is the cost, the rest is waiting."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def child(cmd: list[str], repeat: int = 3) -> tuple[float, float]:
    """Fastest wall seconds and max peak RSS (MB) of `cmd`, each run in a fresh wrapper."""
    walls, rss = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, cwd=ROOT
        )
        rc, wall, kib = out.stdout.split()
        if rc != "0":
            raise RuntimeError(f"{cmd} failed: {out.stderr}")
        walls.append(float(wall))
        rss.append(int(kib) / 1024)
    return min(walls), max(rss)


def load_all(path: str | Path, backend: str = "pread") -> None:
    """The baseline: every tensor of the file (or of every shard an index names). safetensors
    0.8's default `mmap` backend maps the file lazily; `pread` reads every byte into memory."""
    from safetensors.torch import load_file

    path = Path(path)
    files = (
        [path.parent / f for f in set(json.loads(path.read_text())["weight_map"].values())]
        if path.suffix == ".json"
        else [path]
    )
    for f in files:
        load_file(f, backend=backend)


def measure(label: str, path: Path, data_bytes: int) -> dict:
    from kit.checkpoint.files import open_checkpoint

    # the kit first, so the baselines' multi-GB reads cannot slow it down
    cmd = [sys.executable, "-m", "kit", "inspect", str(path), "--json", "--header-only"]
    cli_s, cli_rss = child(cmd, 7)
    open_s = best_time(lambda: open_checkpoint(path), 20)
    mmap_s = best_time(lambda: load_all(path, "mmap"), 3)
    load_s = best_time(lambda: load_all(path, "pread"), 3)
    load_code = "import sys; from bench.bench_inspect import load_all; load_all(sys.argv[1])"
    _, load_rss = child([sys.executable, "-c", load_code, str(path)], repeat=1)
    return {
        "label": label,
        "data_gb": data_bytes / 1e9,
        "open_ms": open_s * 1e3,
        "load_file_ms": load_s * 1e3,
        "mmap_ms": mmap_s * 1e3,
        "cli_ms": cli_s * 1e3,
        "cli_rss_mb": cli_rss,
        "load_file_rss_mb": load_rss,
    }


def main() -> None:
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT))
    bare_s, bare_rss = child([sys.executable, "-c", "import safetensors"], repeat=5)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_inspect_") as tmp:
        tmp = Path(tmp)
        for label, size in (
            ("single file, 20 MiB", SMALL_BYTES),
            ("single file, 2 GiB", BIG_BYTES),
        ):
            path = tmp / "model.safetensors"
            write_safetensors(
                path, [f"model.layers.{i}.mlp.up_proj.weight" for i in range(N_TENSORS)], size
            )
            rows.append(measure(label, path, path.stat().st_size))
            # --stats reads every byte, chunk by chunk: memory must stay flat all the same
            cmd = [sys.executable, "-m", "kit", "inspect", str(path), "--json", "--stats"]
            rows[-1]["stats_s"], rows[-1]["stats_rss_mb"] = child(cmd, repeat=1)
            path.unlink()
        for label, shard in (
            (f"{N_SHARDS}-shard index, 64 KiB shards", 64 << 10),
            (f"{N_SHARDS}-shard index, 20 MiB shards", BIG_BYTES // N_SHARDS),
        ):
            folder = tmp / f"sharded_{shard}"
            index = write_sharded(folder, shard)
            size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
            rows.append(measure(label, index, size))
            for p in folder.iterdir():
                p.unlink()
            folder.rmdir()
        draft = tmp / "draft"
        draft.mkdir()
        sampled = measure_sampled(draft)
    print(report(rows, bare_s, bare_rss))
    print(report_sampled(sampled))


def measure_sampled(draft: Path) -> dict:
    """inspect's default sampled read of a 2.1 GB draft, against the full read and load_file."""
    from bench.bench_fix import write_draft
    from kit.checkpoint.files import SAMPLE_BYTES, checkpoint_stats, open_checkpoint

    size = write_draft(draft)
    inspect = [sys.executable, "-m", "kit", "inspect", str(draft), "--json"]
    out = {"size": size, "tensors": len(open_checkpoint(draft).tensors)}
    out["sampled"] = child(inspect, 5)
    out["header"] = child([*inspect, "--header-only"], 5)
    out["full"] = child([*inspect, "--stats"], 1)
    load_code = "import sys; from bench.bench_inspect import load_all; load_all(sys.argv[1])"
    out["load_file"] = child([sys.executable, "-c", load_code, str(draft / "model.safetensors")], 3)
    ck = open_checkpoint(draft)
    checkpoint_stats(ck, sample_bytes=SAMPLE_BYTES)  # torch's first-call costs, not the read's
    out["stats_sampled_s"] = best_time(lambda: checkpoint_stats(ck, sample_bytes=SAMPLE_BYTES), 5)
    out["stats_full_s"] = best_time(lambda: checkpoint_stats(ck), 1)
    out["load_file_s"] = best_time(lambda: load_all(draft / "model.safetensors"), 3)
    return out


def report_sampled(r: dict) -> str:
    from kit.checkpoint.files import SAMPLE_BYTES, SAMPLE_WINDOWS

    rows = [
        ("`inspect --json` (default: sampled)", r["sampled"]),
        ("`inspect --json --stats` (every byte)", r["full"]),
        ("`inspect --json --header-only`", r["header"]),
        ("bare `load_file` (pread), no statistics", r["load_file"]),
    ]
    load_s = r["load_file"][0]
    lines = [
        f"\nDraft: {r['size'] / 1e9:.2f} GB, {r['tensors']} tensors; sample {SAMPLE_BYTES >> 10} "
        f"KiB per tensor in {SAMPLE_WINDOWS} windows.",
        "",
        "| process | wall | × load_file | peak RSS |",
        "|---|---|---|---|",
    ]
    for label, (wall, rss) in rows:
        lines.append(f"| {label} | {wall:.2f} s | {wall / load_s:.2f} | {rss:.0f} MB |")
    lines.append(
        f"\nIn process, statistics alone: sampled {r['stats_sampled_s']:.3f} s, full "
        f"{r['stats_full_s']:.1f} s ({r['stats_full_s'] / r['stats_sampled_s']:.0f}×), "
        f"load_file (pread) {r['load_file_s']:.2f} s"
    )
    return "\n".join(lines)


def report(rows: list[dict], bare_s: float, bare_rss: float) -> str:
    lines = [
        f'bare `python -c "import safetensors"`: {bare_s * 1e3:.0f} ms, peak RSS {bare_rss:.0f} MB',
        "",
        "| checkpoint | data | open_checkpoint | load_file (pread) | load_file / open "
        "| load_file (lazy mmap) | `inspect --json` process | inspect / bare import "
        "| inspect peak RSS | load_file (pread) peak RSS |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['data_gb']:.3f} GB | {r['open_ms']:.2f} ms | "
            f"{r['load_file_ms']:.0f} ms | {r['load_file_ms'] / r['open_ms']:.0f}× | "
            f"{r['mmap_ms']:.2f} ms | "
            f"{r['cli_ms']:.0f} ms | {r['cli_ms'] / (bare_s * 1e3):.1f}× | "
            f"{r['cli_rss_mb']:.0f} MB | " + f"{r['load_file_rss_mb']:.0f} MB |"
        )
    for small, big in ((rows[0], rows[1]), (rows[2], rows[3])):
        lines.append(
            f"\n{big['label']} vs {small['label']}: {big['data_gb'] / small['data_gb']:.0f}× the "
            f"data, open_checkpoint {big['open_ms'] / small['open_ms']:.2f}× the time, "
            f"inspect process {big['cli_ms'] / small['cli_ms']:.2f}×, "
            f"load_file (pread) {big['load_file_ms'] / small['load_file_ms']:.0f}×"
        )
    for r in rows[:2]:
        lines.append(
            f"\n`inspect --stats` (reads every byte) on {r['label']}: {r['stats_s']:.1f} s, "
            f"peak RSS {r['stats_rss_mb']:.0f} MB"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
