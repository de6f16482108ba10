"""tools/series.py, the series' layout: both editions hold the same chapters, every chapter has its twin, its module
and its test module where the layout says, and a file's edition and chapter number follow from its path."""

from __future__ import annotations

import re
from pathlib import Path, PurePath

import nbformat
import pytest

from helpers import chapters as modules
from tools import series

ROOT = series.ROOT
ENGLISH = series.chapters("en")


def test_both_editions_hold_the_same_chapters_in_order():
    assert len(ENGLISH) >= 14 and ENGLISH[0] == series.start("en") == ROOT / "notebooks" / "00_start_here.ipynb"
    assert [p.name for p in series.chapters("ja")] == [p.name for p in ENGLISH]
    assert [series.number(p) for p in ENGLISH] == [f"{n:02d}" for n in range(len(ENGLISH))], "00, 01, ... no gap"
    assert series.every_chapter() == ENGLISH + series.chapters("ja")
    assert all(p.parent == ROOT / "notebooks" / "ja" for p in series.chapters("ja"))


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_every_chapter_has_its_twin_module_and_test_module(path: Path):
    twin = series.twin(path)
    assert twin == ROOT / "notebooks" / "ja" / path.name and twin.is_file()
    assert series.twin(twin) == path
    assert series.edition_of(path) == "en" and series.edition_of(twin) == "ja"
    if path.stem == series.START:   # the start page: the map of the series, no code of its own
        assert not series.helpers_module(path).exists() and modules.module(path.stem) is None
        return
    code, tests = series.helpers_module(path), series.tests_module(path)
    assert code.exists(), f"{path.name}: no {code.relative_to(ROOT)}"
    assert tests.is_file(), f"{path.name}: no {tests.relative_to(ROOT)}"
    assert series.helpers_module(twin) == code and series.tests_module(twin) == tests, "one module for both editions"
    found = modules.module(path.stem)   # helpers.chapters finds the same module by its name
    assert found is not None and (Path(found.__file__).parent if code.is_dir() else Path(found.__file__)) == code


def test_where_a_chapters_files_are():
    path = ROOT / "notebooks" / "04_key_padding_mask.ipynb"
    assert series.helpers_module(path) == ROOT / "helpers" / "chapters" / "ch04_key_padding_mask.py"
    package = ROOT / "helpers" / "chapters" / "ch08_a_trained_classifier"   # a chapter of several modules
    assert series.helpers_module("08_a_trained_classifier") == package
    assert series.tests_module(path) == ROOT / "tests" / "chapters" / "test_ch04_key_padding_mask.py"
    assert series.deck(path) == ROOT / "build" / "slides" / "04_key_padding_mask.slides.html"
    assert series.deck(series.twin(path)) == ROOT / "build" / "slides" / "ja" / "04_key_padding_mask.slides.html"
    assert series.deck(path, Path("out")) == Path("out") / "04_key_padding_mask.slides.html"
    assert series.decks_folder("ja") == ROOT / "build" / "slides" / "ja"


def test_another_root_has_the_same_layout(tmp_path: Path):
    """A copy of the repository (benchmarks/bench_suite.py's) or a scratch one (tests/test_dev.py's)."""
    folder = series.notebooks("ja", tmp_path)
    folder.mkdir(parents=True)
    for name in ("01_b.ipynb", "00_a.ipynb", "cheatsheet.md", "1_short.ipynb", "ab_c.ipynb"):
        (folder / name).write_text("")
    assert series.chapters("ja", tmp_path) == [folder / "00_a.ipynb", folder / "01_b.ipynb"]
    assert series.chapters("en", tmp_path) == [], "no English chapters there"
    assert series.chapters_in(folder, ".md") == []
    assert series.helpers_module("01_b", tmp_path) == tmp_path / "helpers" / "chapters" / "ch01_b.py"


@pytest.mark.parametrize(("path", "edition", "number"), [
    ("notebooks/ja/04_key_padding_mask.ipynb", "ja", "04"),
    ("notebooks/04_key_padding_mask.ipynb", "en", "04"),
    (PurePath("build/slides/ja/13_windows_prefixes_and_chunks.slides.html"), "ja", "13"),
    ("my-notebooks/ja/00_start_here.ipynb", "ja", "00"),
    ("10_packing_and_the_cost_of_padding", "en", "10"),
])
def test_a_files_edition_and_chapter(path, edition: str, number: str):
    assert series.edition_of(path) == edition and series.number(path) == number


def test_edition_folders():
    assert series.edition_folder(Path("my-notebooks"), "en") == Path("my-notebooks")
    assert series.edition_folder(PurePath("explorers"), "ja") == PurePath("explorers/ja")
    assert series.notebooks("ja") == ROOT / "notebooks" / "ja" and series.notebooks() == ROOT / "notebooks"
    assert [series.other_edition(e) for e in series.EDITIONS] == ["ja", "en"]


@pytest.mark.parametrize(("call", "argument"), [
    (lambda: series.number("cheatsheet.md"), "chapter"),
    (lambda: series.number("4_key_padding_mask.ipynb"), "chapter"),
    (lambda: series.number("04_"), "chapter"),
    (lambda: series.number(4), "chapter"),
    (lambda: series.helpers_module("notebooks/glossary.md"), "chapter"),
    (lambda: series.tests_module(None), "chapter"),
    (lambda: series.twin("notebooks/ja/glossary.md"), "notebook"),
    (lambda: series.deck("index.html"), "notebook"),
    (lambda: series.edition_of(""), "path"),
    (lambda: series.edition_of(3), "path"),
    (lambda: series.notebooks("fr"), "edition"),
    (lambda: series.chapters("EN"), "edition"),
    (lambda: series.other_edition(None), "edition"),
    (lambda: series.edition_folder(Path("build"), "de"), "edition"),
])
def test_bad_input_names_the_argument(call, argument: str):
    with pytest.raises(ValueError, match=rf"^{argument} must"):
        call()


@pytest.mark.parametrize("edition", series.EDITIONS)
def test_every_chapter_is_listed_and_linked_to_its_neighbours(edition: str):
    """Each chapter is in its edition's README list and chapter 0's map, and its title cell links the chapter
    before it and the one after it (the last one: back to chapter 0). tools/new_chapter.py adds them."""
    found = series.chapters(edition)
    readme = (ROOT / ("README.md" if edition == "en" else "README.ja.md")).read_text(encoding="utf-8")
    start = "\n".join(c.source for c in nbformat.read(series.start(edition), as_version=4).cells
                      if c.cell_type == "markdown")
    for i, path in enumerate(found):
        assert f"]({path.relative_to(ROOT).as_posix()})" in readme, f"the README does not list {path.name}"
        if i == 0:
            continue
        assert re.search(rf"^\| {i} \| \[[^\]]+\]\({path.name}\)", start, re.M), f"chapter 0's map lacks {path.name}"
        title = nbformat.read(path, as_version=4).cells[0].source
        following = found[i + 1] if i + 1 < len(found) else series.start(edition)
        assert f"]({found[i - 1].name})" in title and f"]({following.name})" in title, (
            f"{path.name}'s title cell must link {found[i - 1].name} and {following.name}")


RULE_BOX = {"en": ("> **The rule.**", "## Step "), "ja": ("> **規則**", "## ステップ ")}


def _rendered(heading: str) -> str:
    """A heading's text as a browser shows it: links, code marks and emphasis gone."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return heading.replace("`", "").replace("**", "").replace("*", "")


@pytest.mark.parametrize("edition", series.EDITIONS)
def test_every_chapter_opens_with_one_rule_box_whose_links_reach_its_steps(edition: str):
    """Every chapter but chapter 0 has one "The rule" box, before its first step, and each in-page link in it is
    the anchor of one of the chapter's headings (as JupyterLab and the site make them: tools.site.heading_anchor)."""
    from tools.site import heading_anchor

    opening, step = RULE_BOX[edition]
    for path in series.chapters(edition)[1:]:
        cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
        boxes = [i for i, c in enumerate(cells) if c.source.startswith(opening)]
        assert len(boxes) == 1, f"{path.name}: {len(boxes)} rule boxes (cells starting {opening!r}), one expected"
        first_step = next((i for i, c in enumerate(cells) if re.search(rf"^{step}", c.source, re.M)), len(cells))
        assert boxes[0] < first_step, f"{path.name}: the rule box must come before the first step"
        headings = {"#" + heading_anchor(_rendered(line.lstrip("#").strip()))
                    for c in cells for line in c.source.splitlines() if re.match(r"^#{1,4} ", line)}
        for target in _in_page_links(cells[boxes[0]].source):
            assert target in headings, f"{path.name}: the rule box links {target}, which is no heading's anchor"


def _in_page_links(markdown: str) -> list[str]:
    """The targets of the [text](#anchor) links in markdown, parentheses inside an anchor included."""
    found = []
    for start in (m.end() for m in re.finditer(r"\]\(#", markdown)):
        depth, end = 1, start
        while end < len(markdown) and depth:
            depth += {"(": 1, ")": -1}.get(markdown[end], 0)
            end += 1
        found.append("#" + markdown[start:end - 1])
    return found


# --- The glossaries: notebooks/glossary.md and notebooks/ja/glossary.md, the same entries in the same order ---
GLOSSARY_ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def _glossary_rows(edition: str) -> list[tuple[str, list[str]]]:
    """(anchor, the chapters its row says define it) for each entry of the edition's glossary, in order."""
    text = (series.notebooks(edition) / "glossary.md").read_text(encoding="utf-8")
    return [(m[1], re.findall(r"\]\((\d\d_\w+\.ipynb)\)", m[2]))
            for m in re.finditer(r'^\|\s*<a id="([^"]+)"></a>(.*)$', text, re.M)]


def test_both_glossaries_have_the_same_entries_in_the_same_order():
    """Each entry has the same anchor in both editions (a link glossary.md#x works in either), and names the same
    chapters as the ones that define it."""
    english, japanese = _glossary_rows("en"), _glossary_rows("ja")
    assert [a for a, _ in english] == [a for a, _ in japanese], "the glossaries' anchors differ, or their order"
    assert len({a for a, _ in english}) == len(english), "an anchor is used twice"
    for (anchor, chapters), (_, chapters_ja) in zip(english, japanese, strict=True):
        assert chapters and chapters == chapters_ja, f"#{anchor}: defined in {chapters} (en), {chapters_ja} (ja)"
        assert all((series.notebooks() / name).is_file() for name in chapters), f"#{anchor}: {chapters}"


def test_english_glossary_anchors_used_by_the_chapters_exist():
    """Every [term](glossary.md#anchor) link in the English chapters points at an entry of notebooks/glossary.md."""
    glossary = (series.notebooks() / "glossary.md").read_text(encoding="utf-8")
    anchors = set(GLOSSARY_ANCHOR.findall(glossary))
    missing, used = set(), set()
    for path in ENGLISH:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                found = re.findall(r"glossary\.md#([\w-]+)", cell.source)
                used |= set(found)
                missing |= {f"{path.name}: #{a}" for a in found if a not in anchors}
    assert used, "the English chapters link no glossary entry"
    assert not missing, sorted(missing)


@pytest.mark.parametrize("edition", series.EDITIONS)
def test_only_the_last_chapter_links_back_to_chapter_0_as_its_next(edition: str):
    """A chapter's "next →" links (its title cell and its summary's) lead to the next chapter; only the last one's
    go back to chapter 0 (tools/new_chapter.py moves them all when it adds a chapter)."""
    from tools.new_chapter import back_link

    back = back_link()
    for path in series.chapters(edition)[1:-1]:
        stale = [c.id for c in nbformat.read(path, as_version=4).cells
                 if c.cell_type == "markdown" and back.search(c.source)]
        assert not stale, f"{path.name}: cells {stale} still link back to chapter 0 as the next chapter"


PART_HEADING = {"en": re.compile(r"^\*\*Part (\d):", re.M), "ja": re.compile(r"^\*\*第 (\d) 部：", re.M)}


@pytest.mark.parametrize("edition", series.EDITIONS)
def test_the_map_and_the_readme_list_the_chapters_by_part(edition: str):
    """Chapter 0's map and the README's chapter list group the chapters in the three parts of series.parts (0-5,
    6-10, 11 on), each under its bold heading; tools/new_chapter.py puts a new chapter in the last part."""
    found = series.chapters(edition)
    readme = (ROOT / ("README.md" if edition == "en" else "README.ja.md")).read_text(encoding="utf-8")
    listing = readme.split("\n## " + ("Chapters" if edition == "en" else "各章") + "\n", 1)[1].split("\n## ", 1)[0]
    start = nbformat.read(series.start(edition), as_version=4)
    chapter_map = next(c.source for c in start.cells if c.get("id") == "c02")
    for text, link, where in ((listing, lambda p: p.relative_to(ROOT).as_posix(), "the README"),
                              (chapter_map, lambda p: p.name, "chapter 0's map")):
        pieces = PART_HEADING[edition].split(text)
        assert pieces[1::2] == ["1", "2", "3"], f"{where}: three part headings, in order"
        for number, (body, part) in enumerate(zip(pieces[2::2], series.parts(found), strict=True), 1):
            listed = [p for p in found if f"]({link(p)})" in body.split("\n\n**", 1)[0]]   # up to "Which path"
            expected = [p for p in part if not (where != "the README" and p.stem == series.START)]
            assert listed == expected, f"{where}, part {number}: {[p.name for p in listed]}"
