"""docs/teaching.md: its table's step and exercise counts are the chapters' own, it lists every chapter, and its
estimated minutes are benchmarks/bench_reading.py's (the estimator's own tests: tests/test_bench_reading.py)."""

import re
import sys
from pathlib import Path

import nbformat

from tools import series

ROOT = series.ROOT
NOTEBOOKS = series.chapters("en")
ROW = re.compile(r"^\| (\d+)\. [^|]+\| (\d+) \| (\d+) \|", re.M)


def counts(path: Path) -> tuple[int, int]:
    """(steps, exercises) of a chapter: its '## Step N' headings and its hidden solutions run through a check."""
    nb = nbformat.read(path, as_version=4)
    steps = sum(len(re.findall(r"^## Step \d+", c.source, re.M)) for c in nb.cells if c.cell_type == "markdown")
    exercises = sum(c.source.count(".solution(") for c in nb.cells if c.cell_type == "code")
    return steps, exercises


def test_the_timing_table_matches_the_chapters():
    table = {int(n): (int(s), int(e)) for n, s, e in ROW.findall((ROOT / "docs" / "teaching.md").read_text())}
    chapters = {int(series.number(path)): counts(path) for path in NOTEBOOKS}
    assert sorted(table) == sorted(chapters), "docs/teaching.md must have one row per chapter"
    wrong = {n: (table[n], chapters[n]) for n in chapters if table[n] != chapters[n]}
    assert not wrong, f"(steps, exercises) in docs/teaching.md vs the notebooks: {wrong}"


sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_reading  # noqa: E402

CELL = re.compile(r"^\| (\d+)\. [^|]+\| \d+ \| \d+ \| ([^|]*)\|", re.M)   # a row's "a learner's minutes"


def test_every_estimate_is_the_scripts():
    """An "est. N" in the table is benchmarks/bench_reading.py's estimate for that chapter's main path."""
    cells = {f"{int(n):02d}": cell for n, cell in CELL.findall((ROOT / "docs" / "teaching.md").read_text())}
    stated = {n: int(m[1]) for n, cell in cells.items() if (m := re.search(r"\best\. (\d+)\b", cell))}
    assert {"11", "12", "13"} <= set(stated), "chapters 11-13 need their estimate"
    by_number = {series.number(path): path for path in NOTEBOOKS}
    wrong = {n: (m, bench_reading.minutes(by_number[n])[0]) for n, m in stated.items()
             if bench_reading.minutes(by_number[n])[0] != m}
    assert not wrong, f"est. in docs/teaching.md vs bench_reading.py: {wrong}; run bench_reading.py --write-map"


def test_the_estimate_is_set_against_the_timed_readings_truly():
    """The page's range of the estimate against the timed readings (chapters 0-6 and 8-10; the whole chapter: main
    path plus optional sections, the text that was timed) is the estimator's on today's chapters."""
    text = (ROOT / "docs" / "teaching.md").read_text()
    off = bench_reading.timed_offsets(text)
    assert len(off) == 10, off
    low, high = min(off.values()), max(off.values())
    stated = re.search(r"lands within (-?\d+) % to \+(\d+) % of them", text)
    assert stated and (int(stated[1]), int(stated[2])) == (low, high), (stated and stated[0], off)
    mean = round(sum(abs(e) for e in off.values()) / len(off))
    assert f"{mean} % off on average" in text, (mean, off)
