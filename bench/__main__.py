"""`python -m bench [TOPIC ...]`: run every `bench/bench_*.py` (or the named topics) in turn."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def topics() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    chosen = argv or topics()
    unknown = sorted(set(chosen) - set(topics()))
    if unknown:
        print(f"error: no bench named {', '.join(unknown)}; have {', '.join(topics())}")
        return 2
    for topic in chosen:
        print(f"== bench_{topic}", flush=True)
        importlib.import_module(f"bench.bench_{topic}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
