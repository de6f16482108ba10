"""Export chapters to reveal.js slide decks: `make slides` -> build/slides/<notebook>.slides.html.

The notebooks carry no slide metadata of their own (their authors regenerate them), so each copy is
tagged here, by rules, before nbconvert's SlidesExporter runs:
- a markdown cell starting with "# " or "## " starts a new slide, "### " a sub-slide;
- another markdown cell right after a code cell starts a sub-slide (the next step), else it stays on the slide,
  unless the slide would then hold more than SLIDE_TEXT characters of markdown (a line of code or output counts
  CODE_LINE): then it starts a sub-slide, and so does a code cell that would pass it; a markdown cell longer
  than SLIDE_TEXT is cut at blank lines into parts that start sub-slides (split_markdown), a table longer than
  TABLE_ROWS rows into parts under the same header (split_table), and a printed output longer than OUTPUT_LINES
  lines (wrapped at LINE_CHARS) into parts on sub-slides of their own, the input hidden (split_output);
- a code cell is a fragment (it appears on the next click); one longer than LONG_CODE lines shows only
  its output (input hidden), or is skipped if it has no output;
- a code cell that draws a figure (an image output) starts a sub-slide of its own, so the figure fits;
  its code shows only if it is at most FIGURE_CODE lines long;
- an explorer cell (`chNN.<name>()`, a name in the chapter's EXPLORERS) becomes a sub-slide of its own showing the
  chapter's static explorer (helpers/static_explorer.py) in an iframe: <out>/explorers/NN_<stem>.html?embed&deck,
  written next to the decks by export(), so it moves with no kernel and no network; the explorer's page reflows
  its view to the frame (at most EXPLORER_HEIGHT tall), draws its text at static_explorer.DECK_TEXT_PX and posts
  its height, which the template gives the frame;
- skipped: cells whose first line is `# NBVAL_IGNORE_OUTPUT` (timings that differ run to run), the code cell
  right after a hidden solution (<details>) that runs it, and empty cells;
- a cell that already has `slideshow` metadata in the notebook keeps it;
- links to other chapters (NN_name.ipynb) point to their decks (NN_name.slides.html).
The decks work from disk with no network: the template in tools/slides_template/offline loads no CDN script
(no jQuery, require.js or MathJax); reveal.js and KaTeX (which renders the markdown's $...$ and $$...$$ math)
come from tools/vendor/, copied to <out>/reveal.js/ and <out>/katex/. Figures are capped to the slide's height
and long lines wrap. In the browser, the template fits each slide to the screen (all fragments shown): a printed
table too wide for the slide gets a smaller font rather than wrapping, and a slide still too tall is zoomed out,
down to 60 %; but no text is made smaller than 14 px on a 1280 x 720 screen (the template's MIN_TEXT: a table
that would need less wraps, and a slide zooms out no further than its smallest text allows)
(tests/browser/test_deck_fit.py). Each deck embeds the CJK web font (helpers.cjk_font) cut to the
CJK characters it holds, so its Japanese glyphs draw on a machine without Japanese fonts (font_css).
Usage: python -m tools.slides [NOTEBOOK ...] [--edition en|ja] [--out DIR]  (default: every notebooks/NN_*.ipynb
into build/slides; with --edition ja every notebooks/ja/NN_*.ipynb into build/slides/ja, <html lang="ja">)
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
import unicodedata
from pathlib import Path

import nbformat
import torch
from nbconvert import SlidesExporter
from traitlets.config import Config

from helpers import chapters, cjk_font
from tools import series, static_explorers

ROOT = series.ROOT
LONG_CODE = 15          # lines; longer code cells show their output only
FIGURE_CODE = 6         # lines; a figure's code longer than this is hidden, leaving the slide to the figure
HIDE_INPUT = "slides-hide-input"
TEMPLATES = ROOT / "tools" / "slides_template"
REVEAL = ROOT / "tools" / "vendor" / "reveal.js-5.2.1"
REVEAL_DIR = "reveal.js"  # next to the decks; the template loads <REVEAL_DIR>/dist/reveal.{js,css}
KATEX = ROOT / "tools" / "vendor" / "katex-0.19.1"
KATEX_DIR = "katex"       # next to the decks; the template loads katex/katex.min.{js,css}, katex/auto-render.min.js
CHAPTER_LINK = re.compile(r"\]\((\d\d_[\w.\-]*?)\.ipynb(#[^)\s]*)?\)")
SLIDE_TEXT = 1800      # characters of markdown on one slide; a cell that would pass it starts a sub-slide
CODE_LINE = 80         # a line of code or output fills about as much of a slide as this many characters of text
LINE_CHARS = 76        # characters of code or output on one line of a slide; a longer line wraps
OUTPUT_LINES = 20      # lines of printed output on one slide; the rest goes on to the next sub-slides
TABLE_ROWS = 12        # rows of a markdown table on one slide; the rest (under the same header) on the next
TABLE_LOAD = 1200      # and no more rows than fill this much of a slide (markdown_load: long rows wrap)
EXPLORER_CALL = re.compile(r"ch(\d\d)\.(\w+)\(\)")
EXPLORERS_DIR = "explorers"  # next to the decks: the static explorers their iframes load
EXPLORER_HEIGHT = 650       # px of the 700 px slide: the most an explorer's frame takes (its view reflows to fit)


def explorer_of(cell: nbformat.NotebookNode) -> tuple[str, int] | None:
    """(chapter, index in its EXPLORERS) if the cell is a bare call of one of the chapter's explorers, else None."""
    found = EXPLORER_CALL.fullmatch(cell.source.strip()) if cell.cell_type == "code" else None
    if not found:
        return None
    names = [make.__name__ for make in chapters.explorers(found[1])]
    return (found[1], names.index(found[2])) if found[2] in names else None


def explorer_file(chapter: str) -> str:
    """The static explorer's file, relative to the decks."""
    return f"{EXPLORERS_DIR}/{chapters.chapters()[chapter][2:]}.html"


def explorer_output(chapter: str, index: int) -> nbformat.NotebookNode:
    """The output that replaces a live explorer's: an iframe of the chapter's static explorer."""
    src = f"{explorer_file(chapter)}?embed&amp;deck&amp;room={EXPLORER_HEIGHT}#explorer-{index + 1}"
    frame = (f'<iframe class="deck-explorer" src="{src}" title="Static explorer" data-room="{EXPLORER_HEIGHT}" '
             f'style="width:100%;height:{EXPLORER_HEIGHT}px;border:1px solid #ddd;display:block"></iframe>')
    return nbformat.v4.new_output("display_data", data={"text/html": frame})


def _heading(source: str) -> int:
    """1, 2, 3 for a cell starting with '# ', '## ', '### '; 0 otherwise."""
    first = source.lstrip().split("\n", 1)[0]
    for level in (1, 2, 3):
        if first.startswith("#" * level + " "):
            return level
    return 0


def slide_type(cell: nbformat.NotebookNode, previous: nbformat.NotebookNode | None) -> tuple[str, bool]:
    """(slide_type, hide_input) for one cell, by the rules in the module docstring."""
    source = cell.source.strip()
    if not source:
        return "skip", False
    if cell.cell_type == "markdown":
        level = _heading(source)
        if level in (1, 2):
            return "slide", False
        if level == 3 or (previous is not None and previous.cell_type == "code"):
            return "subslide", False
        return "-", False
    if cell.cell_type != "code":
        return "skip", False
    if source.startswith("# NBVAL_IGNORE_OUTPUT"):
        return "skip", False
    if explorer_of(cell):
        return "subslide", True
    if previous is not None and previous.cell_type == "markdown" and "<details>" in previous.source:
        return "skip", False
    lines = len(source.splitlines())
    if any("image/png" in output.get("data", {}) for output in cell.get("outputs", [])):
        return "subslide", lines > FIGURE_CODE
    if lines > LONG_CODE:
        return ("fragment", True) if cell.get("outputs") else ("skip", False)
    return "fragment", False


def width(text: str) -> int:
    """The text's width in Latin characters: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def shown_lines(text: str) -> int:
    """The lines a block of code or printed text takes on a slide: each line, wrapped at LINE_CHARS."""
    return sum(max(1, -(-width(line) // LINE_CHARS)) for line in text.splitlines())


def markdown_load(source: str) -> int:
    """How much of a slide markdown fills, in characters: its prose's width (a CJK character counts two), and
    CODE_LINE per line of its code blocks and tables."""
    prose, fence = 0, False
    for line in source.splitlines():
        fenced = line.lstrip().startswith("```")
        fence ^= fenced
        row = fence or fenced or line.lstrip().startswith("|")
        prose += CODE_LINE * shown_lines(line) if row else width(line) + 1
    return prose


def load(cell: nbformat.NotebookNode, hide_input: bool) -> int:
    """How much of a slide the cell fills, in characters of markdown: a markdown cell its prose's length and
    CODE_LINE per line of its code blocks and tables, a code cell CODE_LINE per line of code (unless hidden) and
    of printed output, wrapped (a figure: a sub-slide of its own anyway)."""
    if cell.cell_type == "markdown":
        return markdown_load(cell.source)
    lines = 0 if hide_input else shown_lines(cell.source.strip())
    for output in cell.get("outputs", []):
        text = output.get("text") or output.get("data", {}).get("text/plain", "")
        html = output.get("data", {}).get("text/html", "")
        lines += html.count("<tr") if html else shown_lines("".join(text))
    return CODE_LINE * lines


def deck_links(source: str) -> str:
    """Markdown with links to chapters (NN_name.ipynb[#anchor]) pointing at their decks."""
    return CHAPTER_LINK.sub(lambda m: f"]({m[1]}.slides.html{m[2] or ''})", source)


def split_markdown(source: str, limit: int = SLIDE_TEXT) -> list[str]:
    """A long markdown cell cut into parts of at most ~limit characters (markdown_load) at blank lines (paragraphs,
    lists, tables stay whole), never inside a fenced code block or a cell with raw HTML blocks; a short cell stays
    one part."""
    if markdown_load(source) <= limit or re.search(r"^\s*<(details|div|table)", source, re.M):
        return [source]
    blocks, fence = [""], False
    for line in source.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        if not line.strip() and not fence and blocks[-1].strip():
            blocks.append("")
        else:
            blocks[-1] += line + "\n"
    parts = [""]
    for block in (b for b in blocks if b.strip()):
        if parts[-1] and markdown_load(parts[-1]) + markdown_load(block) > limit:
            parts.append("")
        parts[-1] += block + "\n"
    return [part.strip("\n") for part in parts]


def split_table(source: str, limit: int = TABLE_ROWS) -> list[str]:
    """A markdown cell whose tables have more than `limit` rows cut into parts, each later part a table of the
    next rows under the same header (the text before and after the table stays with its first and last part)."""
    lines, parts, table = source.split("\n"), [[]], []

    def flush() -> None:
        header, body = table[:2], table[2:]
        chunks = [[]]
        for row in body:   # at most `limit` rows, and no more than TABLE_LOAD of them (long rows wrap)
            if chunks[-1] and (len(chunks[-1]) >= limit or markdown_load("\n".join([*chunks[-1], row])) > TABLE_LOAD):
                chunks.append([])
            chunks[-1].append(row)
        parts[-1] += header + chunks[0]
        parts.extend([*header, *chunk] for chunk in chunks[1:])
        table.clear()

    for line in lines:
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            flush()
        parts[-1].append(line)
    if table:
        flush()
    return ["\n".join(part).strip("\n") for part in parts]


def split_output(cell: nbformat.NotebookNode, limit: int = OUTPUT_LINES) -> list[nbformat.NotebookNode]:
    """A code cell and, if its printed text (stream outputs of one name, nothing else) takes more than `limit` lines
    on a slide (shown_lines), copies of it with the input hidden that print the rest, `limit` lines each."""
    outputs = cell.get("outputs", [])
    if not outputs or any(o.get("output_type") != "stream" or o.get("name") != outputs[0].get("name") for o in outputs):
        return [cell]
    printed = "".join("".join(o.text) for o in outputs)
    if shown_lines(printed) <= limit:
        return [cell]
    streams, chunks, lines = outputs[:1], [[]], printed.splitlines(keepends=True)
    for line in lines:
        if chunks[-1] and shown_lines("".join(chunks[-1]) + line) > limit:
            chunks.append([])
        chunks[-1].append(line)
    cell.outputs = [nbformat.v4.new_output("stream", name=streams[0].name, text="".join(chunks[0]))]
    cells = [cell]
    for k, chunk in enumerate(chunks[1:], 1):
        more = nbformat.v4.new_code_cell(cell.source, id=f"{cell.get('id', 'cell')}-output{k}")
        more.outputs = [nbformat.v4.new_output("stream", name=streams[0].name, text="".join(chunk))]
        more.metadata["slideshow"] = {"slide_type": "subslide"}
        more.metadata["tags"] = [HIDE_INPUT]
        cells.append(more)
    return cells


def split_cells(nb: nbformat.NotebookNode) -> None:
    """Replace, in place, each markdown cell too long for one slide by its parts (split_markdown, split_table); the
    later parts start sub-slides. A cell with slideshow metadata of its own stays whole. (A code cell's long
    output is split by tag_cells, which knows whether the cell is shown: split_output.)"""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "slideshow" in cell.metadata:
            cells.append(cell)
            continue
        parts = [piece for part in split_markdown(cell.source) for piece in split_table(part)]
        cell.source = parts[0]
        cells.append(cell)
        for k, part in enumerate(parts[1:], 1):
            more = nbformat.v4.new_markdown_cell(part, id=f"{cell.get('id', 'cell')}-part{k}")
            more.metadata["slideshow"] = {"slide_type": "subslide"}
            cells.append(more)
    nb.cells = cells


def tag_cells(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of nb with slideshow metadata on every cell (explicit metadata in nb wins), links to decks."""
    nb = copy.deepcopy(nb)
    split_cells(nb)
    previous, text_on_slide, cells, queue = None, 0, [], list(nb.cells)
    while queue:
        cell = queue.pop(0)
        cells.append(cell)
        if cell.cell_type == "markdown":
            cell.source = deck_links(cell.source)
        explorer = explorer_of(cell)
        if explorer:
            cell.outputs = [explorer_output(*explorer)]
        if "slideshow" not in cell.metadata:
            kind, hide_input = slide_type(cell, previous)
            if kind != "skip" and cell.cell_type == "code" and not explorer:
                queue[:0] = split_output(cell)[1:]   # the rest of a long output: sub-slides of its own
            if kind in ("-", "fragment") and text_on_slide > 0 and text_on_slide + load(cell, hide_input) > SLIDE_TEXT:
                kind = "subslide"   # too much for one slide: this paragraph or code starts the next one
            cell.metadata["slideshow"] = {"slide_type": kind}
            if hide_input:
                cell.metadata.setdefault("tags", []).append(HIDE_INPUT)
        kind = cell.metadata["slideshow"].get("slide_type")
        if kind in ("slide", "subslide"):
            text_on_slide = 0
        if kind != "skip":
            previous = cell
            text_on_slide += load(cell, HIDE_INPUT in cell.metadata.get("tags", ()))
    nb.cells = cells
    return nb


def exporter(language: str = "en") -> SlidesExporter:
    config = Config()
    config.SlidesExporter.language_code = language     # <html lang>: "ja" lets the browser pick Japanese glyphs
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_input_tags = {HIDE_INPUT}
    config.SlidesExporter.reveal_url_prefix = REVEAL_DIR
    config.SlidesExporter.reveal_theme = "white"       # the theme copied by copy_reveal
    config.SlidesExporter.exclude_input_prompt = True
    config.SlidesExporter.exclude_output_prompt = True
    return SlidesExporter(config=config, extra_template_basedirs=[str(TEMPLATES)], template_name="offline")


def copy_reveal(out_dir: Path) -> None:
    """The vendored reveal.js files, laid out as the template loads them: <out_dir>/reveal.js/dist/..."""
    dist = out_dir / REVEAL_DIR / "dist"
    (dist / "theme").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REVEAL / "reveal.js", dist / "reveal.js")
    shutil.copyfile(REVEAL / "reveal.css", dist / "reveal.css")
    shutil.copyfile(REVEAL / "white.css", dist / "theme" / "white.css")
    shutil.copyfile(REVEAL / "LICENSE", out_dir / REVEAL_DIR / "LICENSE")
    shutil.copytree(KATEX, out_dir / KATEX_DIR, dirs_exist_ok=True)


def font_css(body: str) -> str:
    """A <style> for the deck: the CJK web font (helpers.cjk_font) cut to every CJK character in the deck, first in
    line before the generic family of reveal.js's and JupyterLab's font lists, so 犬 猫 鳥 (and a Japanese deck's
    text) draw on a machine without Japanese fonts; a hidden line of those characters loads it with the page."""
    rule = cjk_font.css(body)
    chars = rule.split(" cut to ", 1)[1].split(" */", 1)[0]
    cjk = f"'{cjk_font.FAMILY}'"
    return (f"<style>{rule}\n"
            f".reveal{{--r-main-font:'Source Sans Pro',Helvetica,{cjk},sans-serif;"
            f"--r-heading-font:'Source Sans Pro',Helvetica,{cjk},sans-serif;"
            f"--r-code-font:menlo,consolas,'DejaVu Sans Mono',{cjk},monospace}}\n"
            f"body{{--jp-content-font-family:system-ui,-apple-system,blinkmacsystemfont,'Segoe UI',helvetica,arial,"
            f"{cjk},sans-serif;--jp-code-font-family:var(--jp-code-font-family-default),{cjk}}}\n"
            f"body::after{{content:'{chars}';font-family:{cjk};position:absolute;left:-999px;top:0;"
            f"visibility:hidden}}</style>")


def export(path: Path, out_dir: Path, explorers: bool = True) -> Path:
    """Tag a copy of the notebook at path and write its deck to out_dir/<stem>.slides.html; with `explorers`,
    also the chapter's static explorer to out_dir/explorers/ (precomputed: up to ~15 s for the biggest grid).
    Each out_dir is whole on its own (reveal.js, KaTeX, explorers): the Japanese decks go to a folder of theirs."""
    nb = tag_cells(nbformat.read(path, as_version=4))
    edition = series.edition_of(path.resolve())
    if explorers and chapters.explorers(series.number(path)) and chapters.module(path.stem) is not None:
        static_explorers.export(series.number(path), out_dir / EXPLORERS_DIR, edition)
    body, _ = exporter(edition).from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    body = body.replace("</head>", font_css(body) + "\n</head>", 1)
    out_dir.mkdir(parents=True, exist_ok=True)
    copy_reveal(out_dir)
    target = series.deck(path, out_dir)
    target.write_text(body, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--edition", choices=series.EDITIONS, default="en",
                        help="without NOTEBOOKs: the English chapters (notebooks/) or the Japanese (notebooks/ja/)")
    parser.add_argument("--out", type=Path, help="default: build/slides (en), build/slides/ja (ja)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the static explorers' tiny tensors: one thread is fastest on a busy machine
    notebooks = args.notebooks or series.chapters(args.edition)
    if args.out is None:
        args.out = series.decks_folder(args.edition)
    for path in notebooks:
        print(f"{path} -> {export(path, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
