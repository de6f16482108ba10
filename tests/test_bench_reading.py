"""benchmarks/bench_reading.py: where an optional section starts and ends, and what it counts."""

from __future__ import annotations

import sys

import nbformat
import pytest

from tools import series

sys.path.insert(0, str(series.ROOT / "benchmarks"))
import bench_reading  # noqa: E402


def notebook(*cells: tuple[str, str, dict]) -> nbformat.NotebookNode:
    made = []
    for i, (kind, source, metadata) in enumerate(cells):
        cell = (nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell)(source, id=f"c{i}")
        cell.metadata.update(metadata)
        made.append(cell)
    return nbformat.v4.new_notebook(cells=made)


def test_an_optional_section_runs_to_the_next_heading_of_its_level_or_above():
    nb = notebook(("md", "# Title\n\nOne two three.", {}),
                  ("md", "## Step 1: main\n\nfour five\n\n### Optional: more\n\nsix seven eight", {}),
                  ("code", "x = 1", {}),
                  ("md", "#### deeper, still optional\n\nnine", {}),
                  ("code", "y = 2", {"jupyter": {"source_hidden": True}}),   # a hidden solution: not counted
                  ("md", "### Back on the main path\n\nten", {}),
                  ("code", "z = 3", {}))
    flags = [(optional, kind) for optional, kind, _ in bench_reading.sections(nb, "en")]
    assert flags == [(False, "markdown"), (False, "markdown"), (True, "markdown"), (True, "code"),
                     (True, "markdown"), (False, "markdown"), (False, "code")]


def test_japanese_text_counts_characters_and_the_latin_words_among_them():
    assert bench_reading.count("## 発展：`is_causal` の**ヒント**", "ja") == (1, 7)
    assert bench_reading.count("See [chapter 7](07_x.ipynb), `mask`.", "en") == (4, 0)
    nb = notebook(("md", "## 発展：内側\n\n本文", {}), ("code", "x = 1", {}), ("md", "## まとめ", {}))
    assert [o for o, _, _ in bench_reading.sections(nb, "ja")] == [True, True, False]


def test_every_chapter_has_a_main_path_and_bad_rates_are_refused(capsys):
    for edition in series.EDITIONS:
        path = series.chapters(edition)[7]
        parts = bench_reading.estimate(path, edition, 200, 500, 20)
        assert parts["main"].minutes > 0 and parts["optional"].code_cells > 0, "chapter 7 has an optional part"
    with pytest.raises(SystemExit) as exited:
        bench_reading.main(["--words-per-minute", "0"])
    assert exited.value.code == 2 and "--words-per-minute must be > 0" in capsys.readouterr().err
