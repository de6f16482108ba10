"""The series under nbval with each x86 code path the CPU kernels can take: `make portable`.

Floats summed in another order differ in the last bits, so a stored output that prints such bits passes on one
machine and fails on another. Two libraries pick the order by CPU:
- PyTorch's own vector kernels (softmax, sums, elementwise): DEFAULT, AVX2 or AVX512 on x86; the environment
  variable ATEN_CPU_CAPABILITY makes PyTorch use a lower level;
- MKL, the math library PyTorch's x86 wheels use for matrix products: its AVX2 or AVX-512 code; MKL_CBWR=AVX2
  makes it run the AVX2 code on an AVX-512 CPU.
This runs every chapter of both editions through nbval once per setting (the Japanese edition has the English
code, tests/test_japanese_edition.py, but outputs of its own: its hints and summaries are in Japanese, and a
number printed inside one is as exposed to the CPU as in English). A setting this CPU cannot run is reported as
NOT TESTED, never passed over silently. MKL's generic code (MKL_CBWR=COMPATIBLE, what a CPU older than AVX2
gets) is not a setting: chapter 8 states that its bit-identical padding needs MKL's AVX2 or AVX-512 code.

Usage: python -m tools.portable [notebooks ...] [--settings default avx2 avx512 mkl-avx2] [--jobs N]
(default: every chapter of both editions, on make test's workers: one per CPU core, at most 8)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from tools import series
from tools.dev import NBVAL, default_jobs, xdist

ROOT = series.ROOT
# name -> (environment, the PyTorch level the CPU must reach for it)
SETTINGS = {
    "default": ({"ATEN_CPU_CAPABILITY": "default"}, "DEFAULT"),
    "avx2": ({"ATEN_CPU_CAPABILITY": "avx2"}, "AVX2"),
    "avx512": ({"ATEN_CPU_CAPABILITY": "avx512"}, "AVX512"),
    "mkl-avx2": ({"MKL_CBWR": "AVX2"}, "AVX2"),
}
ORDER = ("DEFAULT", "AVX2", "AVX512")


def level_in_use(env: dict[str, str]) -> str:
    """What PyTorch reports it runs with env: 'DEFAULT', 'AVX2', 'AVX512', ..."""
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                          env=dict(os.environ, **env), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def nbval(notebooks: list[str], env: dict[str, str], jobs: int) -> int:
    """Exit code of one nbval run of `notebooks` with env (make test's flags, on `jobs` workers)."""
    command = [sys.executable, "-m", "pytest", *notebooks, *NBVAL, "-q", *xdist(jobs)]
    return subprocess.run(command, cwd=ROOT, env=dict(os.environ, **env)).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    parser.add_argument("--jobs", type=int, default=default_jobs(),
                        help="pytest workers (default: one per CPU core, at most 8)")
    args = parser.parse_args()
    notebooks = args.notebooks or [str(p.relative_to(ROOT)) for p in series.every_chapter()]
    best = level_in_use({})
    results = []
    for name in args.settings:
        env, needs = SETTINGS[name]
        used = level_in_use(env)
        cpu_can = best in ORDER and ORDER.index(best) >= ORDER.index(needs)
        if not cpu_can or ("ATEN_CPU_CAPABILITY" in env and used != needs):
            results.append((name, used, f"NOT TESTED: this CPU's best level is {best}"))
            continue
        print(f"== {' '.join(f'{k}={v}' for k, v in env.items())}: {len(notebooks)} notebooks", flush=True)
        results.append((name, used, "passed" if nbval(notebooks, env, args.jobs) == 0 else "FAILED"))
    print(f"\n{'setting':<10} {'PyTorch kernels':<16} nbval")
    for name, used, verdict in results:
        print(f"{name:<10} {used:<16} {verdict}")
    if any(verdict == "FAILED" for *_, verdict in results):
        return 1
    if any(verdict.startswith("NOT TESTED") for *_, verdict in results):
        print("Some settings were not tested on this CPU: run `make portable` on one that has them (an x86 CPU with "
              "AVX-512 runs them all).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
