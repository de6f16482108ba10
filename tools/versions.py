"""The version matrix: every chapter of both editions through nbval under each torch release of MATRIX.

`make versions` (or `python -m tools.versions`) builds one venv per release under build/versions/ (cached: rebuilt
only when its requirements change): the pinned requirements.txt with only torch changed, on the Python MATRIX names
(3.12 for one release, as on Colab), without the site, browser and lint tools nbval does not need. It then runs
every chapter of both editions through nbval in it (the helpers of this checkout, on PYTHONPATH; nbval's sanitizer
prints any torch version as "torch VERSION") and writes docs/versions.md: per release, Python, the torch build, how
many cells passed, and every cell that did not, with how it failed (its output differs, or it raised). Not part of
`make test`: on Linux every torch release but this project's pin is a multi-GB CUDA build, downloaded the first time.

The claims whose truth depends on the release are keyed by release (or build) in helpers/versions.py (BEHAVIOURS):
a chapter asserts the running release's entry and prints every measured one, so its stored output is the same on all.
Usage: python -m tools.versions [--only 2.14.1 ...] [--jobs N] [--notebooks PATH ...] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tools import series

ROOT = series.ROOT
MATRIX = {"2.12.1": "3.12", "2.13.0": "3.11", "2.14.1": "3.11"}   # torch release -> the Python to run it on
VENVS = ROOT / "build" / "versions"
TABLE = ROOT / "docs" / "versions.md"
NOT_NEEDED = ("sphinx", "myst-nb", "furo", "playwright", "ruff", "hypothesis")   # site, browser and lint tools
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/sanitize.cfg"]


@dataclass(frozen=True)
class Miss:
    """One cell that did not pass under one release."""
    notebook: str      # e.g. notebooks/07_dead_rows_and_fast_paths.ipynb
    cell: str          # nbval's name, e.g. "Cell 33"
    how: str           # "output differs" or "raised <ExceptionType>"


@dataclass(frozen=True)
class Run:
    torch: str
    python: str
    build: str         # torch.__version__ in the venv, e.g. "2.14.1+cu130"
    passed: int
    misses: tuple[Miss, ...]


def requirements(torch_version: str) -> list[str]:
    """requirements.txt's pins with torch changed to `torch_version` and the tools nbval does not need left out."""
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    kept = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    kept = [line for line in kept if re.split(r"[=<>\[ ]", line, maxsplit=1)[0].lower() not in NOT_NEEDED]
    return [f"torch=={torch_version}" if line.startswith("torch==") else line for line in kept]


def venv(torch_version: str, python: str) -> Path:
    """The venv for one release, built if missing or if its requirements changed; its python executable."""
    folder = VENVS / f"torch-{torch_version}-py{python}"
    wanted = "\n".join(requirements(torch_version)) + "\n"
    stamp = folder / "requirements.txt"
    executable = folder / "bin" / "python"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == wanted and executable.is_file():
        return executable
    shutil.rmtree(folder, ignore_errors=True)
    interpreter = interpreter_for(python)
    if interpreter is None:
        raise SystemExit(f"no working python{python} found (PATH, pyenv): it is needed for torch {torch_version}")
    print(f"building {folder.relative_to(ROOT)} (torch {torch_version}: a large download the first time)", flush=True)
    subprocess.run([interpreter, "-m", "venv", str(folder)], check=True)
    (folder / "wanted.txt").write_text(wanted, encoding="utf-8")
    subprocess.run([str(executable), "-m", "pip", "install", "--quiet", "-r", str(folder / "wanted.txt")], check=True)
    stamp.write_text(wanted, encoding="utf-8")
    return executable


def interpreter_for(python: str) -> str | None:
    """A Python `python` ("3.12") that runs: on PATH, or one of pyenv's versions (its shims may refuse)."""
    candidates = [shutil.which(f"python{python}"),
                  *sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{python}.*/bin/python{python}"))]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    return None


def notebooks() -> list[str]:
    """Every chapter of both editions, as paths relative to the root."""
    return [path.relative_to(ROOT).as_posix() for path in series.every_chapter()]


def run(torch_version: str, python: str, jobs: int, chosen: list[str] | None = None) -> Run:
    """nbval over the chosen notebooks (default: every chapter of both editions) in the release's venv."""
    executable = venv(torch_version, python)
    build = subprocess.run([str(executable), "-c", "import torch; print(torch.__version__)"], check=True,
                           capture_output=True, text=True).stdout.strip()
    report = VENVS / f"nbval-{torch_version}.xml"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [str(executable), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *NBVAL,
               f"--junitxml={report}", *(["-n", str(jobs), "--dist", "loadscope"] if jobs > 1 else []),
               *(chosen or notebooks())]
    print(f"torch {build}, Python {python}: nbval on {len(chosen or notebooks())} notebooks", flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=False)
    passed, misses = read_report(report)
    return Run(torch_version, python, build, passed, tuple(misses))


def read_report(path: Path) -> tuple[int, list[Miss]]:
    """How many cells passed, and the ones that did not, from pytest's junit XML."""
    passed, misses = 0, []
    for case in ET.parse(path).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            passed += case.find("skipped") is None
            continue
        text = f"{problem.get('message', '')}\n{problem.text or ''}"
        raised = re.findall(r"^(\w+(?:Error|Exception|Warning))\b", re.sub(r"\x1b\[[0-9;]*m", "", text), re.M)
        how = "output differs" if "outputs differ" in text else f"raised {raised[-1] if raised else 'an exception'}"
        notebook = case.get("file") or re.sub(r"\.ipynb$", "", case.get("classname", "")).replace(".", "/") + ".ipynb"
        misses.append(Miss(notebook, case.get("name", "?"), how))
    return passed, misses


def markdown(runs: list[Run], today: datetime.date) -> str:
    """docs/versions.md: one row per release, then every cell that did not pass."""
    lines = ["# The version matrix", "",
             f"Written by `make versions` (tools/versions.py) on {today.isoformat()}: every chapter of both editions "
             "through nbval under each torch release, with this checkout's helpers. Release-specific claims are keyed "
             "by release (or build) in `helpers/versions.py` (`BEHAVIOURS`); a chapter asserts the running release's "
             "entry and prints every measured one, so its stored output does not change with the release.", "",
             "| torch | build | Python | cells passed | cells that did not |", "|---|---|---|---|---|"]
    lines += [f"| {r.torch} | {r.build} | {r.python} | {r.passed} | {len(r.misses)} |" for r in runs]
    misses = [(r, m) for r in runs for m in r.misses]
    lines += ["", "## Cells that did not pass", ""]
    if misses:
        lines += ["| torch | notebook | cell | how |", "|---|---|---|---|"]
        lines += [f"| {r.torch} | {m.notebook} | {m.cell} | {m.how} |" for r, m in misses]
    else:
        lines.append("None: every cell of every chapter passed under every release.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(MATRIX), help="these releases only")
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8), help="pytest-xdist workers")
    parser.add_argument("--notebooks", nargs="+", help="these notebooks only (default: every chapter, both editions)")
    parser.add_argument("--no-write", action="store_true", help=f"print the table, leave {TABLE.name} as it is")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    runs = [run(t, MATRIX[t], args.jobs, args.notebooks) for t in MATRIX if not args.only or t in args.only]
    text = markdown(runs, datetime.date.today())
    print(text)
    if not args.no_write and not args.only and not args.notebooks:
        TABLE.write_text(text, encoding="utf-8")
        print(f"wrote {TABLE.relative_to(ROOT)}")
    return 0 if all(not r.misses for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
