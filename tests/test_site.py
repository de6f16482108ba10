"""The book site's configuration (tools/site.py), without building it: every chapter of both editions, the cheat
sheet, the glossary and the run page are pages; each page has its twin; a chapter's copy drops what needs a
kernel or the web. tests/browser/test_site.py builds a small site and checks it in Chromium."""

from __future__ import annotations

import re

import nbformat
import pytest

from tools import links, series, site


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_every_chapter_and_page_is_in_the_site(edition: str):
    chapters = [p.stem for p in series.chapters(edition)]
    assert len(chapters) >= 14
    assert site.pages(edition) == [*chapters, "cheatsheet", "reference", "glossary", "run"]
    tree = site.toctree(edition, site.pages(edition))   # chapter 0 holds the table of contents
    assert all(re.search(rf"^{name}$", tree, re.M) for name in site.pages(edition) if name != site.ROOT_DOC)
    assert re.search(r"^self$", tree, re.M), "chapter 0 is the first entry"
    config = site.sphinx_config(edition)
    assert config["language"] == edition and config["root_doc"] == site.ROOT_DOC
    assert config["nb_execution_mode"] == "off", "the site shows the committed outputs; it runs nothing"
    assert config["nb_ipywidgets_js"] == {}, "no widget scripts from a CDN"
    assert not config["mathjax_path"].startswith("http"), "math from the vendored KaTeX, not MathJax's CDN"


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_the_table_of_contents_groups_the_chapters_in_three_parts(edition: str):
    """Chapter 0's hidden tables of contents: one per part (0-5, 6-10, 11 on), then the reference pages."""
    tree = site.toctree(edition, site.pages(edition))
    captions = re.findall(r"^:caption: (.+)$", tree, re.M)
    assert captions == [*site.WORDS[edition]["parts"], site.WORDS[edition]["reference"]]
    tables = [re.findall(r"^(\w+)$", block, re.M) for block in tree.split("```{toctree}")[1:]]
    stems = [p.stem for p in series.chapters(edition)]
    assert tables[0] == ["self", *stems[1:6]] and tables[1] == stems[6:11] and tables[2] == stems[11:]
    assert tables[3] == list(site.REFERENCE)
    small = site.toctree(edition, site.pages(edition, ["00", "02"]))
    assert re.findall(r"^:caption: (.+)$", small, re.M) == [site.WORDS[edition]["parts"][0],
                                                            site.WORDS[edition]["reference"]], "no empty part"


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_the_cheat_sheet_is_marked_for_one_printed_page(edition: str):
    """print.css lays out the page holding PRINT_MARK on one A4 sheet (tests/browser/test_print.py prints it)."""
    source = (series.notebooks(edition) / "cheatsheet.md").read_text(encoding="utf-8")
    marked = site.one_page(source)
    assert marked.splitlines()[0] == source.splitlines()[0] and marked.count(site.PRINT_MARK) == 1
    assert "print.css" in site.sphinx_config(edition)["html_css_files"]
    assert (site.THEME / "static" / "print.css").is_file()


def test_both_editions_have_the_same_pages():
    """The language switch links each page to the page of the same name in the other edition."""
    assert site.pages("en") == site.pages("ja")


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_glossary_pages(edition: str):
    """Each edition's glossary page is its glossary.md; its raw anchors become MyST targets."""
    source = site.glossary_source(edition)
    assert source == (series.notebooks(edition) / "glossary.md").read_text(encoding="utf-8")
    assert source.startswith("# ") and '<a id="dead-row"></a>' in source
    assert "[]{#dead-row}" in site.markdown(edition, source), "raw anchors become MyST targets"


def test_links_to_the_other_edition_go_to_its_site():
    """The English glossary links the Japanese one (ja/glossary.md): on the site, the Japanese site's page (MyST would
    look for it among the English pages, and warn)."""
    assert "](ja/glossary.md)" in site.glossary_source("en")
    assert '<a href="../ja/glossary.html">' in site.markdown("en", site.glossary_source("en"))
    english = '<a href="../en/glossary.html#dead-row">英語版</a>'
    assert site.markdown("ja", "[英語版](../glossary.md#dead-row)") == english
    assert site.markdown("en", "[x](glossary.md#dead-row) ![p](ja/x.md)") == "[x](glossary.md#dead-row) ![p](ja/x.md)"


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_run_page_takes_its_urls_from_links_py(edition: str):
    chapters = site.chapter_paths(edition)
    text = site.run_source(edition, chapters)
    assert links.binder_url(links.relative(series.start(edition))) in text
    assert all(links.colab_url(links.relative(p)) in text for p in chapters)
    assert links.site_url() in text and "make lab" in text


def test_site_url_is_derived_from_the_repository(monkeypatch):
    monkeypatch.setattr(links, "REPOSITORY", "Someone/series")
    assert links.site_url() == "https://someone.github.io/series/"
    assert links.site_url("ja") == "https://someone.github.io/series/ja/"
    monkeypatch.setattr(links, "REPOSITORY", "someone/someone.github.io")
    assert links.site_url() == "https://someone.github.io/"
    with pytest.raises(ValueError, match="edition"):
        links.site_url("fr")


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_a_chapter_as_the_site_shows_it(edition: str):
    path = site.chapter_paths(edition, ["00", "02"])[1]
    nb = site.prepare_notebook(nbformat.read(path, as_version=4), edition, links.relative(path))
    ids = [cell.get("id") for cell in nb.cells]
    assert links.SETUP_ID not in ids, "no Colab install cell on the site"
    badge = nb.cells[ids.index(links.BADGE_ID)].source
    assert "<img" not in badge and "![" not in badge and links.colab_url(links.relative(path)) in badge
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    frames = [o["data"]["text/html"] for o in outputs if "site-explorer" in o.get("data", {}).get("text/html", "")]
    folder = site.explorers_folder(edition)  # explorers/, explorers/ja/: each edition's explorers speak its language
    assert len(frames) == 1 and f'src="../{folder}/{path.stem}.html?embed#explorer-1"' in frames[0]
    hidden = [cell for cell in nb.cells if cell.metadata.get("jupyter", {}).get("source_hidden")]
    assert hidden and all("hide-input" in cell.metadata["tags"] for cell in hidden)
    assert "widgets" not in nb.metadata


def test_links_out_of_the_notebooks_go_to_github():
    text = site.markdown("en", "[the module](../helpers/training.py), [ch. 1](01_the_pad_question.ipynb)")
    assert text == f"[the module]({links.source_url('helpers/training.py')}), [ch. 1](01_the_pad_question.ipynb)"
    assert site.markdown("ja", "[x](../../helpers/training.py)") == f"[x]({links.source_url('helpers/training.py')})"


@pytest.mark.parametrize("edition", ["en", "ja"])
def test_launch_links_say_they_need_the_published_repository(edition: str):
    html = site.launch_links(edition, f"notebooks/{'ja/' if edition == 'ja' else ''}01_the_pad_question.ipynb")
    assert f"<code>github.com/{links.REPOSITORY}</code>" in html and "<img" not in html
    assert "`" not in html
