"""The house rule for optional sections, in every chapter of both editions (issue #39).

A markdown heading whose text starts with "Optional: " (English) or "発展：" (Japanese) at level L starts an
optional section; it runs until the next heading of level <= L. An optional section sits at the end of the step it
belongs to: from it up to the next level-2 heading (the next step, the explorer, the exercises or the summary) there
is only optional material (deeper headings, or further optional headings). An exercise (a cell calling a chapter's
`check_N`) inside an optional section says so: in its label, the markdown cell before it ("(optional)" /
「（発展）」), or by sitting directly under an optional heading. Every English optional heading has its Japanese twin
(the cell with the same id) with the same level, and the other way round.

`sections(notebook)` is the reading the tests use; `main_path(notebook)` keeps what a learner reads without the
optional parts (benchmarks and notes measure it in words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from tools import series

LABEL = {"en": "(optional)", "ja": "（発展）"}
EXERCISE = re.compile(r"\bch\d\d\.check_\d+\(")


@dataclass(frozen=True)
class Heading:
    cell: int        # the index of the markdown cell that holds it
    cell_id: str
    level: int
    text: str


def headings(cell_index: int, cell) -> list[Heading]:
    """The markdown headings of one cell, in order (lines inside fenced code blocks are code, not headings)."""
    if cell.cell_type != "markdown":
        return []
    found, fenced = [], False
    for line in cell.source.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else series.HEADING.match(line)
        if match:
            found.append(Heading(cell_index, cell.get("id", ""), len(match.group(1)), match.group(2)))
    return found


def is_optional(heading: Heading, edition: str) -> bool:
    return series.is_optional_heading(heading.text, edition)


def optional_flags(cells, edition: str) -> list[bool]:
    """For each cell: whether it lies in an optional section. A cell that opens with a heading belongs to that
    heading's section; any other cell to the section open before it."""
    flags, stack = [], []      # stack: (level, optional) of the open headings
    for i, cell in enumerate(cells):
        before = any(optional for _, optional in stack)
        for heading in headings(i, cell):
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            stack.append((heading.level, is_optional(heading, edition)))
            if cell.source.lstrip().startswith("#") and heading == headings(i, cell)[0]:
                before = any(optional for _, optional in stack)
        flags.append(before)
    return flags


def main_path(path: Path) -> list:
    """The chapter's cells a learner reads on the main path: every cell outside the optional sections."""
    edition = series.edition_of(path)
    cells = nbformat.read(path, as_version=4).cells
    return [cell for cell, optional in zip(cells, optional_flags(cells, edition), strict=True)
            if not optional]


def words(cells) -> int:
    """The whitespace-separated words of the markdown cells: the measure of a main path in the English edition."""
    return sum(len(cell.source.split()) for cell in cells if cell.cell_type == "markdown")


def misplaced(path: Path) -> list[str]:
    """Every breach of the rule in one chapter, each naming its cell."""
    return breaches(path.name, nbformat.read(path, as_version=4).cells, series.edition_of(path))


def breaches(name: str, cells, edition: str) -> list[str]:
    found = [h for i, c in enumerate(cells) for h in headings(i, c)]
    problems = []
    for n, heading in enumerate(found):
        if not is_optional(heading, edition):
            continue
        for later in found[n + 1:]:
            if later.level <= 2 < heading.level:
                break   # the next step (explorer, exercises, summary): the section ended its step
            if later.level <= heading.level and not is_optional(later, edition):
                where = "the chapter-end" if heading.level <= 2 else "the"
                problems.append(f"{name}: cell {later.cell_id!r} ({'#' * later.level} {later.text}) is "
                                f"main-path material after {where} optional section {heading.cell_id!r}")
                break
    flags = optional_flags(cells, edition)
    for i, cell in enumerate(cells):
        if not (flags[i] and cell.cell_type == "code" and EXERCISE.search(cell.source)):
            continue
        label = next((c for c in reversed(cells[:i]) if c.cell_type == "markdown"), None)
        above = next((h for j in range(i - 1, -1, -1) for h in reversed(headings(j, cells[j]))), None)
        if label is not None and LABEL[edition] in label.source.casefold():
            continue
        if above is not None and is_optional(above, edition):
            continue
        problems.append(f"{name}: the exercise checked in cell {cell.get('id')!r} is in an optional section, "
                        f"but neither its label {label.get('id') if label else None!r} says {LABEL[edition]!r} "
                        f"nor is the heading above it an optional one")
    return problems


@pytest.mark.parametrize("path", series.every_chapter(), ids=lambda p: f"{series.edition_of(p)}-{p.stem}")
def test_optional_sections_end_their_step_and_say_so_in_their_exercises(path: Path):
    assert misplaced(path) == []


@pytest.mark.parametrize("path", series.chapters("en"), ids=lambda p: p.stem)
def test_every_optional_heading_has_its_twin_in_the_other_edition(path: Path):
    def optional(p: Path) -> list[tuple[str, int]]:
        edition = series.edition_of(p)
        cells = nbformat.read(p, as_version=4).cells
        return [(h.cell_id, h.level) for i, c in enumerate(cells) for h in headings(i, c) if is_optional(h, edition)]

    assert optional(path) == optional(series.twin(path)), (
        f"{path.name}: the English 'Optional: ' headings and the Japanese '発展：' headings differ (cell id, level)")


def test_the_reading_of_sections():
    """A small notebook: a step, its optional section with an exercise, the next step."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Step 1: a"), nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_markdown_cell("### Optional: b\n\ntext"), nbformat.v4.new_code_cell("y = 2"),
                nbformat.v4.new_markdown_cell("#### deeper"), nbformat.v4.new_markdown_cell("**Exercise 1.** a"),
                nbformat.v4.new_code_cell("ch01.check_1(answer_1)"), nbformat.v4.new_markdown_cell("## Step 2: c")]
    assert optional_flags(nb.cells, "en") == [False, False, True, True, True, True, True, False]
    assert words(nb.cells) == 4 + 4 + 2 + 3 + 4
    assert [p.split(", but")[0] for p in breaches("x", nb.cells, "en")] == [
        f"x: the exercise checked in cell {nb.cells[6].id!r} is in an optional section"]
    nb.cells[5].source = "**Exercise 1 (optional).** a"
    assert breaches("x", nb.cells, "en") == []
    nb.cells.insert(7, nbformat.v4.new_markdown_cell("### more of step 1"))
    assert "is main-path material after the optional section" in breaches("x", nb.cells, "en")[0]
    nb.cells[0].source = "## Optional: at the end"
    assert "after the chapter-end optional section" in breaches("x", nb.cells, "en")[0]
    assert not is_optional(Heading(0, "a", 3, "Optionally: b"), "en")
    assert is_optional(Heading(0, "a", 3, "発展：b"), "ja")
    fenced = headings(0, nbformat.v4.new_markdown_cell("```python\n# a comment\n```\n### Optional: x"))
    assert [(h.level, h.text) for h in fenced] == [(3, "Optional: x")]
