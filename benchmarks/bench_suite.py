"""`make test`'s wall time, its slowest tests, and where the time goes. A measurement, not a test.

Run: .venv/bin/python benchmarks/bench_suite.py [--repeats 3] [--jobs 2] [--extra-chapters 3]
     .venv/bin/python benchmarks/bench_suite.py --fresh-clone
     .venv/bin/python benchmarks/bench_suite.py --unit [--repeats 3]
     .venv/bin/python benchmarks/bench_suite.py --check 13 [--repeats 3]

Default: in this checkout, with .venv and build/ as they are, run `make test`'s two commands (ruff, then the
pytest call of tools/dev.py's test_command, plus --durations=15 and a JUnit report) `repeats` times. Printed:
the wall time of each run (ruff included) and the median, pytest's own seconds, the 15 slowest tests of the
last run, and the test seconds summed per unit (the browser tests, each notebook, each other test module), the
units conftest.py hands to the workers whole. The summed seconds over the wall time says how well the workers
overlap.
--extra-chapters N: the suite as it would be with N more chapters. In a temporary copy of this checkout's HEAD
(with .venv and build/ linked), the last N chapters are copied as new ones, NN+N_<stem>, in both editions, with
their chapter module and test module (the copies still import the originals' code), and their badge cells are
made for their own paths; then the suite runs there. A stand-in for chapters 11-13, which are not written yet.
--unit: `make unit` instead (its pytest call), wall time and the slowest tests.
--check NN: `make check CH=NN` instead (one chapter's loop), wall time and the slowest tests.
--fresh-clone: what CI does. Clone this checkout's HEAD into a temporary folder and run `.ci/run` there, which
builds the venv from scratch and runs `make test`; print its wall time.
--record KEY: also write the median wall time (the fresh clone's wall time) to benchmarks/results.json as
record KEY, with the date and this machine (benchmarks/results.py): the figures the README states cite it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script in benchmarks/: the repository's conftest.py and tools/
import results  # noqa: E402  (benchmarks/results.py: benchmarks/ is on sys.path when a script here runs)

from conftest import unit_of  # noqa: E402  (what a worker gets whole)
from tools import series  # noqa: E402
from tools.dev import LINTED, check_command, test_command, unit_command  # noqa: E402


def unit_seconds(junit: Path) -> dict[str, float]:
    """Test seconds (set-up, call and teardown) summed per unit, from a JUnit report."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).iter("testcase"):
        classname = case.get("classname", "")   # "tests.browser.test_notebooks", "notebooks.00_start_here.ipynb"
        if classname.endswith(".ipynb"):
            path = classname.replace(".", "/", classname.count(".") - 1)
        else:
            path = classname.replace(".", "/") + ".py"
        seconds[unit_of(path)] += float(case.get("time", 0))
    return dict(seconds)


def one_run(jobs: int, junit: Path, command: str = "test", chapter: str = "") -> tuple[float, float, str]:
    """Wall seconds of ruff + pytest (`make unit` and `make check`: pytest alone), pytest's own seconds, and
    pytest's output."""
    python = Path(sys.executable)
    start = time.perf_counter()
    if command == "test":
        subprocess.run([python, "-m", "ruff", "check", *LINTED], cwd=ROOT, check=True, capture_output=True)
    pytest = {"test": lambda: test_command(python, jobs), "unit": lambda: unit_command(python, jobs),
              "check": lambda: check_command(python, chapter, jobs)}[command]()
    done = subprocess.run([*map(str, pytest), "--durations=15", f"--junitxml={junit}"],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    found = re.search(r"passed[^\n]* in ([0-9.]+)s", done.stdout)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"make {command} failed:\n{done.stdout[-4000:]}")
    return wall, float(found[1]), done.stdout


def with_extra_chapters(root: Path, n: int) -> None:
    """Copy the last n chapters of the checkout at root as n new ones (see the module docstring)."""
    chapters = series.chapters("en", root)
    last = int(series.number(chapters[-1]))
    for offset, source in enumerate(chapters[-n:], start=1):
        new = f"{last + offset:02d}_copy_of_{source.stem[3:]}"
        for edition in series.EDITIONS:
            folder = series.notebooks(edition, root)
            shutil.copy(folder / source.name, folder / f"{new}.ipynb")
        code, new_code = series.helpers_module(source, root), series.helpers_module(new, root)
        if code.is_dir():   # a chapter package (chapter 8): the copy is a package too
            shutil.copytree(code, new_code.with_suffix(""), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(code, new_code)
        shutil.copy(series.tests_module(source, root), series.tests_module(new, root))
    subprocess.run([sys.executable, "-m", "tools.links"], cwd=root, check=True, capture_output=True)


def fresh_clone(key: str = "") -> int:
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        start = time.perf_counter()
        done = subprocess.run(["bash", ".ci/run"], cwd=clone, capture_output=True, text=True)
        wall = time.perf_counter() - start
    tail = "\n".join(done.stdout.strip().splitlines()[-3:])
    print(f"fresh clone, .ci/run: {wall:.0f} s wall, exit code {done.returncode}\n{tail}")
    print(f"(load average now {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
    if key and done.returncode == 0:
        results.record(key, "a fresh clone's .ci/run (venv built from scratch, then make test), wall time", wall,
                       "benchmarks/bench_suite.py --fresh-clone")
    return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--fresh-clone", action="store_true")
    parser.add_argument("--extra-chapters", type=int, default=0)
    parser.add_argument("--unit", action="store_true")
    parser.add_argument("--check", metavar="NN", default="")
    parser.add_argument("--record", metavar="KEY", default="", help="write the result to benchmarks/results.json")
    args = parser.parse_args()
    if args.fresh_clone:
        return fresh_clone(args.record)
    if args.extra_chapters:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "copy"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(copy)], check=True)
            for name in (".venv", "build"):
                (copy / name).symlink_to(ROOT / name)
            with_extra_chapters(copy, args.extra_chapters)
            command = [str(ROOT / ".venv" / "bin" / "python"), str(copy / "benchmarks" / "bench_suite.py"),
                       "--repeats", str(args.repeats), "--jobs", str(args.jobs)]
            print(f"with {args.extra_chapters} more chapters ({copy.name}):", flush=True)
            return subprocess.run(command, cwd=copy, env=dict(os.environ, PYTHONPATH=str(copy))).returncode
    command = "unit" if args.unit else "check" if args.check else "test"
    print(f"make {command}{f' CH={args.check}' if args.check else ''}: load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs; {args.jobs} workers")
    walls, pytest_seconds = [], []
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "suite.xml"
        for _ in range(args.repeats):
            wall, seconds, output = one_run(args.jobs, junit, command, args.check)
            walls.append(wall)
            pytest_seconds.append(seconds)
            print(f"run: {wall:.1f} s wall (pytest {seconds:.1f} s)", flush=True)
        units = unit_seconds(junit)
    print(f"median of {args.repeats}: {statistics.median(walls):.1f} s wall, "
          f"pytest {statistics.median(pytest_seconds):.1f} s")
    slowest = output.split("slowest 15 durations =")[1].split("\n=")[0].strip().splitlines()
    print("the 15 slowest tests of the last run (set-up, call or teardown):")
    print("\n".join(f"  {line}" for line in slowest if re.match(r"\d", line)))
    total = sum(units.values())
    print(f"test seconds per unit, last run ({total:.0f} s in all, {total / walls[-1]:.2f} x the wall time):")
    for unit, seconds in sorted(units.items(), key=lambda item: -item[1])[:15]:
        print(f"  {seconds:6.1f}  {unit}")
    print(f"(load average now {os.getloadavg()[0]:.2f})")
    if args.record:
        what = f"make {command}{f' CH={args.check}' if args.check else ''}, wall time, median of {args.repeats}"
        script = " ".join(["benchmarks/bench_suite.py", *sys.argv[1:]])
        entry = results.record(args.record, what, statistics.median(walls), script)
        print(f"recorded {args.record}: {entry}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
