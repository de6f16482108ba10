"""The Japanese edition (notebooks/ja/) stays in step with the English chapters, cell by cell.

For every English chapter, its Japanese twin must exist and have the same cells in the same order, with the
same types and ids; code cells equal to the English ones ignoring comments (compared as token streams);
identical stored outputs; and every markdown cell translated from the English text as it is now (its
metadata["translated_from"] is the hash of that text; tools/ja_sync.py explains the workflow).
This is why the Japanese notebooks are not run through nbval again: their code and outputs are the English
ones, which nbval checks (see README.ja.md for the timings both ways).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import nbformat
import pytest

from tools import ja_sync

ROOT = ja_sync.ROOT

CHAPTERS = ja_sync.chapters()
ONLY_CODE_OR_LINKS = re.compile(r"^(\s|`[^`]*`|!?\[[^\]]*\]\([^)]*\)|[·|←→#*-])*$")


def code_tokens(source: str) -> list[tuple[int, str]]:
    """The code's tokens without comments and layout-only tokens (a Japanese comment is allowed)."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]  # magics
    return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
            if t.type not in skip]


def outputs(cell: nbformat.NotebookNode) -> list[dict]:
    return [dict(o) for o in cell.get("outputs", [])]


@pytest.mark.parametrize("english_path", CHAPTERS, ids=lambda p: p.stem)
def test_japanese_chapter_matches_the_english_one(english_path: Path):
    ja_path = ja_sync.JAPANESE / english_path.name
    assert ja_path.exists(), (f"{ja_path.relative_to(ROOT)} is missing: translate {english_path.name} "
                              "(python -m tools.ja_sync)")
    english = nbformat.read(english_path, as_version=4)
    ja = nbformat.read(ja_path, as_version=4)
    name = ja_path.relative_to(ROOT)
    layout = [(c.cell_type, c.id) for c in english.cells]
    assert [(c.cell_type, c.id) for c in ja.cells] == layout, (
        f"{name}: cells differ from {english_path.name} in number, order, type or id; run python -m tools.ja_sync")
    problems = []
    for number, (en, jp) in enumerate(zip(english.cells, ja.cells, strict=True)):
        where = f"{name}, cell {number} (id {en.id})"
        if en.cell_type == "code":
            if code_tokens(en.source) != code_tokens(jp.source):
                problems.append(f"{where}: code differs from the English cell; run python -m tools.ja_sync")
            if outputs(en) != outputs(jp):
                problems.append(f"{where}: stored outputs differ from the English cell; run python -m tools.ja_sync")
        elif en.cell_type == "markdown" and en.id != ja_sync.BADGE_ID:
            recorded = jp.metadata.get(ja_sync.HASH_KEY)
            if recorded is None:
                problems.append(f"{where}: not translated yet")
            elif recorded != ja_sync.english_hash(en.source):
                problems.append(f"{where}: the English text changed since it was translated; update the "
                                "Japanese text, then run python -m tools.ja_sync --add")
            elif jp.source == en.source and not ONLY_CODE_OR_LINKS.match(en.source):
                problems.append(f"{where}: left in English")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("english_path", CHAPTERS, ids=lambda p: p.stem)
def test_japanese_badges_open_the_japanese_chapter(english_path: Path):
    ja_path = ja_sync.JAPANESE / english_path.name
    badges = [c for c in nbformat.read(ja_path, as_version=4).cells if c.id == ja_sync.BADGE_ID]
    assert [c.source for c in badges] == [ja_sync.badge_for(ja_path)]
    assert "notebooks/ja/" in badges[0].source


def test_glossary_cheatsheet_and_readme_exist():
    for path in (ja_sync.JAPANESE / "glossary.md", ja_sync.JAPANESE / "cheatsheet.md", ROOT / "README.ja.md"):
        assert path.exists(), f"{path.relative_to(ROOT)} is missing"


def test_glossary_anchors_used_by_the_chapters_exist():
    """Every [term](glossary.md#anchor) link in the Japanese chapters points at a glossary heading."""
    glossary = (ja_sync.JAPANESE / "glossary.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', glossary))
    missing = set()
    for path in sorted(ja_sync.JAPANESE.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                missing |= {f"{path.name}: #{a}" for a in re.findall(r"glossary\.md#([\w-]+)", cell.source)
                            if a not in anchors}
    assert not missing, sorted(missing)
