"""Each chapter's reading time, estimated from its text: the main path and the optional sections apart, both editions.

Run: .venv/bin/python benchmarks/bench_reading.py [NN ...] [--edition en|ja] [--json]
     (default: every chapter of both editions; --map prints the rounded minutes chapter 0's map shows)
     .venv/bin/python benchmarks/bench_reading.py --write-map   (writes them into chapter 0's map, both editions,
                                                                and docs/teaching.md's "est." and its range)

An estimate, not a timed reading. One cost model for both editions:
- prose: 170 English words a minute; in the Japanese edition, 510 Japanese characters (kana, kanji, full-width
  punctuation) a minute, and the Latin words among them (code names, numbers) at the English rate. A word is a
  run of characters between spaces once the markdown markup (link targets, HTML tags, emphasis, table rules) is
  removed; fenced code in a markdown cell counts as code.
- code: 20 non-empty lines a minute (reading the lines and running them), in code cells and in fenced blocks;
- 3 minutes per explorer (a code cell that calls a `..._explorer(`, helpers.chapters' EXPLORERS);
- 5 minutes per exercise (a hidden solution run through its check: a call of `.solution(`).
Left out: the launch badge and the Colab set-up cell, and the markdown cells that hold a hidden solution
(`<details>`). The English rates are the ones that best match the readings of chapters 0-10 a learner timed
(docs/teaching.md gives the comparison). No Japanese reading was timed per chapter: 510 characters a minute is the
English rate times 3.0, the Japanese characters the Japanese edition spends on each English word it translates
(over the whole series: its Japanese characters / (the English words - the Latin words it keeps), checked by
tests/test_bench_reading.py), so that the same text costs the same minutes in both editions.

Sections: a heading "Optional: ..." (English) or "発展：..." (Japanese) at level L starts an optional section,
which runs to the next heading of level <= L (tests/test_optional_sections.py enforces where they sit);
everything else, the exercises and the summary included, is the main path. A markdown cell may hold several
headings; its text is split at each.
The figures written in chapter 0's map and docs/teaching.md's "est." are this script's (tests/test_bench_reading.py).
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
from tools import links, series  # noqa: E402

WORDS_PER_MINUTE = 170
JA_CHARS_PER_MINUTE = 510
LINES_PER_MINUTE = 20
MINUTES_PER_EXPLORER = 3
MINUTES_PER_EXERCISE = 5
RATES = (f"prose at {WORDS_PER_MINUTE} English words or {JA_CHARS_PER_MINUTE} Japanese characters a minute, code at "
         f"{LINES_PER_MINUTE} lines a minute, {MINUTES_PER_EXPLORER} min per explorer, {MINUTES_PER_EXERCISE} per "
         "exercise")
FENCE = re.compile(r"^\s*(```|~~~)")
JAPANESE = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
EXPLORER = re.compile(r"\b\w+_explorer\(")
SKIPPED_CELLS = {links.BADGE_ID, links.SETUP_ID}


@dataclass
class Part:
    """What one part of a chapter (its main path, or its optional sections) holds, and how long it takes."""
    words: int = 0        # English words (in Japanese text: the Latin words among the Japanese)
    chars: int = 0        # Japanese characters
    code_lines: int = 0
    explorers: int = 0
    exercises: int = 0
    minutes: float = 0.0


def plain(markdown: str) -> str:
    """Markdown as it reads: link targets, images, HTML tags, emphasis and table rules removed."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", markdown)             # images
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)                # [text](target) -> text
    text = re.sub(r"<[^>]+>", " ", text)                                # HTML tags (the text inside stays)
    text = re.sub(r"^\s*\|?[\s:|-]+\|[\s:|-]*$", " ", text, flags=re.M)  # table rules |---|---|
    return re.sub(r"[*`|>#]", " ", text)                                # (a _ is part of a name)


def count(markdown: str, edition: str) -> tuple[int, int]:
    """(words, Japanese characters) of a markdown text without fenced code: in Japanese, the Japanese characters
    are counted and the Latin words left among them are counted as words."""
    if edition not in series.EDITIONS:
        raise ValueError(f"edition must be one of {series.EDITIONS}, got {edition!r}")
    text, chars = plain(markdown), 0
    if edition == "ja":
        chars = len(JAPANESE.findall(text))
        text = JAPANESE.sub(" ", text)
    return len([w for w in text.split() if re.search(r"\w", w)]), chars


def lines_of(code: str) -> int:
    return len([line for line in code.splitlines() if line.strip()])


def blocks(markdown: str) -> list[tuple[str, str]]:
    """A markdown cell's text as ("markdown" or "fenced", text) blocks in order, split at its fences and at its
    headings: a "markdown" block holds at most one heading, on its first line."""
    found: list[tuple[str, str]] = []
    kind, current = "markdown", []
    for line in markdown.splitlines():
        fence = FENCE.match(line)
        if fence or (kind == "markdown" and series.HEADING.match(line)):
            if current:
                found.append((kind, "\n".join(current)))
            current = []
            if fence:
                kind = "fenced" if kind == "markdown" else "markdown"
                continue
        current.append(line)
    if current:
        found.append((kind, "\n".join(current)))
    return found


def sections(nb: nbformat.NotebookNode, edition: str) -> list[tuple[bool, str, str]]:
    """The chapter as (optional?, kind, text) pieces in order, kind "markdown", "fenced" (code in a markdown
    cell) or "code": each markdown cell split into its blocks; the cells left out (see the module docstring) and
    the text of hidden solutions are not there."""
    if edition not in series.EDITIONS:
        raise ValueError(f"edition must be one of {series.EDITIONS}, got {edition!r}")
    pieces: list[tuple[bool, str, str]] = []
    optional_level: int | None = None   # the level of the "Optional" heading we are under, if any
    for cell in nb.cells:
        if cell.get("id") in SKIPPED_CELLS or not cell.source.strip():
            continue
        if cell.cell_type == "code":
            pieces.append((optional_level is not None, "code", cell.source))
            continue
        if cell.cell_type != "markdown":
            continue
        hidden = "<details>" in cell.source   # a hidden solution: its headings count, its text does not
        for kind, text in blocks(cell.source):
            heading = series.HEADING.match(text.split("\n", 1)[0]) if kind == "markdown" else None
            if heading:
                level, title = len(heading[1]), heading[2]
                if optional_level is not None and level <= optional_level:
                    optional_level = None
                if optional_level is None and series.is_optional_heading(title, edition):
                    optional_level = level
            if not hidden:
                pieces.append((optional_level is not None, kind, text))
    return pieces


def estimate(path: Path, edition: str | None = None) -> dict[str, Part]:
    """The chapter's main path and optional sections ({"main": Part, "optional": Part}): what they hold and their
    minutes. The edition is the notebook's own unless given."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must be a chapter notebook, got {path}")
    edition = edition or series.edition_of(path)
    parts = {"main": Part(), "optional": Part()}
    for optional, kind, text in sections(nbformat.read(path, as_version=4), edition):
        part = parts["optional" if optional else "main"]
        if kind == "markdown":
            words, chars = count(text, edition)
            part.words += words
            part.chars += chars
        else:
            part.code_lines += lines_of(text)
        if kind == "code":
            part.explorers += len(EXPLORER.findall(text))
            part.exercises += text.count(".solution(")
    for part in parts.values():
        part.minutes = (part.words / WORDS_PER_MINUTE + part.chars / JA_CHARS_PER_MINUTE
                        + part.code_lines / LINES_PER_MINUTE + MINUTES_PER_EXPLORER * part.explorers
                        + MINUTES_PER_EXERCISE * part.exercises)
    return parts


def minutes(path: Path) -> tuple[int, int]:
    """(main path, optional sections) of a chapter in whole minutes, as chapter 0's map and docs/teaching.md show
    them."""
    parts = estimate(path)
    return round(parts["main"].minutes), round(parts["optional"].minutes)


def part_totals(edition: str) -> list[tuple[list[Path], int, int]]:
    """Each part of the series (tools.series.parts) with its main-path and optional minutes: the sums of its
    chapters' rounded minutes, as chapter 0's map adds them up."""
    totals = []
    for chapters in series.parts(series.chapters(edition)):
        figures = [minutes(path) for path in chapters]
        totals.append((chapters, sum(m for m, _ in figures), sum(o for _, o in figures)))
    return totals


def table(edition: str, rows: dict[str, dict[str, Part]]) -> str:
    unit = "words" if edition == "en" else "chars+words"
    lines = [f"{edition}: chapter".ljust(40) + f"{'main ' + unit:>16s} {'lines':>5s} {'ex':>3s} {'min':>5s}   "
             f"{'optional ' + unit:>20s} {'lines':>5s} {'ex':>3s} {'min':>5s}"]

    def amount(part: Part) -> str:
        return f"{part.words}" if edition == "en" else f"{part.chars}+{part.words}"

    for name, parts in rows.items():
        main, extra = parts["main"], parts["optional"]
        lines.append(f"{name[:39]:40s}{amount(main):>16s} {main.code_lines:5d} {main.exercises:3d} "
                     f"{main.minutes:5.1f}   {amount(extra):>20s} {extra.code_lines:5d} {extra.exercises:3d} "
                     f"{extra.minutes:5.1f}")
    main_total = sum(p["main"].minutes for p in rows.values())
    extra_total = sum(p["optional"].minutes for p in rows.values())
    lines.append(f"{'total':40s}{'':16s} {'':5s} {'':3s} {main_total:5.1f}   {'':20s} {'':5s} {'':3s} "
                 f"{extra_total:5.1f}")
    lines.append(f"main paths: {main_total / 60:.1f} h; with the optional sections: "
                 f"{(main_total + extra_total) / 60:.1f} h")
    return "\n".join(lines)


def chapter_map(edition: str) -> str:
    """The rounded minutes chapter 0's map of the edition shows, chapter by chapter and part by part."""
    lines = [f"{edition}: chapter 0's map (main path / optional, min)"]
    for chapters, main_total, extra_total in part_totals(edition):
        for path in chapters:
            main, extra = minutes(path)
            lines.append(f"  {series.number(path)}  {main:3d} / {extra:3d}")
        lines.append(f"  chapters {series.number(chapters[0])}-{series.number(chapters[-1])}: "
                     f"{main_total} / {extra_total}")
    return "\n".join(lines)


MAP_ROW = re.compile(r"^(\| (\d+) \|.*\| )([\d–]+) \| ([\d–]+) \|$", re.M)
MAP_TOTAL = re.compile(r"^(\| \| \*\*[^|]+\*\* \| \| )\*\*([\d–]+)\*\* \| \*\*([\d–]+)\*\* \|$", re.M)
MAP_HOURS = {"en": re.compile(r"(\*\*About )([\d.]+)( hours\*\*: the main paths of chapters 0–5 \(an estimated )(\d+)"),
             "ja": re.compile(r"(\*\*約 )([\d.]+)( 時間で\*\*：第 0〜5 章の本筋（推定 )(\d+)")}


def _shown(n: int) -> str:
    return str(n) if n else "–"


def hours(minutes: int) -> float:
    """The hours chapter 0's map gives a path of `minutes`: to one decimal (half hours made 194 and 197 minutes
    read 3.0 and 3.5 hours in the two editions)."""
    return round(minutes / 60, 1)


def mapped(text: str, edition: str) -> str:
    """Chapter 0's map text with this script's minutes: each chapter's row, each part's total, the chapters 0-5
    path's hours."""
    figures = {series.number(path): minutes(path) for path in series.chapters(edition)}
    totals = [(m, o) for _, m, o in part_totals(edition)]
    part_1 = totals[0][0]

    def row(match: re.Match) -> str:
        main, extra = figures[f"{int(match[2]):02d}"]
        return f"{match[1]}{_shown(main)} | {_shown(extra)} |"

    def total(match: re.Match) -> str:
        main, extra = totals.pop(0)
        return f"{match[1]}**{_shown(main)}** | **{_shown(extra)}** |"

    text = MAP_TOTAL.sub(total, MAP_ROW.sub(row, text))
    return MAP_HOURS[edition].sub(lambda h: f"{h[1]}{hours(part_1)}{h[3]}{part_1}", text)


def write_map() -> list[Path]:
    """Write mapped() into chapter 0's map (cell c02) in both editions; the Japanese cell's translation hash
    follows the English cell (only the figures change). Returns the notebooks it changed (a markdown cell: no
    output changes)."""
    from tools.ja_sync import HASH_KEY, english_hash

    changed, stamp = [], {}
    for edition in series.EDITIONS:                          # English first: the Japanese hash is of its text
        start = series.chapters(edition)[0]
        notebook = nbformat.read(start, as_version=4)
        cell = next(c for c in notebook.cells if c.get("id") == "c02")
        text = mapped(cell.source, edition)
        if text != cell.source or any(cell.metadata.get(k) != v for k, v in stamp.items()):
            cell.source = text
            cell.metadata.update(stamp)
            start.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
            changed.append(start)
        stamp = {HASH_KEY: english_hash(text)}               # what the Japanese cell translates
    return changed


TEACHING = series.ROOT / "docs" / "teaching.md"
TEACHING_ROW = re.compile(r"^(\| (\d+)\. [^|]+\| \d+ \| \d+ \| )([^|]*)(\|)", re.M)   # a row's "a learner's minutes"
TEACHING_RANGE = re.compile(r"lands within (-?\d+) % to \+(\d+) % of them")
TEACHING_MEAN = re.compile(r"(\d+) % off on average")


def timed_offsets(text: str) -> dict[str, int]:
    """docs/teaching.md's timed readings (chapters 0-6 and 8-10: the first number of a row's "a learner's
    minutes") against this script's whole-chapter estimate (main path plus optional sections, the text that was
    timed), in per cent, by chapter."""
    by_number = {series.number(path): path for path in series.chapters("en")}
    off = {}
    for number, cell in ((f"{int(m[2]):02d}", m[3]) for m in TEACHING_ROW.finditer(text)):
        timed = re.match(r"\s*(\d+)\b", cell)
        if int(number) <= 10 and number != "07" and timed:
            parts = estimate(by_number[number])
            off[number] = round(100 * ((parts["main"].minutes + parts["optional"].minutes) / int(timed[1]) - 1))
    return off


def write_teaching() -> bool:
    """docs/teaching.md's "est. N" per chapter, and the range and mean of timed_offsets(), as
    tests/test_teaching.py checks them. Returns whether the page changed."""
    by_number = {series.number(path): path for path in series.chapters("en")}
    text = TEACHING.read_text(encoding="utf-8")

    def row(match: re.Match) -> str:
        n = f"{int(match[2]):02d}"
        cell = re.sub(r"\best\. \d+\b", f"est. {minutes(by_number[n])[0]}", match[3])
        return f"{match[1]}{cell}{match[4]}"

    new = TEACHING_ROW.sub(row, text)
    off = list(timed_offsets(new).values())
    if off:
        new = TEACHING_RANGE.sub(f"lands within {min(off)} % to +{max(off)} % of them", new)
        new = TEACHING_MEAN.sub(f"{round(sum(abs(e) for e in off) / len(off))} % off on average", new)
    if new != text:
        TEACHING.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", metavar="NN", help="chapter numbers (default: every chapter)")
    parser.add_argument("--edition", choices=series.EDITIONS, action="append",
                        help="an edition (repeat for both; default both)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    parser.add_argument("--map", action="store_true", help="print the rounded minutes of chapter 0's map")
    parser.add_argument("--write-map", action="store_true", help="write them into chapter 0's map, both editions")
    args = parser.parse_args(argv)
    editions = args.edition or list(series.EDITIONS)
    if args.write_map:
        written = [*write_map(), *([TEACHING] if write_teaching() else [])]
        print("\n".join(f"wrote {path.relative_to(series.ROOT)}" for path in written) or "all up to date")
        return 0
    if args.map:
        print("\n\n".join(chapter_map(edition) for edition in editions))
        return 0
    known = {series.number(path) for path in series.chapters("en")}
    unknown = sorted(set(args.chapters) - known)
    if unknown:
        parser.error(f"no chapter {unknown}; the chapters are {sorted(known)}")
    found = {edition: {path.stem: estimate(path, edition) for path in series.chapters(edition)
                       if not args.chapters or series.number(path) in args.chapters} for edition in editions}
    if args.json:
        print(json.dumps({e: {n: {k: asdict(p) for k, p in parts.items()} for n, parts in rows.items()}
                          for e, rows in found.items()}, indent=1, ensure_ascii=False))
        return 0
    print(f"an estimate: {RATES}")
    for edition, rows in found.items():
        print()
        print(table(edition, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
