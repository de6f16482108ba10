"""The series under nbval with each of PyTorch's x86 CPU kernels: `make portable`.

PyTorch picks its vector kernels for the CPU it runs on (DEFAULT, AVX2 or AVX512 on x86), and the
environment variable ATEN_CPU_CAPABILITY makes it use a lower level. Floats summed in another order differ
in the last bits, so a stored output that prints such bits passes on one machine and fails on another. This
runs every English chapter through nbval once per level (the Japanese edition has the same code and outputs,
tests/test_japanese_edition.py). A level this CPU cannot run is reported as NOT TESTED, never passed over
silently: PyTorch then runs the best level below it.

Usage: python -m tools.portable [notebooks ...] [--levels default avx2 avx512]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from tools.dev import NBVAL, xdist

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ("default", "avx2", "avx512")


def level_in_use(level: str) -> str:
    """What PyTorch reports it runs with ATEN_CPU_CAPABILITY=level: 'DEFAULT', 'AVX2', 'AVX512', ..."""
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                          env=dict(os.environ, ATEN_CPU_CAPABILITY=level), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def nbval(notebooks: list[str], level: str) -> int:
    """Exit code of one nbval run of `notebooks` under `level` (make test's flags, two workers)."""
    command = [sys.executable, "-m", "pytest", *notebooks, *NBVAL, "-q", *xdist(2)]
    return subprocess.run(command, cwd=ROOT, env=dict(os.environ, ATEN_CPU_CAPABILITY=level)).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*")
    parser.add_argument("--levels", nargs="+", default=list(LEVELS), choices=LEVELS)
    args = parser.parse_args()
    chapters = (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
    notebooks = args.notebooks or sorted(str(p.relative_to(ROOT)) for p in chapters)
    results = []
    for level in args.levels:
        used = level_in_use(level)
        if used.lower() != level:
            results.append((level, used, "NOT TESTED: this CPU cannot run these kernels"))
            continue
        print(f"== ATEN_CPU_CAPABILITY={level}: {len(notebooks)} notebooks", flush=True)
        results.append((level, used, "passed" if nbval(notebooks, level) == 0 else "FAILED"))
    print("\nATEN_CPU_CAPABILITY   kernels used   nbval")
    for level, used, verdict in results:
        print(f"{level:<21} {used:<14} {verdict}")
    if any(verdict == "FAILED" for *_, verdict in results):
        return 1
    if any(verdict.startswith("NOT TESTED") for *_, verdict in results):
        print("Some levels were not tested on this CPU: run `make portable` on one that has them (any x86 CPU with "
              "AVX-512 runs all three).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
