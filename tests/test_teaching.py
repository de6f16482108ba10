"""docs/teaching.md: its table's step and exercise counts are the chapters' own, and it lists every chapter."""

import re
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
