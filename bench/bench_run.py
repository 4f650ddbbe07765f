"""`make demo`: the headless run's wall time and what it writes, against the runner's own floor.

Measured in the same script, alternating, each in a fresh interpreter:
  * baseline (time): the same runner (`kit.report.runbook.execute`, 2 workers, as the demo) executing six
    notebook scripts that only import the kit and record a value: kernel start-up, jupytext,
    papermill and the records read back, what any run costs before an analysis starts;
  * the demo run itself (`python -m kit run --out DIR`, the bundled incident).
Sizes are compared with one copy of plotly.js, which every executed notebook embedded until the
kernels drew figures as plotly's MIME type only; the postmortem embeds it once.
Run: `python -m bench run`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 3
NAMES = ("a", "b", "c", "d", "e", "f")  # as many as the demo runs (notebooks 1-6)

_FLOOR = """
import sys
from pathlib import Path
from kit.report.runbook import Step, execute
folder = Path(sys.argv[1])
for name in sys.argv[2:]:
    (folder / f"{name}.py").write_text(
        '# %% tags=["parameters"]\\nx = 1\\n\\n# %%\\nfrom kit.report.record import record\\n'
        'from kit.report.notebook import setup\\n\\nsetup()\\nrecord("x", x)\\n'
    )
results = execute([Step(n, {}) for n in sys.argv[2:]], folder / "out", workers=2,
                  progress=False, notebooks=folder)
assert all(r.status == "ok" for r in results), results
"""


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def _sizes(run_dir: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(run_dir.iterdir()) if p.is_file()}


def main() -> None:
    from plotly.offline import get_plotlyjs

    plotly_js = len(get_plotlyjs().encode())
    floor, demo = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(REPEATS):
            scratch = Path(tmp) / f"floor{i}"
            scratch.mkdir()
            floor.append(_timed([sys.executable, "-c", _FLOOR, str(scratch), *NAMES]))
            run_dir = Path(tmp) / f"demo{i}"
            demo.append(
                _timed([sys.executable, "-m", "kit", "run", "--quiet", "--out", str(run_dir)])
            )
        sizes = _sizes(run_dir)
    base = statistics.median(floor)
    print(f"median of {REPEATS} alternating runs, fresh interpreters, 2 workers\n")
    print(f"{'run':44} {'wall (s)':>9} {'× floor':>8}   every run (s)")
    floor_label = f"{len(NAMES)} notebooks that do nothing (floor)"
    for label, times in ((floor_label, floor), ("demo", demo)):
        mid = statistics.median(times)
        every = ", ".join(f"{t:.1f}" for t in times)
        print(f"{label:44} {mid:9.1f} {mid / base:8.2f}   {every}")
    print(f"\n{'file':36} {'bytes':>10} {'× plotly.js':>11}")
    for name, size in {**sizes, "total": sum(sizes.values())}.items():
        print(f"{name:36} {size:10d} {size / plotly_js:11.3f}")
    print(f"{'plotly.js (one copy)':36} {plotly_js:10d} {1:11.3f}")


if __name__ == "__main__":
    main()
