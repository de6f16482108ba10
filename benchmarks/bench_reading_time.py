"""How long a chapter's main path takes a learner, estimated from the material. An estimate, not a timed reading.

Run: .venv/bin/python benchmarks/bench_reading_time.py [NN ...]   (default: every chapter)

For each English chapter, the main path is every cell outside its optional parts (a "### Optional: ..." heading up
to the next heading of its level or above) and outside its hidden solutions (<details>), the launch and set-up
cells left out. It counts:
- the prose: words of the markdown cells (fenced code in them counts as code),
- the code: non-empty lines of the code cells,
- the explorers (helpers.chapters.explorers) and the "Check yourself" exercises (calls of `.solution(`),
and estimates minutes = words / WORDS_PER_MINUTE + code lines / LINES_PER_MINUTE + MINUTES_PER_EXPLORER per
explorer + MINUTES_PER_EXERCISE per exercise: the rates of the estimates docs/teaching.md gave for chapters
16 and 17 (170 words a minute, 3 minutes of explorer, 5 per exercise; 20 lines of code a minute, reading and
running them). These are assumptions, stated so that the estimate can be checked against a timed reading:
docs/teaching.md prints it next to the readings of chapters 0-10 that a learner timed.
tests/test_teaching.py checks that every "est." figure in docs/teaching.md is this script's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script in benchmarks/: the repository's tools/ and helpers/
from tools import links, series  # noqa: E402

WORDS_PER_MINUTE = 170
LINES_PER_MINUTE = 20
MINUTES_PER_EXPLORER = 3
MINUTES_PER_EXERCISE = 5
HEADING = re.compile(r"^(#{1,6}) (.*)$", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def main_path(path: Path) -> list[nbformat.NotebookNode]:
    """The chapter's cells a learner goes through on its main path (see the module docstring)."""
    cells, optional_level = [], 0
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.get("id") in (links.BADGE_ID, links.SETUP_ID):
            continue
        if cell.cell_type == "markdown":
            for hashes, title in HEADING.findall(cell.source):
                level = len(hashes)
                if title.startswith("Optional"):
                    optional_level = optional_level or level
                elif optional_level and level <= optional_level:
                    optional_level = 0
            if "<details>" in cell.source:
                continue
        if not optional_level:
            cells.append(cell)
    return cells


def counts(path: Path) -> dict[str, int]:
    """words, code lines, explorers and exercises of the chapter's main path."""
    from helpers import chapters

    cells = main_path(path)
    words = lines = exercises = 0
    for cell in cells:
        if cell.cell_type == "markdown":
            fenced = FENCE.findall(cell.source)
            words += len(FENCE.sub(" ", cell.source).split())
            lines += sum(len([line for line in block.splitlines()[1:-1] if line.strip()]) for block in fenced)
        elif cell.cell_type == "code":
            lines += len([line for line in cell.source.splitlines() if line.strip()])
            exercises += cell.source.count(".solution(")
    return {"words": words, "lines": lines, "explorers": len(chapters.explorers(series.number(path))),
            "exercises": exercises}


def estimate(path: Path) -> int:
    """Minutes for the chapter's main path, rounded (see the module docstring for the rates)."""
    c = counts(path)
    return round(c["words"] / WORDS_PER_MINUTE + c["lines"] / LINES_PER_MINUTE
                 + MINUTES_PER_EXPLORER * c["explorers"] + MINUTES_PER_EXERCISE * c["exercises"])


def main(argv: list[str]) -> int:
    chosen = [path for path in series.chapters("en") if not argv or series.number(path) in argv]
    print(f"main path: prose at {WORDS_PER_MINUTE} words/min, code at {LINES_PER_MINUTE} lines/min, "
          f"{MINUTES_PER_EXPLORER} min per explorer, {MINUTES_PER_EXERCISE} per exercise (an estimate)")
    for path in chosen:
        c = counts(path)
        print(f"{path.stem:45s} {c['words']:5d} words {c['lines']:4d} lines {c['explorers']} explorers "
              f"{c['exercises']} exercises: {estimate(path):3d} min")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
