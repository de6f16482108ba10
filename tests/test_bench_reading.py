"""benchmarks/bench_reading.py: what a chapter's main path and optional sections are, what they count, and that the
minutes chapter 0's map shows (both editions) are its figures. docs/teaching.md's "est." are in test_teaching.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

from tools import series

sys.path.insert(0, str(series.ROOT / "benchmarks"))
import bench_reading  # noqa: E402

COMMAND = "python benchmarks/bench_reading.py --write-map"


def notebook(*cells: tuple[str, str, dict], cell_id: str = "c") -> nbformat.NotebookNode:
    made = []
    for i, (kind, source, metadata) in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        cell = make(source, id=f"{cell_id}{i}")
        cell.metadata.update(metadata)
        made.append(cell)
    return nbformat.v4.new_notebook(cells=made)


def test_an_optional_section_runs_to_the_next_heading_of_its_level_or_above():
    nb = notebook(("md", "# Title\n\nOne two three.", {}),
                  ("md", "## Step 1: main\n\nfour five\n\n### Optional: more\n\nsix seven eight", {}),
                  ("code", "x = 1", {}),
                  ("md", "#### deeper, still optional\n\nnine", {}),
                  ("md", "```\n# not a heading: code in a fence\n```", {}),
                  ("md", "### Back on the main path\n\nten", {}),
                  ("code", "z = 3", {}))
    flags = [(optional, kind) for optional, kind, _ in bench_reading.sections(nb, "en")]
    assert flags == [(False, "markdown"), (False, "markdown"), (True, "markdown"), (True, "code"),
                     (True, "markdown"), (True, "fenced"), (False, "markdown"), (False, "code")]


def test_the_main_path_leaves_out_optional_parts_solutions_and_the_launch_cells(tmp_path: Path):
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("badge words here", id="colab-badge"), code("import os\nos.environ['X'] = 'en'", id="colab-setup"),
        md("# Title", id="a"), md("## Step 1: one two three", id="b"), code("x = 1\n\ny = 2", id="c"),
        md("### Optional: inside\nfour five", id="d"), code("z = 3\nch.demo_explorer()", id="e"),
        md("## Step 2: six", id="f"), md("<details><summary>Solution</summary>seven</details>", id="g"),
        code("check.solution(1)", id="h", metadata={"jupyter": {"source_hidden": True}})])
    path = tmp_path / "99_x.ipynb"
    nbformat.write(nb, path)
    parts = bench_reading.estimate(path, "en")
    main, extra = parts["main"], parts["optional"]
    assert (main.words, main.code_lines, main.explorers, main.exercises) == (9, 3, 0, 1)
    assert (extra.words, extra.code_lines, extra.explorers, extra.exercises) == (4, 2, 1, 0)
    assert main.minutes == pytest.approx(9 / 170 + 3 / 20 + 5)
    assert extra.minutes == pytest.approx(4 / 170 + 2 / 20 + 3)


def test_japanese_text_counts_characters_and_the_latin_words_among_them():
    assert bench_reading.count("## 発展：`is_causal` の**ヒント**", "ja") == (1, 7)
    assert bench_reading.count("See [chapter 7](07_x.ipynb), `mask`.", "en") == (4, 0)
    nb = notebook(("md", "## 発展：内側\n\n本文", {}), ("code", "x = 1", {}), ("md", "## まとめ", {}))
    assert [o for o, _, _ in bench_reading.sections(nb, "ja")] == [True, True, False]


def test_bad_input_is_refused(tmp_path: Path, capsys):
    with pytest.raises(ValueError, match="edition"):
        bench_reading.count("text", "fr")
    with pytest.raises(ValueError, match="edition"):
        bench_reading.sections(notebook(), "de")
    with pytest.raises(ValueError, match="path"):
        bench_reading.estimate(tmp_path / "missing.ipynb", "en")
    with pytest.raises(SystemExit) as exited:
        bench_reading.main(["99"])
    assert exited.value.code == 2 and "no chapter ['99']" in capsys.readouterr().err


def test_the_explorers_counted_are_the_chapters_own():
    """A code cell calling `..._explorer(` is an explorer: the same ones as each chapter module's EXPLORERS."""
    from helpers import chapters

    for path in series.chapters("en"):
        parts = bench_reading.estimate(path)
        counted = parts["main"].explorers + parts["optional"].explorers
        assert counted == len(chapters.explorers(series.number(path))), path.name


def test_the_japanese_rate_is_the_english_rate_over_the_same_text():
    """510 characters a minute = 170 words a minute x the Japanese characters the edition spends per English word
    it translates (the English words less the Latin words the Japanese keeps), 3.0 within 0.15 today."""
    en = [bench_reading.estimate(path) for path in series.chapters("en")]
    ja = [bench_reading.estimate(path) for path in series.chapters("ja")]
    chars = sum(part.chars for parts in ja for part in parts.values())
    translated = (sum(part.words for parts in en for part in parts.values())
                  - sum(part.words for parts in ja for part in parts.values()))
    ratio = bench_reading.JA_CHARS_PER_MINUTE / bench_reading.WORDS_PER_MINUTE
    assert abs(chars / translated - ratio) <= 0.15, (chars / translated, ratio)


def shown(cell: str) -> int:
    return 0 if cell.strip() == "–" else int(cell.strip().strip("*"))


ROW = re.compile(r"^\| (\d+) \|.*\| ([\d–]+) \| ([\d–]+) \|$", re.M)
TOTAL = re.compile(r"^\| \| \*\*[^|]+\*\* \| \| \*\*([\d–]+)\*\* \| \*\*([\d–]+)\*\* \|$", re.M)
HOURS = {"en": re.compile(r"\*\*About ([\d.]+) hours\*\*: the main paths of chapters 0–5 \(an estimated (\d+) min"),
         "ja": re.compile(r"\*\*約 ([\d.]+) 時間で\*\*：第 0〜5 章の本筋（推定 (\d+) 分")}


@pytest.mark.parametrize("edition", series.EDITIONS)
def test_chapter_0s_map_shows_the_estimated_minutes(edition: str):
    """Every chapter's main-path and optional minutes, each part's totals and the hours of the chapters 0-5 path in
    chapter 0's map are the estimator's, rounded as written."""
    start = series.chapters(edition)[0]
    text = next(c.source for c in nbformat.read(start, as_version=4).cells if c.get("id") == "c02")
    assert "benchmarks/bench_reading.py" in text and "170" in text
    shown_rows = {f"{int(n):02d}": (shown(m), shown(o)) for n, m, o in ROW.findall(text)}
    expected = {series.number(path): bench_reading.minutes(path) for path in series.chapters(edition)}
    wrong = {n: (shown_rows.get(n), m) for n, m in expected.items() if shown_rows.get(n) != m}
    assert not wrong, f"{start}: (main, optional) minutes in the map vs the estimate: {wrong}; run {COMMAND}"
    totals = [(shown(m), shown(o)) for m, o in TOTAL.findall(text)]
    estimated = [(m, o) for _, m, o in bench_reading.part_totals(edition)]
    assert totals == estimated, f"{start}: the parts' totals {totals} vs the estimate {estimated}; run {COMMAND}"
    hours = HOURS[edition].search(text)
    assert hours, f"{start}: the chapters 0-5 path must say its estimated hours and minutes"
    part_1 = estimated[0][0]
    assert (float(hours[1]), int(hours[2])) == (bench_reading.hours(part_1), part_1), (
        f"{start}: the chapters 0-5 path says {hours[0]!r}; the estimate is {part_1} min; run {COMMAND}")


@pytest.mark.parametrize("edition", series.EDITIONS)
def test_write_map_puts_the_estimates_back(edition: str):
    """`bench_reading.py --write-map` (mapped()) rewrites a stale map to the estimator's figures and leaves a
    current one as it is."""
    start = series.chapters(edition)[0]
    text = next(c.source for c in nbformat.read(start, as_version=4).cells if c.get("id") == "c02")
    assert bench_reading.mapped(text, edition) == text
    stale = ROW.sub(lambda row: row[0].replace(f"| {row[2]} |", "| 999 |"), text, count=1)
    stale = TOTAL.sub(lambda row: row[0].replace(f"**{row[1]}**", "**1**"), stale, count=1)
    assert stale != text and bench_reading.mapped(stale, edition) == text
