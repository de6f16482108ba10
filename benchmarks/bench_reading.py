"""Each chapter's reading time, estimated from its text: the main path and the optional sections apart.

Run: .venv/bin/python benchmarks/bench_reading.py [--edition en|ja] [--words-per-minute 200]
     [--chars-per-minute 500] [--seconds-per-code-cell 20] [--json]

Rates (each can be changed on the command line):
- English prose: 200 words per minute; a word is a run of characters between spaces, after the markdown markup
  (link targets, HTML tags, emphasis marks, table rules) is removed.
- Japanese prose: 500 characters per minute for Japanese characters (kana, kanji, full-width punctuation); the
  Latin words among them (code names, numbers, English terms) at the English rate, 200 words per minute.
- Every code cell a reader sees: 20 s (reading the code and its printed output). Cells hidden in JupyterLab (the
  exercises' solution runs) and the Colab set-up cell (id "colab-setup", a no-op anywhere else) are not counted.
Sections: a heading "Optional: ..." (English) or 「発展：...」 (Japanese) at level L starts an optional section,
which runs to the next heading of level <= L; everything else, the exercises and summary included, is the main
path. A cell after a heading belongs to that heading's section; a markdown cell may hold several headings, and
its text is split at each.
This is an estimate, not a measurement of a reader: it counts text, and assumes every reader reads at one rate.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script in benchmarks/: the repository's tools/
from tools import series  # noqa: E402

WORDS_PER_MINUTE = 200.0
CHARS_PER_MINUTE = 500.0
SECONDS_PER_CODE_CELL = 20.0
OPTIONAL = {"en": re.compile(r"^Optional\s*:"), "ja": re.compile(r"^発展\s*：")}
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
JAPANESE = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
SKIPPED_CELLS = {"colab-setup"}


@dataclass
class Part:
    """What one part of a chapter (its main path, or its optional sections) holds, and how long it takes."""
    words: int = 0        # English words (in Japanese text: the Latin words among the Japanese)
    chars: int = 0        # Japanese characters
    code_cells: int = 0
    minutes: float = 0.0


def plain(markdown: str) -> str:
    """Markdown as it reads: link targets, images, HTML tags, emphasis and table rules removed."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", markdown)             # images
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)                # [text](target) -> text
    text = re.sub(r"<[^>]+>", " ", text)                                # HTML tags (the text inside stays)
    text = re.sub(r"^\s*\|?[\s:|-]+\|[\s:|-]*$", " ", text, flags=re.M)  # table rules |---|---|
    return re.sub(r"[*`|>#]", " ", text)                                # (a _ is part of a name)


def count(markdown: str, edition: str) -> tuple[int, int]:
    """(words, Japanese characters) of a markdown text: in Japanese, the Japanese characters are counted and the
    Latin words left among them are counted as words."""
    text = plain(markdown)
    if edition == "ja":
        chars = len(JAPANESE.findall(text))
        text = JAPANESE.sub(" ", text)
        return len([w for w in text.split() if re.search(r"\w", w)]), chars
    return len([w for w in text.split() if re.search(r"\w", w)]), 0


def sections(nb: nbformat.NotebookNode, edition: str) -> list[tuple[bool, str, str]]:
    """The chapter as (optional?, kind, text) pieces in order: each markdown cell split at its headings, each
    code cell a reader sees whole."""
    pieces: list[tuple[bool, str, str]] = []
    optional_level: int | None = None   # the level of the "Optional" heading we are under, if any
    for cell in nb.cells:
        if cell.cell_type == "code":
            hidden = cell.metadata.get("jupyter", {}).get("source_hidden", False)
            if not hidden and cell.get("id") not in SKIPPED_CELLS and cell.source.strip():
                pieces.append((optional_level is not None, "code", cell.source))
            continue
        if cell.cell_type != "markdown":
            continue
        current: list[str] = []
        fenced = False
        for line in cell.source.splitlines():
            if FENCE.match(line):
                fenced = not fenced
            heading = None if fenced else HEADING.match(line)
            if heading:
                if current:
                    pieces.append((optional_level is not None, "markdown", "\n".join(current)))
                current = []
                level, title = len(heading[1]), heading[2]
                if optional_level is not None and level <= optional_level:
                    optional_level = None
                if optional_level is None and OPTIONAL[edition].match(re.sub(r"[*_`]", "", title)):
                    optional_level = level
            current.append(line)
        if current:
            pieces.append((optional_level is not None, "markdown", "\n".join(current)))
    return pieces


def estimate(path: Path, edition: str, wpm: float, cpm: float, per_cell: float) -> dict[str, Part]:
    """The chapter's main path and optional sections: their words, characters, code cells and minutes."""
    parts = {"main": Part(), "optional": Part()}
    for optional, kind, text in sections(nbformat.read(path, as_version=4), edition):
        part = parts["optional" if optional else "main"]
        if kind == "code":
            part.code_cells += 1
        else:
            words, chars = count(text, edition)
            part.words += words
            part.chars += chars
    for part in parts.values():
        part.minutes = part.words / wpm + part.chars / cpm + part.code_cells * per_cell / 60
    return parts


def table(edition: str, rows: dict[str, dict[str, Part]]) -> str:
    unit = "words" if edition == "en" else "chars+words"
    lines = [f"{edition}: chapter".ljust(44) + f"{'main ' + unit:>18s} {'cells':>6s} {'min':>6s}   "
             f"{'optional ' + unit:>22s} {'cells':>6s} {'min':>6s}"]

    def amount(part: Part) -> str:
        return f"{part.words}" if edition == "en" else f"{part.chars}+{part.words}"

    for name, parts in rows.items():
        main, extra = parts["main"], parts["optional"]
        lines.append(f"{name[:43]:44s}{amount(main):>18s} {main.code_cells:6d} {main.minutes:6.1f}   "
                     f"{amount(extra):>22s} {extra.code_cells:6d} {extra.minutes:6.1f}")
    main_total = sum(p["main"].minutes for p in rows.values())
    extra_total = sum(p["optional"].minutes for p in rows.values())
    first_part = series.parts([Path(f"{name}.ipynb") for name in rows])[0]
    two_hours = sum(rows[p.stem]["main"].minutes for p in first_part)
    lines.append(f"{'total':44s}{'':18s} {'':6s} {main_total:6.1f}   {'':22s} {'':6s} {extra_total:6.1f}")
    lines.append(f"main paths: {main_total / 60:.1f} h; with the optional sections: "
                 f"{(main_total + extra_total) / 60:.1f} h; part 1's main paths (chapters "
                 f"{series.number(first_part[0])}-{series.number(first_part[-1])}): {two_hours:.0f} min")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edition", choices=series.EDITIONS, action="append",
                        help="an edition (repeat for both; default both)")
    parser.add_argument("--words-per-minute", type=float, default=WORDS_PER_MINUTE)
    parser.add_argument("--chars-per-minute", type=float, default=CHARS_PER_MINUTE)
    parser.add_argument("--seconds-per-code-cell", type=float, default=SECONDS_PER_CODE_CELL)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    args = parser.parse_args(argv)
    for name in ("words_per_minute", "chars_per_minute"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if args.seconds_per_code_cell < 0:
        parser.error(f"--seconds-per-code-cell must be >= 0, got {args.seconds_per_code_cell}")
    found = {}
    for edition in args.edition or series.EDITIONS:
        found[edition] = {path.stem: estimate(path, edition, args.words_per_minute, args.chars_per_minute,
                                              args.seconds_per_code_cell) for path in series.chapters(edition)}
    if args.json:
        print(json.dumps({e: {n: {k: asdict(p) for k, p in parts.items()} for n, parts in rows.items()}
                          for e, rows in found.items()}, indent=1, ensure_ascii=False))
        return 0
    print(f"rates: {args.words_per_minute:g} English words/min, {args.chars_per_minute:g} Japanese characters/min "
          f"(Latin words in Japanese text at the English rate), {args.seconds_per_code_cell:g} s per code cell")
    for edition, rows in found.items():
        print()
        print(table(edition, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
