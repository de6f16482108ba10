"""Time chapter 8's training (ch08.train, helpers/chapters/ch08_*): each model, a few runs, median wall and CPU seconds.

Run: .venv/bin/python benchmarks/bench_training.py [--runs 3]
     taskset -c 0 .venv/bin/python benchmarks/bench_training.py   # one core only

The first run in a fresh process also pays one-time costs (lazy imports, first kernel calls): it is shown
apart and left out of the median. Each training uses one thread (training.deterministic); the chapter
trains both models at once in two threads (ch08.train_both), timed on the last line. The target is
under 10 s per model on 2 cores.
This is a measurement, not a test: the numbers depend on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from helpers.chapters import ch08_a_trained_classifier as ch08

TARGET_S = 10.0


def time_once(masked: bool) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, final test accuracy) of one training run."""
    wall, cpu = time.perf_counter(), time.process_time()
    run = ch08.train(masked)
    return time.perf_counter() - wall, time.process_time() - cpu, run.history.test_acc[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per model after the first (default 3)")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    print(f"training {ch08.EPOCHS} epochs x {ch08.TRAIN_SIZE // ch08.BATCH + 1} batches "
          f"of {ch08.BATCH}; CPUs allowed: {cpus}; load average {os.getloadavg()[0]:.2f}")
    first = {masked: time_once(masked) for masked in (True, False)}
    print(f"{'model':10} {'first s':>8} {'median s':>9} {'cpu s':>6} {'min s':>6} {'max s':>6} {'test acc':>8}"
          f"  under {TARGET_S:g} s?")
    for masked in (True, False):
        runs = [time_once(masked) for _ in range(args.runs)]
        walls = [w for w, _, _ in runs]
        median = statistics.median(walls)
        print(f"{'masked' if masked else 'unmasked':10} {first[masked][0]:>8.2f} {median:>9.2f} "
              f"{statistics.median(c for _, c, _ in runs):>6.2f} {min(walls):>6.2f} {max(walls):>6.2f} "
              f"{runs[-1][2]:>8.2f}  {'yes' if median < TARGET_S else 'NO'}")
    walls = []
    for _ in range(args.runs):
        start = time.perf_counter()
        ch08.train_both()
        walls.append(time.perf_counter() - start)
    print(f"{'both at once (train_both, the chapter)':39} median {statistics.median(walls):.2f} s, "
          f"min {min(walls):.2f}, max {max(walls):.2f}")
    print(f"(wall seconds; cpu = this process's CPU time, less sensitive to other load; "
          f"load average now {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
