"""The series as a static book site: `make site` -> build/site/ (en/, ja/, explorers/, index.html).

Sphinx with myst-nb reads the committed notebooks as they are, WITHOUT executing them (nb_execution_mode "off"),
and the Furo theme (its CSS, JS and icons ship in its wheel) lays them out: a sidebar with every chapter and
Previous/Next links, which a phone folds into a menu. Nothing is downloaded at build time and the pages load
nothing from the network: math is typeset by the vendored KaTeX (tools/vendor/), not MathJax's CDN, and myst-nb's
ipywidgets scripts (from a CDN) are turned off. Two builds, one per edition, from the same configuration
(sphinx_config): build/site/en/ from notebooks/, build/site/ja/ from notebooks/ja/ (language "ja": Sphinx's
search splits Japanese words with its bundled TinySegmenter), and build/site/index.html to choose one.

Each edition's pages (pages()): every chapter (the table of contents groups them in the series' three parts,
series.parts), the cheat sheet (one printable A4 page: site_theme/static/print.css), the reference page beside it,
the glossary (each edition's glossary.md), and a
page on how to run the series (Binder, Colab, locally), written here from tools/links.py, the one place of the
repository slug and of the site's address. Before Sphinx reads a chapter, a copy of it is changed (prepare_notebook):
- the Colab set-up cell is dropped, and the Colab/Binder badge cell (pictures from the web) becomes plain links;
- each explorer cell's widget output (which needs a kernel) becomes an iframe of the chapter's static explorer
  (helpers/static_explorer.py), exported for each edition in its language into build/site/explorers/ (ja/ for the
  Japanese); opened as NN_<stem>.html?embed#explorer-N, the explorer's page shows only explorer N, reflows its
  view to the frame's width and posts its height to the page, which sizes the iframe to it
  (tools/site_theme/static/site.js): it moves with no kernel and no network;
- a cell whose source is hidden in JupyterLab (the exercises' solution runs) is folded ("hide-input");
- links out of the notebooks folder (helpers/ sources) point to the file on GitHub (links.source_url), and links
  to a page of the other edition (the English glossary's ja/glossary.md) to that page of the other site;
- chapter 0 gets the table of contents (hidden: the sidebar shows it).
Every page links to its twin in the other edition (top right, and under the name in the sidebar).
Usage: python -m tools.site [--out DIR] [--chapters 00 02 ...]  (default: every chapter, into build/site)
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path, PurePath

import nbformat

from tools import links, series

try:
    import fcntl  # POSIX; on Windows the export is not shared between processes
except ImportError:   # pragma: no cover
    fcntl = None

ROOT = links.ROOT
THEME = ROOT / "tools" / "site_theme"
KATEX = ROOT / "tools" / "vendor" / "katex-0.19.1"
EDITIONS = {edition: series.notebooks(edition) for edition in series.EDITIONS}   # edition -> its chapters' folder
LABELS = {"en": "English", "ja": "日本語"}
TITLES = {"en": "Attention masks, settled", "ja": "アテンションマスク、これで決着"}
ROOT_DOC = series.START
REFERENCE = ("cheatsheet", "reference", "glossary", "run")   # the pages after the chapters, in this order
PRINT_MARK = '<div class="print-one-page"></div>'   # print.css lays out a page holding it on one A4 sheet
EXPLORERS_DIR = "explorers"                      # next to en/ and ja/: the static explorers both editions embed
RAW_ANCHOR = re.compile(r'<a id="([\w\-]+)"></a>')   # the glossary's anchors: MyST cannot link to raw HTML
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LOCAL_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+)\)")
TWIN_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\((?!https?:|mailto:|#)([^)\s]+)\)")   # [text](target), no image
WORDS = {
    "en": {"parts": ("Part 1: the two discussions", "Part 2: practice", "Part 3: the frontier"),
           "reference": "Reference", "twin": "This page in English",
           "launch": "Run this chapter: {colab} · {binder} · <a href=\"run.html\">on your machine</a>",
           "explorer": "A static explorer: every view was computed in advance, so it moves here with no kernel. "
                       "The live one recomputes as you move it: run the chapter. ",
           "open": "Open it on its own page"},
    "ja": {"parts": ("第 1 部：2 つの議論", "第 2 部：実践", "第 3 部：最前線"),
           "reference": "資料", "twin": "このページの日本語版",
           "launch": "この章を実行する：{colab} · {binder} · <a href=\"run.html\">手元で</a>",
           "explorer": "静的エクスプローラ：すべての表示をあらかじめ計算してあるため、カーネルなしでここで動く。"
                       "操作に応じて計算し直すライブ版は、章を実行すると使える。",
           "open": "単独のページで開く"},
}


# --- what each edition holds ---

def chapter_paths(edition: str, chapters: list[str] | None = None) -> list[Path]:
    """The edition's chapter notebooks, in order (only the numbers in `chapters`, if given)."""
    found = series.chapters(edition)
    if chapters is not None:
        found = [p for p in found if series.number(p) in chapters]
        if not any(p.stem == ROOT_DOC for p in found):
            raise ValueError(f"chapters must include 00 (the site's start page), got {chapters}")
    return found


def pages(edition: str, chapters: list[str] | None = None) -> list[str]:
    """Every page of the edition's site, by document name, in reading order: chapters, then REFERENCE."""
    return [p.stem for p in chapter_paths(edition, chapters)] + list(REFERENCE)


# --- the sources Sphinx reads ---

def _outside_link(edition: str):
    """A link rewriter: links that leave the notebooks folder (e.g. ../helpers/x.py) go to the file on GitHub."""
    folder = EDITIONS[edition]

    def rewrite(match: re.Match) -> str:
        target = match[1]
        path, _, anchor = target.partition("#")
        resolved = (folder / path).resolve()
        if not path or resolved.is_relative_to(folder) or not resolved.is_relative_to(ROOT):
            return match[0]
        url = links.source_url(resolved.relative_to(ROOT).as_posix()) + (f"#{anchor}" if anchor else "")
        return f"]({url})"
    return rewrite


def _twin_link(edition: str):
    """A link rewriter: a link to a page of the other edition (from the English glossary, ja/glossary.md) becomes
    an HTML link to that page of the other edition's site (../ja/glossary.html): MyST would look for it among
    this edition's own pages, and warn."""
    folder, other = EDITIONS[edition], series.other_edition(edition)

    def rewrite(match: re.Match) -> str:
        path, _, anchor = match[2].partition("#")
        resolved = (folder / path).resolve()
        if resolved.parent != EDITIONS[other].resolve() or resolved.suffix not in (".md", ".ipynb"):
            return match[0]
        href = f"../{other}/{resolved.stem}.html" + (f"#{anchor}" if anchor else "")
        return f'<a href="{html.escape(href)}">{html.escape(match[1])}</a>'
    return rewrite


def markdown(edition: str, source: str) -> str:
    """Markdown as the site reads it: links to the other edition go to its site, links out of the notebooks folder
    go to GitHub, and raw HTML anchors (<a id="x"></a>) become MyST targets ([]{#x}), so that links to them
    (glossary.md#x) resolve and are checked."""
    source = TWIN_LINK.sub(_twin_link(edition), source)
    return RAW_ANCHOR.sub(r"[]{#\1}", LOCAL_LINK.sub(_outside_link(edition), source))


def heading_anchor(text: str) -> str:
    """A heading's anchor as JupyterLab makes it (the chapters link to them: #Notes): its text, spaces as '-'."""
    return re.sub(r"\s+", "-", text.strip())


def launch_links(edition: str, notebook: str) -> str:
    """The HTML that replaces a chapter's launch cell: plain links, and the note that they work once the repository
    is published (links.published_note, its `code` as <code>)."""
    line = WORDS[edition]["launch"].format(colab=f'<a href="{links.colab_url(notebook)}">Colab</a>',
                                           binder=f'<a href="{links.binder_url(notebook)}">Binder</a>')
    note = re.sub(r"`([^`]+)`", r"<code>\1</code>", links.published_note(edition))
    return f'<p class="site-launch">{line}<br><small>{note}</small></p>'


def explorer_html(edition: str, stem: str, index: int) -> str:
    """The output in place of a live explorer's: the chapter's static explorer in an iframe, and a note."""
    src = f"../{explorers_folder(edition)}/{stem}.html"
    words = WORDS[edition]
    return (f'<iframe class="site-explorer" src="{src}?embed#explorer-{index + 1}" title="Static explorer" '
            f'style="height:32em"></iframe>'
            f'<p class="site-explorer-note">{html.escape(words["explorer"])}'
            f'<a href="{src}#explorer-{index + 1}">{html.escape(words["open"])}</a></p>')


def toctree(edition: str, names: list[str]) -> str:
    """The hidden tables of contents (chapter 0's last cell): the chapters by part (series.parts: chapter 0 is
    "self"), then the reference pages. A part with none of `names` gets no table."""
    words = WORDS[edition]
    chapters = [PurePath(f"{n}.ipynb") for n in names if n not in REFERENCE]
    trees = []
    for caption, part in zip(words["parts"], series.parts(chapters), strict=True):
        if part:
            entries = ["self" if p.stem == ROOT_DOC else p.stem for p in part]
            trees.append(f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n" + "\n".join(entries) + "\n```\n")
    trees.append(f"```{{toctree}}\n:hidden:\n:caption: {words['reference']}\n\n" + "\n".join(REFERENCE) + "\n```\n")
    return "\n".join(trees)


def prepare_notebook(nb: nbformat.NotebookNode, edition: str, notebook: str,
                     names: list[str] | None = None) -> nbformat.NotebookNode:
    """A copy of the chapter `nb` (path `notebook` from the repository root) as the site shows it (module doc)."""
    from tools import slides  # imports the chapters' modules (torch): only when building

    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)   # saved widget state: myst-nb would load the ipywidgets scripts from a CDN
    stem = Path(notebook).stem
    cells = []
    for cell in nb.cells:
        if cell.get("id") == links.SETUP_ID:
            continue
        if cell.get("id") == links.BADGE_ID:
            cell = nbformat.v4.new_markdown_cell(launch_links(edition, notebook), id=links.BADGE_ID)
        elif cell.cell_type == "markdown":
            cell.source = markdown(edition, cell.source)
        elif cell.cell_type == "code":
            explorer = slides.explorer_of(cell)
            if explorer:
                cell.outputs = [nbformat.v4.new_output(
                    "display_data", data={"text/html": explorer_html(edition, stem, explorer[1])})]
            else:
                cell.outputs = [o for o in cell.outputs
                                if "application/vnd.jupyter.widget-view+json" not in o.get("data", {})]
            if cell.metadata.get("jupyter", {}).get("source_hidden"):
                tags = cell.metadata.setdefault("tags", [])
                if "hide-input" not in tags:
                    tags.append("hide-input")
        cells.append(cell)
    if stem == ROOT_DOC:
        cells.append(nbformat.v4.new_markdown_cell(toctree(edition, names or pages(edition)), id="site-toctree"))
    nb.cells = cells
    return nb


def one_page(source: str) -> str:
    """A page printed on one sheet (the cheat sheet): its markdown with PRINT_MARK under the title, which
    site_theme/static/print.css looks for (body:has(.print-one-page))."""
    title, _, rest = source.partition("\n")
    return f"{title}\n\n{PRINT_MARK}\n{rest}"


def glossary_source(edition: str) -> str:
    """The glossary page: the edition's glossary.md (notebooks/glossary.md, notebooks/ja/glossary.md)."""
    return (EDITIONS[edition] / "glossary.md").read_text(encoding="utf-8")


def run_source(edition: str, chapters: list[Path]) -> str:
    """The page on how to run the series: Binder, Colab (a link per chapter), locally. URLs from tools/links.py."""
    folder = links.relative(EDITIONS[edition]) + "/"
    start = links.relative(series.start(edition))
    rows = "\n".join(f"| [{series.number(p)}]({p.stem}.ipynb) | [Colab]({links.colab_url(folder + p.name)}) "
                     f"| [Binder]({links.binder_url(folder + p.name)}) |" for p in chapters)
    readme = links.source_url("README.ja.md" if edition == "ja" else "README.md")
    repo = f"https://github.com/{links.REPOSITORY}"
    if edition == "ja":
        return f"""# シリーズを実行する

このサイトは、保存済みの出力をそのまま載せた読み物である。コードを動かし、エクスプローラをライブで操作し、
演習を解くには、ノートブックを実行する。方法は 3 つある。

## Binder（インストール不要）

[Binder で第 0 章を開く]({links.binder_url(start)})。Binder がリポジトリの環境（`binder/`）からイメージを作り、
ブラウザの中で JupyterLab を開く。初回の起動には数分かかる。GPU もダウンロードも要らない。

## Colab

各章を Colab で開くと、最初のコードセルが `helpers/` と日本語フォントをインストールする（Colab 以外では何もしない）。

| 章 | Colab | Binder |
|---|---|---|
{rows}

## 手元で（Linux、macOS、Windows）

Python 3.11 で、[リポジトリ]({repo})を clone してから：

```
make lab EDITION=ja                  # .venv を作り、固定した版をすべて入れ、日本語版の JupyterLab を開く
make lab EDITION=ja TORCH_INDEX=cpu  # Linux：CPU 版の torch（約 200 MB。既定は数 GB の CUDA 版）
make test                            # 全テスト（保存済みの出力との比較を含む）
```

make のない環境（Windows）では `py -3.11 tools\\dev.py lab --edition ja`。conda を使う場合や詳しい手順は
[README]({readme}) を参照のこと。

## このサイト

`make site` が `build/site/` にこのサイトを作る（ノートブックは実行しない。ネットワークも使わない）。公開先は
<{links.site_url()}>（GitHub Pages）。
"""
    return f"""# Run the series

This site shows the chapters with their stored outputs. To run the code, move the live explorers and try the
exercises, run the notebooks, in one of three ways.

## On Binder (nothing to install)

[Open chapter 0 on Binder]({links.binder_url(start)}). Binder builds an image from the repository's recipe
(`binder/`) and opens JupyterLab in your browser; the first start takes a few minutes. No GPU, no downloads.

## On Colab

Open any chapter on Colab: its first code cell installs `helpers/` and a Japanese font there (and does nothing
anywhere else).

| chapter | Colab | Binder |
|---|---|---|
{rows}

## On your machine (Linux, macOS, Windows)

With Python 3.11, clone [the repository]({repo}), then:

```
make lab                   # creates .venv, installs the exact pins, opens JupyterLab on chapter 0
make lab TORCH_INDEX=cpu   # Linux: torch's CPU build (~200 MB; the default is the multi-GB CUDA build)
make lab EDITION=ja        # the Japanese edition
make test                  # every test, the notebooks against their stored outputs included
```

Without make (Windows): `py -3.11 tools\\dev.py lab`. For conda and the details, see [the README]({readme}).

## This site

`make site` builds this site into `build/site/` (without running the notebooks, and with no network). It is
published at <{links.site_url()}> (GitHub Pages).
"""


def write_if_changed(path: Path, text: str) -> None:
    """Write text to path unless it holds it already (unchanged sources keep their time: Sphinx skips them)."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def prepare(edition: str, src: Path, chapters: list[str] | None = None) -> list[str]:
    """Write the edition's Sphinx sources into src (conf.py, the changed chapters, the pages); their names."""
    found = chapter_paths(edition, chapters)
    names = pages(edition, chapters)
    keep = {f"{n}.ipynb" for n in names if n not in REFERENCE} | {f"{n}.md" for n in REFERENCE} | {"conf.py"}
    if src.exists():
        for old in src.iterdir():
            if old.name not in keep and old.is_file():
                old.unlink()
    for path in found:
        notebook = links.relative(path)
        nb = prepare_notebook(nbformat.read(path, as_version=4), edition, notebook, names)
        write_if_changed(src / path.name, nbformat.writes(nb) + "\n")
    write_if_changed(src / "cheatsheet.md", markdown(edition, one_page((EDITIONS[edition] / "cheatsheet.md").read_text(
        encoding="utf-8"))))
    write_if_changed(src / "reference.md", markdown(edition, (EDITIONS[edition] / "reference.md").read_text(
        encoding="utf-8")))
    write_if_changed(src / "glossary.md", markdown(edition, glossary_source(edition)))
    write_if_changed(src / "run.md", run_source(edition, found))
    write_if_changed(src / "conf.py", "# Written by tools/site.py: the configuration is tools.site.sphinx_config.\n"
                     f"import sys\n\nsys.path.insert(0, {str(ROOT)!r})\n"
                     "from tools.site import sphinx_config, setup  # noqa: E402,F401\n\n"
                     f"globals().update(sphinx_config({edition!r}))\n")
    return names


def cjk_css(html_dir: Path) -> str:
    """The CJK web font (helpers.cjk_font) as an @font-face cut to every CJK character of the built edition in
    html_dir (its pages, and the scripts' messages: the search page's), and a hidden line of those characters that
    loads it with the page (Chromium may keep boxes for text shaped while the font was still loading). site.css puts
    the family before the generic ones, so Japanese text and 犬 猫 鳥 draw on a machine without Japanese fonts."""
    from helpers import cjk_font

    files = sorted(html_dir.glob("*.html")) + sorted((html_dir / "_static").glob("*.js"))
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
    rule = cjk_font.css(text)
    chars = rule.split(" cut to ", 1)[1].split(" */", 1)[0]
    return (f"{rule}\nbody::after{{content:'{chars}';font-family:'{cjk_font.FAMILY}';position:absolute;left:-999px;"
            "top:0;visibility:hidden}\n")


# --- Sphinx ---

def sphinx_config(edition: str) -> dict:
    """The Sphinx configuration of one edition (conf.py takes it as it is)."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {sorted(EDITIONS)}, got {edition!r}")
    return {
        "project": TITLES[edition],
        "html_title": TITLES[edition],
        "language": edition,
        "root_doc": ROOT_DOC,
        "extensions": ["myst_nb"],
        "exclude_patterns": ["conf.py"],
        "nb_execution_mode": "off",          # the committed outputs, as they are
        "nb_ipywidgets_js": {},               # no widget scripts from a CDN (the explorers are static)
        "nb_merge_streams": True,
        "myst_enable_extensions": ["dollarmath", "attrs_inline"],
        "myst_heading_anchors": 4,
        "myst_heading_slug_func": "tools.site.heading_anchor",
        "mathjax_path": "katex/site-math.js",  # KaTeX from tools/vendor/ in place of MathJax from a CDN
        "html_theme": "furo",
        "html_static_path": [str(THEME / "static")],
        "templates_path": [str(THEME / "templates")],
        "html_css_files": ["cjk.css", "site.css", "print.css", "frames.css", "katex/katex.min.css"],
        "html_js_files": ["site.js", "frames.js"],
        "html_search_scorer": str(THEME / "search-scorer.js"),   # ties in reading order, not "1., 10., 11."
        "html_sidebars": {"**": ["sidebar/brand.html", "sidebar/language.html", "sidebar/search.html",
                                 "sidebar/scroll-start.html", "sidebar/navigation.html", "sidebar/scroll-end.html"]},
        "html_theme_options": {"top_of_page_buttons": ["view"], "navigation_with_keys": True},
        "html_baseurl": links.site_url(edition),
        "html_show_sourcelink": False,
        "html_copy_source": False,
        "html_show_copyright": False,
        "html_context": {"site_edition": edition, "site_editions": list(LABELS.items())},
        "suppress_warnings": ["myst.header"],   # chapters start at "#", then "##": some skip a level on purpose
    }


def _page_context(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Each page's twin in the other edition (same name: both editions have the same pages)."""
    other = series.other_edition(app.config.language)
    context["site_twin"] = f"../{other}/{pagename}.html"
    context["site_twin_lang"] = other
    context["site_twin_label"] = LABELS[other]
    context["site_twin_title"] = WORDS[other]["twin"]


def _copy_katex(app, exception) -> None:
    """KaTeX (tools/vendor/) into _static/katex/, with site-math.js: KaTeX, its auto-render and the call."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "katex"
    shutil.copytree(KATEX, target, dirs_exist_ok=True)
    call = ('document.addEventListener("DOMContentLoaded", function () {\n'
            '  document.querySelectorAll(".math").forEach(function (el) {\n'
            '    renderMathInElement(el, {delimiters: [{left: "\\\\[", right: "\\\\]", display: true},\n'
            '      {left: "\\\\(", right: "\\\\)", display: false}], throwOnError: false});\n'
            "  });\n});\n")
    (target / "site-math.js").write_text((KATEX / "katex.min.js").read_text(encoding="utf-8") + "\n"
                                         + (KATEX / "auto-render.min.js").read_text(encoding="utf-8") + "\n"
                                         + call, encoding="utf-8")


def setup(app) -> dict:
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _copy_katex)
    return {"parallel_read_safe": True}


def sphinx_command(src: Path, out: Path, doctrees: Path, warnings: Path) -> list[str]:
    """Sphinx's html builder on src into out, quietly, its warnings into the file `warnings`."""
    return [sys.executable, "-m", "sphinx", "-b", "html", "-q", "--keep-going", "-d", str(doctrees),
            "-w", str(warnings), str(src), str(out)]


def sphinx_builds(jobs: list[tuple[Path, Path, Path]]) -> list[list[str]]:
    """Run Sphinx on each (src, out, doctrees) at once, one process each (docutils keeps global state: two
    builds in one process warn about every node registered twice); each build's warnings. A failure raises."""
    runs = []
    for src, out, doctrees in jobs:
        log = doctrees.with_suffix(".warnings.txt")
        log.parent.mkdir(parents=True, exist_ok=True)
        runs.append((log, subprocess.Popen(sphinx_command(src, out, doctrees, log), cwd=ROOT,
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    found = []
    for log, process in runs:
        output, _ = process.communicate()
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        if process.returncode:
            raise RuntimeError(f"Sphinx failed ({' '.join(process.args)}):\n{output}\n{text}")
        found.append([ANSI.sub("", line) for line in text.splitlines() if line.strip()])
    return found


# --- the static explorers and the root page ---

def explorers_folder(edition: str) -> str:
    """Where an edition's static explorers are, from the site's root: explorers/ (English), explorers/ja/."""
    return series.edition_folder(PurePath(EXPLORERS_DIR), edition).as_posix()


def export_explorers(out: Path, chapters: list[str] | None = None) -> list[Path]:
    """Each chapter's static explorer, in each edition's language (helpers.language), into out/explorers/ and
    out/explorers/ja/ (a file made from the same code, explorers_key, is kept)."""
    import torch

    torch.set_num_threads(1)   # the explorers' tiny tensors
    folder = out / EXPLORERS_DIR
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".explorers.lock", "w") as lock:   # test workers share build/site: one writes, the others wait
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        return _export_explorers(out, folder, chapters)


def _export_explorers(out: Path, folder: Path, chapters: list[str] | None) -> list[Path]:
    from helpers import chapters as known
    from tools import static_explorers

    stamp = folder / ".made-from"
    made_from = explorers_key()
    if not stamp.exists() or stamp.read_text() != made_from:
        shutil.rmtree(folder, ignore_errors=True)   # made from other code: make every file again
    written = []
    for chapter, name in known.chapters().items():
        if (chapters is not None and chapter not in chapters) or not known.explorers(chapter):
            continue
        for edition in EDITIONS:
            path = out / explorers_folder(edition) / f"{name[2:]}.html"
            if path.exists():
                written.append(path)   # made from the same code: the views would be the same
                continue
            written.append(static_explorers.export(chapter, path.parent, edition).path)
    folder.mkdir(parents=True, exist_ok=True)
    stamp.write_text(made_from)
    return written


def explorers_key() -> str:
    """What the static explorers are made from: helpers/ (sources), the chapters' first headings and torch's
    version, hashed; an explorer file made from the same is reused."""
    import torch

    digest = hashlib.sha256(f"{torch.__version__}\n".encode())
    for path in sorted((ROOT / "helpers").rglob("*")):
        if path.suffix in (".py", ".woff") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(ROOT).as_posix().encode() + path.read_bytes())
    for path in series.every_chapter():
        digest.update(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"].__repr__().encode())
    return digest.hexdigest()


def root_index(out: Path) -> Path:
    """out/index.html: the two editions."""
    items = "".join(f'<li><a href="{code}/index.html" hreflang="{code}" lang="{code}">{html.escape(TITLES[code])}'
                    f"</a> <span>({LABELS[code]})</span></li>" for code in EDITIONS)
    path = out / "index.html"
    path.write_text('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                    '<meta name="viewport" content="width=device-width, initial-scale=1">'
                    f"<title>{html.escape(TITLES['en'])}</title>"
                    "<style>body{font-family:system-ui,sans-serif;margin:2em auto;max-width:40em;padding:0 1em;"
                    "line-height:1.5}li{margin:0.5em 0;font-size:1.2em}</style></head><body>"
                    f"<h1>{html.escape(TITLES['en'])}</h1><p>Padding and causal masks in PyTorch attention, "
                    "step by step. / PyTorch のアテンションにおけるパディングマスクと因果マスクを一歩ずつ。</p>"
                    f"<ul>{items}</ul></body></html>\n", encoding="utf-8")
    return path


def edition_index(out: Path, edition: str) -> Path:
    """out/<edition>/index.html: the start page (chapter 0) under the name a web server serves for the folder."""
    path = out / edition / "index.html"
    path.write_text(f'<!DOCTYPE html>\n<html lang="{edition}"><head><meta charset="utf-8">'
                    f'<meta http-equiv="refresh" content="0; url={ROOT_DOC}.html">'
                    f"<title>{html.escape(TITLES[edition])}</title></head><body>"
                    f'<a href="{ROOT_DOC}.html">{html.escape(TITLES[edition])}</a></body></html>\n',
                    encoding="utf-8")
    return path


def build(out: Path, chapters: list[str] | None = None, work: Path | None = None) -> dict[str, list[str]]:
    """The whole site into out (only the chapters numbered in `chapters`, with 00, if given); the sources and
    Sphinx's caches go to `work` (default: out's sibling <out>-src). Returns each edition's warnings."""
    work = work or out.with_name(out.name + "-src")
    start = time.perf_counter()
    export_explorers(out, chapters)
    explored = time.perf_counter()
    for edition in EDITIONS:
        prepare(edition, work / edition, chapters)
    prepared = time.perf_counter()
    found = sphinx_builds([(work / e, out / e, work / f"doctrees-{e}") for e in EDITIONS])
    shutil.rmtree(out / "jupyter_execute", ignore_errors=True)  # myst-nb's copies of the outputs, next to outdir
    for edition in EDITIONS:
        write_if_changed(out / edition / "_static" / "cjk.css", cjk_css(out / edition))
        edition_index(out, edition)
    root_index(out)
    (out / ".nojekyll").write_text("")   # GitHub Pages: serve _static/ and _images/ (Jekyll would drop them)
    print(f"static explorers {explored - start:.1f} s, sources {prepared - explored:.1f} s, "
          f"Sphinx (both editions at once) {time.perf_counter() - prepared:.1f} s")
    return dict(zip(EDITIONS, found, strict=True))


class _Links(HTMLParser):
    """A page's ids, and the local addresses it links to or loads (href, src)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value and not (tag == "meta" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src") and value and not re.match(r"[a-z][a-z0-9+.\-]*:", value):
                self.targets.append(value)


def broken_links(out: Path) -> list[tuple[str, str]]:
    """Every (page, address) in the site at out whose local target is missing: a file, or an id in a page."""
    parsed: dict[Path, _Links] = {}

    def parse(path: Path) -> _Links:
        if path not in parsed:
            parsed[path] = _Links()
            parsed[path].feed(path.read_text(encoding="utf-8", errors="replace"))
        return parsed[path]

    broken = []
    for page in sorted(out.rglob("*.html")):
        for target in parse(page).targets:
            address, _, anchor = target.partition("#")
            address = address.split("?", 1)[0]
            path = (page.parent / address).resolve() if address else page
            inside = path.is_relative_to(out.resolve()) or path == page
            if not inside or not path.exists():
                broken.append((page.relative_to(out).as_posix(), target))
            elif anchor and path.suffix == ".html" and anchor not in parse(path).ids:
                broken.append((page.relative_to(out).as_posix(), target))
    return broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    parser.add_argument("--chapters", nargs="*", help="chapter numbers (default: all; 00 is always needed)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    chapters = [c.zfill(2) for c in args.chapters] if args.chapters else None
    warnings = build(args.out.resolve(), chapters)
    for edition, found in warnings.items():
        for line in found:
            print(f"{edition}: {line}", file=sys.stderr)
    print(f"site: {args.out / 'index.html'} ({time.perf_counter() - start:.1f} s; "
          f"{sum(map(len, warnings.values()))} warnings); publish: {links.site_url()}")
    broken = broken_links(args.out.resolve())
    for page, target in broken:
        print(f"broken link: {page} -> {target}", file=sys.stderr)
    print(f"{len(broken)} broken local links")
    # the whole site must build clean (a part of it links to chapters it leaves out)
    return 1 if chapters is None and (broken or any(warnings.values())) else 0


if __name__ == "__main__":
    sys.exit(main())
