"""Build the Japanese edition (notebooks/ja/) from the English chapters and the Japanese translations.

Each notebooks/ja/NN_*.ipynb has the same cells as notebooks/NN_*.ipynb, in the same order, with the same ids:
- code cells are copied from the English chapter, with their outputs (so the stored outputs are identical);
- markdown cells hold the Japanese text. Each records, in metadata["translated_from"], a hash of the English
  text it translates; tests/test_japanese_edition.py fails, naming the cell, when the English text changes
  and the translation does not;
- the launch-badge cell (id "colab-badge") is made by tools/links.py for the Japanese notebook's own path.

Usage:
    python -m tools.ja_sync                      # rebuild every Japanese chapter from the English one
    python -m tools.ja_sync --add DIR            # ... taking new translations from DIR/<stem>.json
                                                 #     ({cell id: Japanese markdown}), e.g. after an English edit
A markdown cell with no Japanese text yet keeps the English text and no hash, so the test lists it.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path

import nbformat

from tools import links
from tools.dev import ROOT

ENGLISH = ROOT / "notebooks"
JAPANESE = ENGLISH / "ja"
BADGE_ID = links.BADGE_ID
HASH_KEY = "translated_from"


def english_hash(source: str) -> str:
    """Short, stable fingerprint of an English markdown cell's text."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def chapters() -> list[Path]:
    return sorted(ENGLISH.glob("[0-9][0-9]_*.ipynb"))


def badge_for(path: Path) -> str:
    return links.badge_source(links.relative(path))


def build(english_path: Path, new_text: dict[str, str]) -> nbformat.NotebookNode:
    """The Japanese notebook for english_path: English code cells, Japanese markdown (old or new)."""
    english = nbformat.read(english_path, as_version=4)
    ja_path = JAPANESE / english_path.name
    old = {}
    if ja_path.exists():
        old = {c.id: c for c in nbformat.read(ja_path, as_version=4).cells if c.cell_type == "markdown"}
    ja = copy.deepcopy(english)
    for cell in ja.cells:
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
    JAPANESE.mkdir(exist_ok=True)
    for path in chapters():
        new_text = {}
        if args.add and (args.add / f"{path.stem}.json").exists():
            new_text = json.loads((args.add / f"{path.stem}.json").read_text(encoding="utf-8"))
        ja = build(path, new_text)
        target = JAPANESE / path.name
        text = nbformat.writes(ja) + "\n"
        changed = not target.exists() or target.read_text(encoding="utf-8") != text
        if changed:
            target.write_text(text, encoding="utf-8")
        print(f"{target.relative_to(ROOT)}: {'updated' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
