"""Streaming log parse: CPU time and peak memory on a >= 1 GB SGLang log, against grep.

Writes a 1.1 GB SGLang 0.5.10 server log into a temp dir (deleted afterwards): decode lines
rendered with the generator's format (data/make_incident_logs.py) with varying figures, prefill
lines, a garbled line now and then. Then, each in a fresh subprocess whose CPU time and peak RSS
are read with `getrusage(RUSAGE_CHILDREN)` (imports included):
  * baseline `grep -c 'accept len' FILE`;
  * a bare Python loop counting the same lines (the floor for any Python line-by-line parser);
  * `parse_files([FILE])`: every figure of every line read (accept len, accept rate, throughput
    into the run's statistics; windows for the thinned series), with the parse's own CPU time
    (imports excluded) beside the process's;
  * the same with the fast path off (every line field by field), on a 110 MB prefix;
  * `parse_files` on the 110 MB prefix, to show memory does not grow with size.
The file is freshly written, so every side reads from a warm page cache. Each is run `REPEATS`
times, alternating, and the median kept: the machine is shared.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_BYTES = 1100 * 10**6
SMALL_BYTES = 110 * 10**6
BLOCK_LINES = 20_000
REPEATS = 3

sys.path.insert(0, str(ROOT / "data"))
from make_incident_logs import decode_line, prefill_line  # noqa: E402

_WRAPPER = (
    "import resource, subprocess, sys, time;"
    "t = time.perf_counter();"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "w = time.perf_counter() - t;"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print(p.returncode, w, u.ru_maxrss, u.ru_utime + u.ru_stime, p.stdout.strip().replace(' ', '_'))"
)
_PARSE = (
    "import sys, time; from kit.acceptance import parse_files;"
    "t = time.process_time(); r = parse_files([sys.argv[1]])[0]; t = time.process_time() - t;"
    "print(r.accept_len.count, r.accept_rate.count, r.throughput.count, r.unparsed_lines,"
    " round(r.accept_len.mean, 4), round(t, 3))"
)
_FULL = (
    "import sys; from kit.acceptance import columns, parse_files;"
    "columns.MAX_PATTERNS = 0;"  # every line field by field
    "r = parse_files([sys.argv[1]])[0];"
    "print(r.accept_len.count, r.accept_rate.count, r.throughput.count, r.unparsed_lines,"
    " round(r.accept_len.mean, 4))"
)
_LOOP = "import sys; print(sum(1 for line in open(sys.argv[1]) if 'accept len' in line))"


def write_log(path: Path, target: int) -> int:
    """About `target` bytes of log; returns the number of decode lines with `accept len`."""
    from datetime import datetime, timedelta

    rng = random.Random(0)
    t = datetime(2026, 3, 2, 10, 0, 0)
    lines, decode = [], 0
    for i in range(BLOCK_LINES):
        t += timedelta(seconds=1.6)
        if i % 50 == 0:
            lines.append(prefill_line(t, rng.randint(100, 4000), rng.randint(0, 10**6), 1500.0))
        elif i % 997 == 0:
            lines.append(decode_line(t, 1, 500, 2.0, 50.0)[:90])  # cut off: unparsed
        else:
            al = rng.choice([1.0, rng.uniform(1, 5)])
            lines.append(decode_line(t, rng.randint(1, 64), rng.randint(0, 10**6), al, al * 25))
            decode += 1
    block = ("\n".join(lines) + "\n").encode()
    repeats = -(-target // len(block))
    with open(path, "wb") as f:
        for _ in range(repeats):
            f.write(block)
    return decode * repeats


def measure(cmd: list[str]) -> tuple[float, float, int, str]:
    """(wall s, CPU s, peak RSS KiB, stdout) of `cmd` in a fresh wrapper process."""
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *cmd], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    if out[0] != "0":
        raise RuntimeError(f"{cmd} failed")
    return float(out[1]), float(out[3]), int(out[2]), out[4]


def median_of(cmds: dict[str, list[str]]) -> dict[str, tuple[float, float, int, str]]:
    """Each command REPEATS times, alternating; per command the run of median CPU time."""
    runs: dict[str, list] = {name: [] for name in cmds}
    for _ in range(REPEATS):
        for name, cmd in cmds.items():
            runs[name].append(measure(cmd))
    return {name: sorted(rs, key=lambda r: r[1])[len(rs) // 2] for name, rs in runs.items()}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "server.log"
        expected = write_log(big, TARGET_BYTES)
        small = Path(tmp) / "small.log"
        with open(big, "rb") as src, open(small, "wb") as dst:
            dst.write(src.read(SMALL_BYTES))
            dst.write(src.readline())
        size = big.stat().st_size
        mb, small_mb = size / 1e6, small.stat().st_size / 1e6
        r = median_of(
            {
                "grep": ["grep", "-c", "accept len", str(big)],
                "loop": [sys.executable, "-c", _LOOP, str(big)],
                "parse": [sys.executable, "-c", _PARSE, str(big)],
                "small": [sys.executable, "-c", _PARSE, str(small)],
                "full": [sys.executable, "-c", _FULL, str(small)],
            }
        )
    windows, rates, tputs, unparsed, mean, parsing = r["parse"][3].split("_")
    # The cut-off lines end before "accept len" (90 characters), so no count includes them.
    assert int(r["grep"][3]) == int(r["loop"][3]) == int(windows) == expected, r
    assert int(rates) == int(tputs) == expected, r  # every line's rate and throughput kept too
    # fast path and field reader read the same figures (the last field is the parse's CPU time)
    assert r["small"][3].rsplit("_", 1)[0] == r["full"][3], r
    print(
        f"log: {mb:.0f} MB, {expected} decode lines (mean accept len {mean}), {unparsed} unparsed"
    )
    print(f"{'':44}{'wall s':>8}{'CPU s':>8}{'MB/s CPU':>10}{'peak RSS MB':>13}")
    rows = [
        ("grep -c 'accept len' (baseline)", r["grep"], mb),
        ("python line loop (count only)", r["loop"], mb),
        (f"parse_files ({mb:.0f} MB)", r["parse"], mb),
        (f"parse_files ({small_mb:.0f} MB prefix)", r["small"], small_mb),
        (f"field by field, no fast path ({small_mb:.0f} MB)", r["full"], small_mb),
    ]
    for name, (wall, cpu, rss, _), size_mb in rows:
        print(f"{name:44}{wall:8.2f}{cpu:8.2f}{size_mb / cpu:10.1f}{rss / 1024:13.1f}")
    print(f"parse_files / grep CPU-time ratio: {r['parse'][1] / r['grep'][1]:.2f}x")
    print(
        f"  the parse alone (imports excluded, {float(parsing):.2f} CPU s): "
        f"{float(parsing) / r['grep'][1]:.2f}x"
    )
    print(f"parse_files / python loop ratio:   {r['parse'][1] / r['loop'][1]:.1f}x")
    print(f"fast path / field by field (110 MB): {r['full'][1] / r['small'][1]:.1f}x faster")
    print(
        f"peak RSS / file size: {r['parse'][2] * 1024 / size:.2%}; "
        f"peak RSS {mb:.0f} MB log vs {small_mb:.0f} MB prefix: {r['parse'][2] / r['small'][2]:.2f}x"
    )


if __name__ == "__main__":
    main()
