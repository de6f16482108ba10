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


EST = re.compile(r"^\| (\d+)\. [^|]+\| \d+ \| \d+ \| est\. (\d+)\b", re.M)


def test_every_estimate_is_the_scripts():
    """An "est. N" in the table is benchmarks/bench_reading_time.py's estimate for that chapter's main path."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_reading_time

    stated = {f"{int(n):02d}": int(m) for n, m in EST.findall((ROOT / "docs" / "teaching.md").read_text())}
    assert {"11", "12", "13"} <= set(stated), "chapters 11-13 need their estimate"
    by_number = {series.number(path): path for path in NOTEBOOKS}
    wrong = {n: (m, bench_reading_time.estimate(by_number[n])) for n, m in stated.items()
             if bench_reading_time.estimate(by_number[n]) != m}
    assert not wrong, f"est. in docs/teaching.md vs python benchmarks/bench_reading_time.py: {wrong}"


def test_the_main_path_leaves_out_optional_parts_and_solutions(tmp_path: Path):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_reading_time

    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("# Title"), md("## Step 1: one two three"), code("x = 1\n\ny = 2"),
        md("### Optional: inside\nfour five"), code("z = 3"), md("## Step 2: six"),
        md("<details><summary>Solution</summary>seven</details>"), code("check.solution(1)")])
    path = tmp_path / "99_x.ipynb"
    nbformat.write(nb, path)
    assert [c.source for c in bench_reading_time.main_path(path)] == [
        "# Title", "## Step 1: one two three", "x = 1\n\ny = 2", "## Step 2: six", "check.solution(1)"]
