"""What the chapters cost under nbval, against a floor of the same number of kernel-plus-imports notebooks.

Run: .venv/bin/python benchmarks/bench_series.py [notebooks ...] [--repeats 3]
     (default: chapters 00-07, the set the 1.5x budget is about)

The floor: for each chapter, a notebook with a single cell that imports torch, matplotlib.pyplot,
ipywidgets and helpers (with the explorers' machinery, helpers.explorer), i.e. what every chapter pays
before its first step.
Both sets run in one `pytest --nbval` call each, exactly as `make test` runs notebooks, and the script
reports the wall time of each call, the ratio, and each chapter's own time (summed from pytest's
per-cell durations in a JUnit XML report). Repeats alternate floor and chapters; the median is reported.
Also reported: the CPU seconds of both calls (pytest and its kernels), which other load on the machine moves
less than wall time. This is a measurement, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script in benchmarks/: the repository's tools/
from tools import series  # noqa: E402

FLOOR_SOURCE = (
    "import ipywidgets\nimport matplotlib.pyplot as plt\nimport torch\n\n"
    "import helpers\nfrom helpers import show_weights, toy\nfrom helpers.explorer import draw_view\n"
)
BUDGET = 1.5


def default_chapters() -> list[Path]:
    return [path for path in series.chapters("en") if series.number(path) <= "07"]


def write_floor(folder: Path, count: int) -> list[Path]:
    """`count` one-cell notebooks that only import what a chapter imports first."""
    paths = []
    for i in range(count):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(FLOOR_SOURCE)]
        path = folder / f"floor_{i:02d}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return paths


def nbval_command(paths: list[Path], *extra: str) -> list[str]:
    """`pytest --nbval` over `paths` with make test's flags (pyproject.toml's addopts apply too)."""
    return [sys.executable, "-m", "pytest", *map(str, paths), "--nbval", "--nbval-current-env",
            "--nbval-sanitize-with", str(ROOT / "tests" / "sanitize.cfg"), "-q", *extra]


def run_nbval(paths: list[Path], junit: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `pytest --nbval` call over `paths` (as make test runs them).

    CPU = user + system time of pytest and the kernels it starts (all waited-for descendants): less
    sensitive than wall time to other load on the machine."""
    command = nbval_command(paths, f"--junitxml={junit}")
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    elapsed, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"nbval failed:\n{result.stdout[-3000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def per_notebook(junit: Path) -> dict[str, float]:
    """Seconds per notebook, summed over its cells' test cases."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("classname", "?").removesuffix(".ipynb").split(".")[-1]  # "notebooks.00_x.ipynb"
        seconds[name] += float(case.get("time", 0))
    return dict(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    chapters = [p.resolve() for p in args.notebooks] or default_chapters()
    floor_times, chapter_times, floor_cpu, chapter_cpu, cells = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        floor = write_floor(folder, len(chapters))
        for _ in range(args.repeats):
            wall, cpu = run_nbval(floor, folder / "floor.xml")
            floor_times.append(wall)
            floor_cpu.append(cpu)
            wall, cpu = run_nbval(chapters, folder / "chapters.xml")
            chapter_times.append(wall)
            chapter_cpu.append(cpu)
            cells.append(per_notebook(folder / "chapters.xml"))
    floor_s, chapters_s = statistics.median(floor_times), statistics.median(chapter_times)
    print(f"{len(chapters)} notebooks; median of {args.repeats} runs (wall seconds of one pytest --nbval call)")
    print(f"floor (kernel + imports): {floor_s:6.1f} s   runs: {', '.join(f'{t:.1f}' for t in floor_times)}")
    print(f"chapters:                 {chapters_s:6.1f} s   runs: {', '.join(f'{t:.1f}' for t in chapter_times)}")
    ratio = chapters_s / floor_s
    print(f"ratio: {ratio:.2f} (budget {BUDGET}: {'met' if ratio <= BUDGET else 'NOT met'}); per run: "
          f"{', '.join(f'{c / f:.2f}' for c, f in zip(chapter_times, floor_times, strict=True))}")
    cpu_ratio = statistics.median(chapter_cpu) / statistics.median(floor_cpu)
    print(f"CPU seconds (pytest + kernels): floor {statistics.median(floor_cpu):.1f}, chapters "
          f"{statistics.median(chapter_cpu):.1f}, ratio {cpu_ratio:.2f} "
          f"(budget {BUDGET}: {'met' if cpu_ratio <= BUDGET else 'NOT met'})")
    print("per chapter (median of summed cell durations, s):")
    for name in sorted(cells[0]):
        print(f"  {name:<45} {statistics.median(c.get(name, 0.0) for c in cells):6.2f}")
    print(f"(load average now {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
