"""Static explorers (helpers/static_explorer.py, tools/static_explorers.py): each chapter's grid and budget, the
same HTML as the live explorer for the same setting (refusals included), and a file that needs no network.

Chapters 2 and 6 are exported and checked fully (every setting against a live explorer); every chapter is checked
on a small sub-grid (each control at its start value and one other) and on its grid size; the whole series'
export, against the size budget, is `slow`. tests/browser/test_static_explorer.py moves one in Chromium."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

import ipywidgets as widgets
import pytest

from helpers import chapters
from helpers import static_explorer as se
from helpers.explorer import REFUSED
from tools import series
from tools import static_explorers as tool

WITH_EXPLORERS = [c for c in chapters.chapters() if chapters.explorers(c)]
FULL = ("02", "06")  # exported whole and compared setting by setting (refusals and every control kind among them)


def live_view(make, setting: dict) -> tuple[str, str]:
    """What a fresh live explorer (its controls observed, as in a notebook) shows after a learner sets `setting`."""
    box = make()
    try:
        for name, value in setting.items():
            box.controls[name].value = value
        return box.summary.value, box.tables.value
    finally:
        box.close()


def test_every_chapter_but_the_start_page_has_explorers():
    assert WITH_EXPLORERS == [series.number(path) for path in series.chapters("en")[1:]]
    assert len(WITH_EXPLORERS) >= 13


@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_each_explorers_grid_is_within_the_settings_limit_and_says_what_it_keeps(chapter):
    kept = chapters.subgrids(chapter)
    for make in chapters.explorers(chapter):
        box = make()
        try:
            found = se.axes(box, kept.get(make))
        finally:
            box.close()
        n = se.n_settings(found)
        assert 1 <= n <= se.MAX_SETTINGS, f"{make.__name__}: {n} settings"
        assert [a.name for a in found] == list(box.controls)
        for axis in found:
            assert axis.start in axis.kept, "the live start value is always precomputed"
        text = se.note(found, n)
        if all(a.complete for a in found):
            assert make not in kept
            assert text == f"Static explorer: all {n} settings precomputed in Python; no kernel needed."
        else:
            assert text.startswith(f"Static explorer: {n} of the live explorer's ")
            for axis in found:
                assert (axis.description in text) == (not axis.complete)


def test_every_subgrid_names_its_chapters_explorer_and_its_controls():
    found = 0
    for chapter in WITH_EXPLORERS:
        for make, subgrid in chapters.subgrids(chapter).items():  # raises for a function not in EXPLORERS
            found += 1
            box = make()
            try:
                se.axes(box, subgrid)  # raises for an unknown control or value
            finally:
                box.close()
    assert found == 2, "chapters 12 and 13 keep sub-grids"


def test_an_explorer_named_like_another_chapters_gets_its_own_chapters_grid(monkeypatch, tmp_path):
    """A sub-grid belongs to its chapter's explorer function, not to its name: a chapter 14 whose explorer is also
    called mask_explorer (chapter 13's has a sub-grid) precomputes its whole grid."""
    from helpers.chapters import ch05_attn_mask_and_causality as ch05
    from helpers.chapters import ch13_windows_prefixes_and_chunks as ch13

    def mask_explorer():
        return ch05.causal_explorer()

    assert mask_explorer.__name__ == ch13.mask_explorer.__name__ and ch13.mask_explorer in ch13.SUBGRIDS
    fake = type(ch05)("helpers.chapters.ch14_a_later_chapter")
    fake.EXPLORERS = (mask_explorer,)
    known = {**chapters.chapters(), "14": "ch14_a_later_chapter"}
    monkeypatch.setattr(chapters, "chapters", lambda: known)
    monkeypatch.setattr(chapters, "module", lambda chapter: fake if chapter == "14" else None)
    assert chapters.subgrids("14") == {}
    result = se.export_chapter("14", tmp_path)
    (data,) = se.read_payloads(result.path)
    assert data["note"].startswith(f"Static explorer: all {result.settings} settings precomputed")
    assert "<title>14 a later chapter: static explorer</title>" in result.path.read_text(encoding="utf-8")


def test_the_chapter_13_note_states_its_subgrid():
    from helpers.chapters.ch13_windows_prefixes_and_chunks import mask_explorer
    box = mask_explorer()
    found = se.axes(box, chapters.subgrids("13")[mask_explorer])
    box.close()
    assert se.note(found, se.n_settings(found)) == (
        "Static explorer: 1920 of the live explorer's 17600 settings precomputed (window: 1, 2, 3, 4, 6, 10 only "
        "(live: 10 values); prefix: 0, 2, 4, 10 only (live: 11 values); chunk: 2, 3, 4, 5, 10 only "
        "(live: 10 values)). Run the notebook for every value.")


def small_subgrid(box) -> dict:
    """Each control at its start value and at one other value (its last, or its first if it starts there)."""
    subgrid = {}
    for name, control in box.controls.items():
        values = se.control_axis(name, control).values
        other = values[-1] if control.value != values[-1] else values[0]
        subgrid[name] = (control.value, other)
    return subgrid


@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_a_small_subgrid_of_every_chapter_renders_what_the_live_explorer_shows(chapter):
    for make in chapters.explorers(chapter):
        box = make()
        subgrid = small_subgrid(box)
        box.close()
        payload = se.precompute(make, subgrid)
        assert len(payload.grid) == 2 ** len(subgrid)
        rng = list(se.settings(payload.axes))
        for index in sorted({0, 1, len(rng) // 2, len(rng) - 1}):
            assert payload.view(index) == live_view(make, rng[index]), f"{make.__name__} {rng[index]}"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, se.Exported]:
    out = tmp_path_factory.mktemp("explorers")
    return {c: tool.export(c, out) for c in FULL}


@pytest.mark.parametrize("chapter", FULL)
def test_every_setting_in_the_file_is_what_the_live_explorer_shows(exported, chapter):
    """The file's payload, read back as the page's script reads it, against a live explorer, setting by
    setting; refused settings show the same "Not possible" message and no tables."""
    result = exported[chapter]
    (make,) = chapters.explorers(chapter)
    (data,) = se.read_payloads(result.path)
    box = make()
    found = se.axes(box, chapters.subgrids(chapter).get(make))
    box.close()
    assert [a["labels"] for a in data["axes"]] == [[a.labels[i] for i in a.kept] for a in found]
    refused = 0
    for index, setting in enumerate(se.settings(found)):
        assert se.index_of(found, setting) == index
        summary, *parts = data["entries"][data["grid"][index]]
        shown = data["pieces"][summary], "".join(data["pieces"][p] for p in parts)
        assert shown == live_view(make, setting), setting
        if shown[0].startswith(REFUSED):
            refused += 1
            assert shown[1] == ""
    assert refused > 0, "the chapter has refused settings, and they are in the file"
    assert result.settings == len(data["grid"]) == se.n_settings(found)
    assert result.distinct == len(data["entries"]) <= result.settings


@pytest.mark.parametrize("chapter", FULL)
def test_the_file_is_within_budget_and_asks_no_network(exported, chapter):
    result = exported[chapter]
    assert result.within_budget and result.bytes <= se.BUDGET_BYTES
    text = result.path.read_text(encoding="utf-8")
    pieces = "".join(p for data in se.read_payloads(result.path) for p in data["pieces"])
    for found in (text, pieces):
        assert not re.search(r"(src|href)\s*=|@import|url\((?!data:)|https?://|<link", found), "no network"
    assert text.count('<script type="application/octet-stream" class="static-data">') == 1
    assert "DecompressionStream" in text and "<script src" not in text


def test_the_export_is_reproducible(tmp_path):
    first = se.export_chapter("01", tmp_path / "a").path.read_bytes()
    assert first == se.export_chapter("01", tmp_path / "b").path.read_bytes()


def test_control_axis_reads_each_kind_of_control_and_refuses_others():
    slider = se.control_axis("n", widgets.IntSlider(value=2, min=0, max=6, step=2, description="n"))
    assert (slider.kind, slider.values, slider.start) == ("slider", (0, 2, 4, 6), 1)
    assert slider.labels == ("0", "2", "4", "6")
    drop = se.control_axis("d", widgets.Dropdown(options=[("one", 1), ("two", 2)], value=2), keep=(1,))
    assert (drop.kind, drop.values, drop.labels, drop.kept) == ("dropdown", (1, 2), ("one", "two"), (0, 1))
    toggles = se.control_axis("t", widgets.ToggleButtons(options=["a", "b"], value="a"), keep=("a",))
    assert (toggles.kind, toggles.kept, toggles.note()) == ("toggles", (0,), "t fixed at a")
    box = se.control_axis("c", widgets.Checkbox(value=True, description="on?"))
    assert (box.kind, box.values, box.start) == ("checkbox", (False, True), 1)
    with pytest.raises(ValueError, match="keep for control 'n' must be some of"):
        se.control_axis("n", widgets.IntSlider(value=2, min=0, max=6, step=2), keep=(3,))
    with pytest.raises(TypeError, match="cannot show a Text"):
        se.control_axis("x", widgets.Text())


def test_pieces_join_back_to_the_view_html():
    from helpers.chapters.ch05_attn_mask_and_causality import causal_explorer
    box = causal_explorer()
    tables = box.tables.value
    box.close()
    parts = se.pieces(tables)
    assert "".join(parts) == tables and len(parts) >= 2 and parts[0].endswith("</style>")
    assert sum(p.startswith('<div class="explorer-panel"') for p in parts) == tables.count('class="explorer-panel"')


def test_the_tool_refuses_a_chapter_without_explorers(capsys):
    with pytest.raises(SystemExit):
        tool.main(["00"])
    assert "no explorers in chapter(s) 00" in capsys.readouterr().err


@pytest.mark.slow
def test_the_whole_series_exports_within_budget(capsys):
    """Every chapter's static explorer, both editions, within BUDGET_BYTES: the files the site, the decks' fit test
    and the site's frame test share (build/site/explorers/, made once per helpers/ version, tools.site's
    export_explorers; not a second export of the series)."""
    from tools import site

    start = time.perf_counter()
    files = site.export_explorers(series.ROOT / "build" / "site")
    for edition in site.EDITIONS:
        made = sorted(f for f in files if f.parent.name == Path(site.explorers_folder(edition)).name)
        assert [series.number(f) for f in made] == WITH_EXPLORERS, edition
    over = [f"{f.parent.name}/{f.name}: {f.stat().st_size}" for f in files if f.stat().st_size > se.BUDGET_BYTES]
    assert not over, f"over the {se.BUDGET_BYTES} byte budget: {over}"
    with capsys.disabled():
        print(f"\nwhole series, both editions: {len(files)} files, largest {max(f.stat().st_size for f in files)} "
              f"bytes, {time.perf_counter() - start:.1f} s (0 when build/site/explorers/ is up to date)")


def test_the_tool_writes_a_chapter_and_its_index(tmp_path, capsys):
    """`python -m tools.static_explorers 02 --out DIR`: the file, its line of figures, and DIR/index.html."""
    assert tool.main(["02", "--out", str(tmp_path)]) == 0
    assert [series.number(f) for f in series.chapters_in(tmp_path, ".html")] == ["02"]
    assert (tmp_path / "index.html").is_file() and "index:" in capsys.readouterr().out


def test_settings_are_in_the_order_of_index_of():
    found = (se.Axis("a", "slider", "a", (0, 1, 2), ("0", "1", "2"), (0, 2), 0),
             se.Axis("b", "checkbox", "b", (False, True), ("off", "on"), (0, 1), 0))
    listed = list(se.settings(found))
    assert listed == [dict(a=a, b=b) for a, b in itertools.product((0, 2), (False, True))]
    assert [se.index_of(found, s) for s in listed] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="does not hold a=1"):
        se.index_of(found, {"a": 1, "b": False})


def test_a_written_file_starts_with_its_chapter_title(exported):
    text = Path(exported["02"].path).read_text(encoding="utf-8")
    assert tool.heading("02") == "2. Softmax on masked rows"   # the notebook's first heading
    assert text.startswith("<!DOCTYPE html>") and "<title>2. Softmax on masked rows: static explorer</title>" in text


def test_the_tool_reads_the_title_the_package_is_given(tmp_path):
    """helpers/ reads no notebook: the tool passes the edition's heading in; without one, the module's name."""
    source = Path(se.__file__).read_text(encoding="utf-8")
    assert "notebooks" not in source and ".ipynb" not in source and "from tools" not in source
    assert tool.heading("01", "ja") == "1. パッドの疑問"
    assert tool.heading("01", root=tmp_path) == ""   # no notebook there
    plain = se.export_chapter("01", tmp_path).path.read_text(encoding="utf-8")
    assert "<title>01 the pad question: static explorer</title>" in plain


def test_the_page_names_the_cjk_font_it_inlines():
    assert f"'{se.cjk_font.FAMILY}'" in se.CSS and f"'{se.cjk_font.FAMILY}'" in se.JS


def test_the_japanese_edition_exports_japanese_pages(tmp_path):
    """--edition ja: <html lang="ja">, the Japanese chapter's title, and the notes and summaries in Japanese;
    the English export of the same chapter is unchanged by it."""
    english = tool.export("01", tmp_path / "en").path.read_text(encoding="utf-8")
    japanese = tool.export("01", tmp_path / "ja", edition="ja").path.read_text(encoding="utf-8")
    assert '<html lang="ja">' in japanese and '<html lang="en">' in english
    assert "パッドの疑問" in japanese and "：静的エクスプローラ</title>" in japanese
    (data,) = se.read_payloads(tmp_path / "ja" / "01_the_pad_question.html")
    assert data["note"].startswith("静的エクスプローラ：") and data["title"].startswith("パッドの数 → 書籍のマスク")
    assert english == tool.export("01", tmp_path / "again").path.read_text(encoding="utf-8")
    # every Japanese character the page shows is in the font it embeds (no boxes without a system Japanese font)
    cut = set(japanese.split(" cut to ", 1)[1].split(" */", 1)[0])
    shown = data["title"] + data["note"] + "".join(a["description"] + "".join(a["labels"]) for a in data["axes"])
    shown += re.search(r"<title>(.*?)</title>", japanese).group(1) + se.loading_text()
    with se.language.speaking("ja"):
        shown += se.loading_text()
    missing = {c for c in shown if ord(c) > 0x2E7F} - cut
    assert not missing, f"characters shown but not in the embedded font: {''.join(sorted(missing))}"
    with pytest.raises(ValueError, match="edition must be one of"):
        se.export_chapter("01", tmp_path / "fr", edition="fr")


JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_every_explorer_draws_its_words_in_the_readers_language(chapter):
    """The words an explorer draws (its static title, each panel's title and axis labels, the caption) are in both
    languages (helpers.language.Bilingual), and in the Japanese edition each of them that holds a Latin letter
    holds Japanese too (code names such as scaled_dot_product_attention stay as they are, inside Japanese)."""
    from helpers.language import Bilingual, said, speaking

    for make in chapters.explorers(chapter):
        with speaking("ja"):
            box = make()
            try:
                assert isinstance(box.title, Bilingual), f"{make.__name__}: its title, in both languages"
                view = box._view(**{name: c.value for name, c in box.controls.items()})
                drawn = [box.title.said(), said(view.caption)] + [
                    said(text) for p in view.panels for text in (p.title, p.xlabel, p.ylabel)]
            finally:
                box.close()
        english = [text for text in drawn if re.search("[A-Za-z]", text) and not JAPANESE.search(text)]
        assert not english, f"{make.__name__} draws English in the Japanese edition: {english}"
        with speaking("en"):
            assert not JAPANESE.search(box.title.said()), make.__name__
