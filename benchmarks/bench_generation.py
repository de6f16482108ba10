"""Chapter 9's costs: training its tiny LM (ch09.TinyLM), precomputing the explorer's 24 runs, one explorer update.

Run: .venv/bin/python benchmarks/bench_generation.py [--n 60]

An update is generation_view (cached runs, so no generation) plus view_html, the two things the explorer
does per control change; benchmarks/bench_explorers.py times the same inside a real kernel with the widgets.
This is a measurement, not a test: the numbers depend on the machine and its load (printed first).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

import torch

from helpers.chapters import ch09_batched_generation as ch09
from helpers.explorer import view_html

TARGET_MS = 50.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="timed updates (default 60)")
    n = parser.parse_args().n
    torch.set_num_threads(1)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    start, cpu = time.perf_counter(), time.process_time()
    ch09.trained_model()
    print(f"training (60 steps, one thread): {time.perf_counter() - start:.2f} s wall, "
          f"{time.process_time() - cpu:.2f} s CPU")
    start, cpu = time.perf_counter(), time.process_time()
    combinations = list(itertools.product(ch09.SIDES, ch09.POSITIONS, ch09.MASKS, (True, False)))
    for combination in combinations:
        ch09.batched(*combination)
    print(f"precomputing {len(combinations)} runs: {time.perf_counter() - start:.2f} s wall, "
          f"{time.process_time() - cpu:.2f} s CPU")

    settings = itertools.cycle([(*c, step) for c in combinations for step in range(1, ch09.STEPS + 1)])
    times, cpu_times = [], []
    for _ in range(n):
        start, cpu = time.perf_counter(), time.process_time()
        view_html(ch09.generation_view(*next(settings)))
        times.append((time.perf_counter() - start) * 1000)
        cpu_times.append((time.process_time() - cpu) * 1000)
    median, p90 = statistics.median(times), statistics.quantiles(times, n=10)[-1]
    print(f"update (view + HTML): median {median:.1f} ms, 90th percentile {p90:.1f} ms "
          f"({'under' if median < TARGET_MS else 'OVER'} the {TARGET_MS:.0f} ms target); "
          f"CPU median {statistics.median(cpu_times):.1f} ms")


if __name__ == "__main__":
    main()
