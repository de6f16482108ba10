"""Each chapter alone under nbval, as `make test` runs notebooks: the seconds pytest reports, against 15 s.

Run: .venv/bin/python benchmarks/bench_chapter_times.py [notebooks ...] [--repeats 3]
     (default: every chapter, 00-10)

For each chapter, `pytest --nbval <chapter>` runs `repeats` times; the script prints the median, min and max
of pytest's own "passed in N s" (kernel start, every cell, kernel shutdown; not Python's start-up or
pytest's plugin imports) and whether the median is within the budget. Chapters alternate between repeats,
so a burst of load on the machine hits several chapters a little rather than one a lot.
This is a measurement, not a test: the numbers depend on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from bench_series import nbval_command  # benchmarks/ is on sys.path when a script here runs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script in benchmarks/: the repository's tools/
from tools import series  # noqa: E402

BUDGET_S = 15.0


def nbval_seconds(notebook: Path) -> float:
    """pytest's reported seconds for one nbval run of `notebook` (raises if a cell fails)."""
    result = subprocess.run(nbval_command([notebook]), cwd=ROOT, capture_output=True, text=True)
    found = re.search(r"passed in ([0-9.]+)s", result.stdout)
    if result.returncode != 0 or found is None:
        raise RuntimeError(f"nbval failed on {notebook.name}:\n{result.stdout[-3000:]}")
    return float(found[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    chapters = [p.resolve() for p in args.notebooks] or series.chapters("en")
    print(f"{len(chapters)} chapters x {args.repeats} runs; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    times: dict[str, list[float]] = {p.stem: [] for p in chapters}
    for _ in range(args.repeats):
        for path in chapters:
            times[path.stem].append(nbval_seconds(path))
    print(f"{'chapter':42} {'median s':>8} {'min':>6} {'max':>6}  within {BUDGET_S:g} s?")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:42} {median:8.1f} {min(runs):6.1f} {max(runs):6.1f}  {'yes' if median <= BUDGET_S else 'NO'}")
    print(f"(load average now {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
