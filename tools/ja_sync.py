"""Build the Japanese edition (notebooks/ja/) from the English chapters and the Japanese translations.

Each notebooks/ja/NN_*.ipynb has the same cells as notebooks/NN_*.ipynb, in the same order, with the same ids:
- code cells hold the English code. Only two things may differ, and the test compares the rest as tokens:
  comments, which may be in Japanese (a Japanese comment, e.g. `# ここにコードを書く`, is kept while the code
  around it is unchanged), and the set-up cell (id "colab-setup", made by tools/links.py), which sets the
  language the helpers speak, "ja" (helpers.language);
- their outputs are the Japanese edition's own: the chapter is run (python -m tools.execute_notebooks
  notebooks/ja/NN_*.ipynb) and nbval checks it like an English one, because a hint, a check's verdict or an
  explorer's summary is printed in Japanese there. A code cell that is new or whose code changed gets the
  English outputs until the chapter is run again (nbval then says so);
- markdown cells hold the Japanese text. Each records, in metadata["translated_from"], a hash of the English
  text it translates; tests/test_japanese_edition.py fails, naming the cell, when the English text changes
  and the translation does not;
- the launch-badge cell (id "colab-badge") is made by tools/links.py for the Japanese notebook's own path.

Usage:
    python -m tools.ja_sync                      # rebuild every Japanese chapter from the English one
    python -m tools.ja_sync --add DIR            # ... taking new translations from DIR/<stem>.json
                                                 #     ({cell id: Japanese markdown, or a code cell's source
                                                 #     with Japanese comments}), e.g. after an English edit
then run the Japanese chapters that changed (tools.execute_notebooks).
A markdown cell with no Japanese text yet keeps the English text and no hash, so the test lists it.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import sys
import tokenize
from pathlib import Path

import nbformat

from tools import links, series
from tools.dev import ROOT

SETUP_ID = links.SETUP_ID

BADGE_ID = links.BADGE_ID
HASH_KEY = "translated_from"


def english_hash(source: str) -> str:
    """Short, stable fingerprint of an English markdown cell's text."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def badge_for(path: Path) -> str:
    return links.badge_source(links.relative(path))


def code_tokens(source: str) -> list[tuple[int, str]]:
    """The code's tokens without comments and layout-only tokens: equal for two cells that differ only in
    their comments (IPython magics, lines starting with % or !, are left out)."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
            if t.type not in skip]


def build(english_path: Path, new_text: dict[str, str]) -> nbformat.NotebookNode:
    """The Japanese notebook for english_path: English code cells, Japanese markdown (old or new)."""
    english = nbformat.read(english_path, as_version=4)
    ja_path = series.twin(english_path)
    old = {}
    ja = copy.deepcopy(english)
    if ja_path.exists():
        before = nbformat.read(ja_path, as_version=4)
        old = {c.id: c for c in before.cells}
        ja.metadata = before.metadata  # its own run's (the widgets' state)
    for cell in ja.cells:
        if cell.cell_type == "code":
            if cell.id == SETUP_ID:
                cell.source = links.setup_source("ja")
                if cell.id in old:
                    cell.execution_count = old[cell.id].execution_count
                continue
            given = new_text.get(cell.id)
            if given is not None and code_tokens(given) != code_tokens(cell.source):
                raise ValueError(f"{english_path.name}, cell {cell.id}: the Japanese code may differ from the English "
                                 "only in its comments")
            before = old.get(cell.id)
            unchanged = (before is not None and before.cell_type == "code"
                         and code_tokens(before.source) == code_tokens(cell.source))
            if unchanged:  # keep the Japanese edition's own outputs, and its Japanese comments if it has any
                cell.outputs, cell.execution_count = before.outputs, before.execution_count
                if any(ord(ch) > 0x2E7F for ch in before.source):
                    cell.source = before.source
            if given is not None:
                cell.source = given
            continue
        if cell.cell_type != "markdown":
            continue
        if cell.id == BADGE_ID:
            cell.source = badge_for(ja_path)
            continue
        fingerprint = english_hash(cell.source)
        if cell.id in new_text:
            cell.source = new_text[cell.id]
            cell.metadata[HASH_KEY] = fingerprint
        elif cell.id in old and HASH_KEY in old[cell.id].metadata:
            cell.source = old[cell.id].source
            cell.metadata[HASH_KEY] = old[cell.id].metadata[HASH_KEY]  # the test compares it with fingerprint
    return ja


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--add", type=Path, help="folder of <stem>.json translations to take in")
    args = parser.parse_args(argv)
    series.notebooks("ja").mkdir(exist_ok=True)
    for path in series.chapters("en"):
        new_text = {}
        if args.add and (args.add / f"{path.stem}.json").exists():
            new_text = json.loads((args.add / f"{path.stem}.json").read_text(encoding="utf-8"))
        ja = build(path, new_text)
        target = series.twin(path)
        text = nbformat.writes(ja) + "\n"
        changed = not target.exists() or target.read_text(encoding="utf-8") != text
        if changed:
            target.write_text(text, encoding="utf-8")
        print(f"{target.relative_to(ROOT)}: {'updated' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
