"""The series' layout: the ONE place that says where its editions, chapters and their files are.

- Editions (EDITIONS): English ("en") and Japanese ("ja"). An edition's files sit in a base folder for English and
  in its ja/ sub-folder for Japanese (edition_folder): the chapters in notebooks/ and notebooks/ja/, the learners'
  copies in my-notebooks/ and my-notebooks/ja/, the decks in build/slides/ and build/slides/ja/.
- Chapters: the notebooks named NN_<stem>.ipynb in an edition's folder, in order (chapters); both editions have
  the same chapters under the same names, so a chapter's twin is the file of that name in the other edition
  (twin). Chapter 0 (START) is the start page: the map of the series, with no code of its own. The chapters
  fall into three parts (PARTS, parts): the two discussions (0-5), practice (6-10), the frontier (11 on).
- A chapter's code: its module helpers/chapters/chNN_<stem>.py, or the package helpers/chapters/chNN_<stem>/ for
  a chapter with several modules (helpers_module); its tests: tests/chapters/test_chNN_<stem>.py (tests_module).
- A chapter's optional sections: a markdown heading (HEADING) whose text starts with OPTIONAL[edition] at level L
  opens one, up to the next heading of level <= L (is_optional_heading); tests/test_optional_sections.py says
  where they may sit, benchmarks/bench_reading.py times the main path without them.
- A chapter's deck (tools/slides.py): <out>/NN_<stem>.slides.html, out being build/slides/ or build/slides/ja/
  by edition (deck, decks_folder).
A "chapter" argument is a path or name of any of the chapter's files (notebooks/ja/04_key_padding_mask.ipynb,
04_key_padding_mask, 04_key_padding_mask.slides.html); one that names no chapter raises ValueError. Only the
standard library: tools/dev.py imports this before .venv exists. helpers/ cannot import it (the package is
installed without tools/); helpers.chapters finds the chapter modules by their names itself.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePath

ROOT = Path(__file__).resolve().parents[1]
EDITIONS = ("en", "ja")                     # English first: the edition the Japanese one is translated from
SUBFOLDER = {"en": "", "ja": "ja"}          # an edition's files: <base>/ for English, <base>/ja/ for Japanese
CHAPTER = "[0-9][0-9]_*"                    # how a chapter's files are named: NN_<stem>, then a suffix
START = "00_start_here"                     # chapter 0: the start page (the map of the series), no code of its own
NOTEBOOKS = "notebooks"                     # the English chapters; the Japanese ones in notebooks/ja/
DECKS = PurePath("build", "slides")         # `make slides`' decks (tools/slides.py)
PARTS = ("00", "06", "11")                  # each part's first chapter: the two discussions (0-5), practice (6-10),
                                            # the frontier (11 on); a new chapter joins the last part
OPTIONAL = {"en": "Optional: ", "ja": "発展："}   # how an optional section's heading starts, per edition
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")   # a markdown heading line: (#s, its text)


def _edition(edition: object) -> str:
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {list(EDITIONS)}, got {edition!r}")
    return edition


def _stem(chapter: object, argument: str = "chapter") -> str:
    """NN_<stem> of a path or name of one of a chapter's files; a ValueError naming `argument` if it names none."""
    if isinstance(chapter, (str, PurePath)):
        name = PurePath(chapter).name
        stem = name.split(".", 1)[0]
        if PurePath(stem).match(CHAPTER) and len(stem) > 3:
            return stem
    raise ValueError(f"{argument} must name a chapter's file, NN_<stem>[.suffix] (e.g. notebooks/04_key_padding_mask"
                     f".ipynb), got {chapter!r}")


def is_optional_heading(text: str, edition: str) -> bool:
    """Whether a heading's text (without its #s) opens an optional section of the edition."""
    return text.startswith(OPTIONAL[_edition(edition)])


def edition_folder(base: Path | PurePath, edition: str) -> Path | PurePath:
    """Where an edition's files of a kind are: `base` itself for English, base/ja for Japanese."""
    sub = SUBFOLDER[_edition(edition)]
    return base / sub if sub else base


def other_edition(edition: str) -> str:
    """The edition that is not `edition`: "ja" for "en", "en" for "ja"."""
    return EDITIONS[1 - EDITIONS.index(_edition(edition))]


def notebooks(edition: str = "en", root: Path = ROOT) -> Path:
    """The folder of an edition's chapters: root/notebooks (English) or root/notebooks/ja (Japanese)."""
    return edition_folder(root / NOTEBOOKS, edition)


def chapters_in(folder: Path, suffix: str = ".ipynb") -> list[Path]:
    """The files named like chapters (NN_<stem><suffix>) in `folder`, in chapter order."""
    return sorted(folder.glob(CHAPTER + suffix))


def chapters(edition: str = "en", root: Path = ROOT) -> list[Path]:
    """An edition's chapter notebooks, in order: notebooks/NN_<stem>.ipynb (or notebooks/ja/...), 00 first."""
    return chapters_in(notebooks(edition, root))


def every_chapter(root: Path = ROOT) -> list[Path]:
    """The chapters of both editions: the English ones in order, then the Japanese ones."""
    return [path for edition in EDITIONS for path in chapters(edition, root)]


def parts(paths: list[Path]) -> list[list[Path]]:
    """The chapters `paths` (in order) grouped into the series' parts (PARTS): the chapter map, the READMEs' chapter
    lists and the site's table of contents show the same three groups. A part with none of them is an empty list."""
    groups: list[list[Path]] = [[] for _ in PARTS]
    for path in paths:
        groups[sum(number(path) >= first for first in PARTS) - 1].append(path)
    return groups


def start(edition: str = "en", root: Path = ROOT) -> Path:
    """An edition's chapter 0, the start page: notebooks/00_start_here.ipynb (or notebooks/ja/...)."""
    return notebooks(edition, root) / f"{START}.ipynb"


def edition_of(path: str | PurePath) -> str:
    """ "ja" for a file in an edition's ja/ folder (notebooks/ja/04_key_padding_mask.ipynb, build/slides/ja/...),
    else "en"."""
    if not isinstance(path, (str, PurePath)) or not str(path):
        raise ValueError(f"path must be a file's path, got {path!r}")
    folder = PurePath(path).parent.name
    return next((edition for edition, sub in SUBFOLDER.items() if sub and folder == sub), "en")


def number(chapter: str | PurePath) -> str:
    """The chapter's number, two digits: "04" for notebooks/ja/04_key_padding_mask.ipynb."""
    return _stem(chapter)[:2]


def chapter_number(value: object, name: str = "chapter", root: Path = ROOT) -> str:
    """`value` if it is the two-digit number of one of the chapters, else a ValueError naming `name`."""
    numbers = [number(path) for path in chapters("en", root)]
    if value not in numbers:
        raise ValueError(f"{name} must be a chapter's two-digit number ({numbers[0]}..{numbers[-1]}), got {value!r}")
    return value   # type: ignore[return-value]


def twin(notebook: str | PurePath) -> Path:
    """The same chapter in the other edition: notebooks/ja/04_x.ipynb for notebooks/04_x.ipynb, and back."""
    _stem(notebook, "notebook")
    path = Path(notebook)
    edition = edition_of(path)
    base = path.parent.parent if SUBFOLDER[edition] else path.parent
    return edition_folder(base, other_edition(edition)) / path.name


def helpers_module(chapter: str | PurePath, root: Path = ROOT) -> Path:
    """Where the chapter's code is: the package helpers/chapters/chNN_<stem>/ if there is one, else the module
    helpers/chapters/chNN_<stem>.py (which chapter 0, START, does not have)."""
    package = root / "helpers" / "chapters" / f"ch{_stem(chapter)}"
    return package if package.is_dir() else package.with_name(f"{package.name}.py")


def tests_module(chapter: str | PurePath, root: Path = ROOT) -> Path:
    """Where the chapter's unit tests are: tests/chapters/test_chNN_<stem>.py."""
    return root / "tests" / "chapters" / f"test_ch{_stem(chapter)}.py"


def decks_folder(edition: str = "en", root: Path = ROOT) -> Path:
    """Where `make slides` writes an edition's decks: build/slides/ (English), build/slides/ja/ (Japanese)."""
    return edition_folder(root / DECKS, edition)


def deck(notebook: str | PurePath, out: Path | None = None) -> Path:
    """The chapter's deck: out/NN_<stem>.slides.html, by default in its edition's decks_folder."""
    name = _stem(notebook, "notebook")
    return (decks_folder(edition_of(notebook)) if out is None else out) / f"{name}.slides.html"
