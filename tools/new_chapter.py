"""Add a chapter to the series: `python -m tools.new_chapter NN stem "Title"` (from the repository root).

It writes, where tools/series.py says they go:
- notebooks/NN_<stem>.ipynb, the skeleton of a chapter: its title with the links to its neighbours, learning goals,
  a rule box, the set-up (the badge and Colab set-up cells come from tools/links.py), two steps with asserts, an
  explorer (its static figure first, then the live one), one "Check yourself" exercise with its check and hidden
  solution, and a summary. It runs as it is; every text in brackets is left to write;
- notebooks/ja/NN_<stem>.ipynb, its Japanese twin, built by tools/ja_sync.py from the English skeleton with a
  Japanese translation of the skeleton's own text. Each Japanese markdown cell records the hash of the English
  text it translates, so tests/test_japanese_edition.py passes now and names each cell once its English text is
  written (translate it, then `python -m tools.ja_sync --add DIR`);
- helpers/chapters/chNN_<stem>.py, the module: a placeholder function, the explorer's view and explorer functions,
  EXPLORERS, and check_1; and tests/chapters/test_chNN_<stem>.py, its test module;
and registers the chapter in every list: both READMEs' chapter lists and the map in chapter 0 (both editions), where
it joins the last of the series' three parts (tools/series.py, PARTS; the site's table of contents follows), the
previous chapter's "next" link (both editions; the new chapter takes over the link back to chapter 0), the table
in docs/teaching.md (its step and exercise counts are the skeleton's) and the browser test's EXPECTED moves
(tests/browser/test_notebooks.py, for the skeleton's explorer). Then it runs both new notebooks from a fresh
kernel to store their outputs (tools/execute_notebooks.py; --no-execute skips it).

NN must be the next chapter's number (the chapters are 00, 01, ... with no gap), stem lower-case words joined by
"_", Title one line; anything else is refused with exit code 2. --ja-title gives the Japanese title (the lists
of the Japanese edition; the English title until then). What is left by hand is listed in README.md, "Adding a
chapter".
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

from tools import ja_sync, links, series
from tools.dev import ROOT

STEM = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
STEPS, EXERCISES = 2, 1                 # the skeleton's "## Step N" headings and exercises (docs/teaching.md)
START = f"{series.START}.ipynb"
BROWSER_TEST = Path("tests", "browser", "test_notebooks.py")
SOLUTION = {"jupyter": {"source_hidden": True}, "tags": ["solution"]}


def lower_first(title: str) -> str:
    """"Masks in training" -> "masks in training" (the form a "Chapter N: ..." link uses); "FlexAttention" and "KV
    caches" stay."""
    word = title.split()[0]
    return title[0].lower() + title[1:] if word[1:] == word[1:].lower() else title


def nav(edition: str, previous: Path, previous_title: str) -> str:
    """The title cell's line of links: the previous chapter, the way back to chapter 0 (the last chapter's), the
    cheat sheet."""
    number = int(series.number(previous))
    if edition == "en":
        return (f"[← Chapter {number}: {lower_first(previous_title)}]({previous.name}) · [The end for now: back to "
                f"chapter 0, start here →]({START}) · [cheat sheet](cheatsheet.md)")
    return (f"[← 第 {number} 章 {previous_title}]({previous.name}) · [ひとまずここまで：第 0 章「ここから始める」へ"
            f"戻る →]({START}) · [チートシート](cheatsheet.md)")


def next_link(edition: str, name: str, title: str) -> str:
    """The previous chapter's link to the new one."""
    number = int(series.number(name))
    if edition == "en":
        return f"[Chapter {number}: {lower_first(title)} →]({name})"
    return f"[第 {number} 章 {title} →]({name})"


# --- the notebook skeleton: (id, kind, English, Japanese) per cell; {m} is the module's short name (ch14) ---

def skeleton(number: int, name: str, module: str, title: str, ja_title: str, navs: dict[str, str]) -> list[tuple]:
    m = f"ch{number:02d}"
    code_path = f"helpers/chapters/{module}.py"
    md, code = "markdown", "code"
    return [
        ("title", md,
         f"# {number}. {title}\n\n{navs['en']}\n\n[The question this chapter settles, in a paragraph: what goes "
         "wrong without it, and what the reader can do after it.]",
         f"# {number}. {ja_title}\n\n{navs['ja']}\n\n［この章が決着をつける疑問を 1 段落で書く。それがないと何が"
         "まずいのか、読み終えると何ができるのか。］"),
        ("goals", md,
         "**Learning goals.** After this chapter you can\n1. [the first thing the reader can do];\n2. [the second].",
         "**この章の目標** この章を終えると、次のことができるようになる。\n1. ［1 つ目にできること］\n"
         "2. ［2 つ目にできること］"),
        ("rule", md,
         "> **The rule.** [One or two sentences: the rule this chapter proves, in the series' convention (a bool "
         "mask, `True` = blocked).]",
         "> **規則** ［この章が証明する規則を 1〜2 文で書く。このシリーズの規約で書く（bool マスク、`True` = "
         "遮断）。］"),
        ("setup-md", md,
         f"## Set-up\n\nEverything runs on the CPU, on one thread. `{m}` ([{code_path}](../{code_path})) holds this "
         "chapter's code.",
         f"## 準備\n\nすべて CPU 上、1 スレッドで実行する。`{m}`（[{code_path}](../../{code_path})）には、この章の"
         "コードが入っている。"),
        ("imports", code,
         "import matplotlib.pyplot as plt\nimport torch\n\nfrom helpers import check_versions\n"
         f"from helpers.chapters import {module} as {m}\nfrom helpers.explorer import draw_view\n\n"
         "check_versions()\ntorch.set_num_threads(1)   # the tensors here are tiny: a second thread only adds "
         "hand-over cost", None),
        ("s1", md,
         "## Step 1: [what this step shows]\n\n[A few sentences, then a cell that shows it and asserts it.]",
         "## ステップ 1：［このステップで示すこと］\n\n［数文で説明し、それを示して assert するセルを続ける。］"),
        ("s1-run", code,
         f"mask = {m}.example_mask(4)\nprint(mask.int())\nassert mask.shape == (4, 4) and mask.dtype == torch.bool",
         None),
        ("s2", md,
         "## Step 2: [what this step shows]\n\n[The next claim, and the cell that proves it.]",
         "## ステップ 2：［このステップで示すこと］\n\n［次の主張と、それを証明するセル。］"),
        ("s2-run", code,
         "blocked = int(mask.sum())\nprint(\"blocked cells:\", blocked)\nassert blocked == 4 * 3 // 2", None),
        ("explore", md,
         "## Explore\n\n[What the controls change and what to try.] First the picture at the explorer's start "
         "values, for readers who can't run the widget:",
         "## エクスプローラ\n\n［コントロールが何を変えるか、何を試すとよいか。］まず、エクスプローラの初期値での図を"
         "示す（ウィジェットを動かせない読者のため）。"),
        ("explore-static", code,
         f"view = {m}.example_view(n=4)\nprint(view.summary)\ndraw_view(view)\nplt.show()", None),
        ("explore-live", code, f"{m}.example_explorer()", None),
        ("ex1", md,
         "## Check yourself\n\nEach exercise has a cell for your answer and a check cell. Run the check after "
         "writing your answer; the solution is hidden below it.\n\n**Exercise 1.** [The question.] How many "
         "cells does the causal mask of 4 tokens block? Give `answer_1` as an int.",
         "## 確認問題\n\n各問題には、答えを書くセルと確認用のセルがある。答えを書いたら確認用のセルを実行すること。"
         "解答はその下に隠してある。\n\n**確認問題 1.** ［問題文。］4 トークンの因果マスクは何個のセルを遮断するか。"
         "`answer_1` に int で答えよ。"),
        ("ex1-answer", code, "answer_1 = None  # your answer: an int",
         "answer_1 = None  # ここに答えを書く：int"),
        ("ex1-check", code, f"{m}.check_1(answer_1, 4)", None),
        ("ex1-solution", md,
         "<details><summary>Solution</summary>\n\n```python\nanswer_1 = 6\n```\n[Why: 4 · 3 / 2 cells lie above "
         "the diagonal.]\n</details>",
         "<details><summary>解答</summary>\n\n```python\nanswer_1 = 6\n```\n［理由：対角線より上に 4 · 3 / 2 個の"
         "セルがある。］\n</details>"),
        ("ex1-hidden", code, f"# the hidden solution, run through the check\n{m}.check_1.solution(6, 4)",
         f"# 隠してある解答を、確認の関数に通す\n{m}.check_1.solution(6, 4)"),
        ("summary", md,
         "## Summary\n\n- [The rule, once more, with the step that proves it.]\n- [What to do in your own code.]",
         "## まとめ\n\n- ［規則をもう一度、それを証明するステップとともに書く。］\n- ［自分のコードですべきこと。］"),
    ]


def module_source(number: int, module: str, title: str) -> str:
    return f'''"""Chapter {number}'s code ({title}): [its toy data, models and experiments], its explorer and
its exercise checks."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers.exercises import Mistake, as_int, exercise
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, say
from helpers.masks import causal_mask


def example_mask(n: int) -> torch.Tensor:
    """[A placeholder for the chapter's own code] the causal mask of n tokens, True = blocked."""
    return causal_mask(n)


def example_view(n: int = 4) -> View:
    """The explorer's view: uniform weights over the keys a query may see, for n tokens."""
    if not 1 <= n <= 8:
        raise ValueError(say(f"n must be from 1 to 8, got {{n}}", f"n は 1 から 8 までにすること（{{n}} が渡された）"))
    mask = example_mask(n)
    weights = (~mask).float() / (~mask).sum(-1, keepdim=True)
    names = [f"t{{i}}" for i in range(n)]
    blocked = int(mask.sum())
    panel = Panel(weights, names, names, title=Bilingual("uniform weights, causal mask", "一様な重み、因果マスク"),
                  masked=mask, vmin=0.0, vmax=1.0)
    return View((panel,), say(f"{{n}} tokens: {{blocked}} cells blocked",
                              f"トークン {{n}} 個：遮断されたセルは {{blocked}} 個"))


def example_explorer() -> Explorer:
    """The number of tokens -> the causal mask's weights, live."""
    controls = {{"n": widgets.IntSlider(value=4, min=2, max=6, description="tokens",
                                      style={{"description_width": "initial"}})}}
    return explorer(controls, example_view, Bilingual("tokens -> the causal mask's weights",
                                                    "トークン数 → 因果マスクの重み"))


EXPLORERS = (example_explorer,)


# --- the exercise checks ---

@exercise
def check_1(answer: object, n: int) -> None:
    """Exercise 1: how many cells the causal mask of n tokens blocks."""
    got = as_int(answer, Mistake("answer with an int: a number of cells", "int で答えること（セルの個数）"))
    expected = int(example_mask(n).sum())
    if got != expected:
        raise Mistake(f"count the cells above the diagonal of the {{n}} x {{n}} mask",
                      f"{{n}} x {{n}} のマスクの対角線より上にあるセルを数えること")
'''


def tests_source(number: int, module: str) -> str:
    m = f"ch{number:02d}"
    return f'''"""Chapter {number}: the explorer and the exercise check (helpers/chapters/{module}.py)."""

import pytest
import torch

from helpers.chapters import {module} as {m}
from helpers.exercises import Mistake
from helpers.masks import causal_mask
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


def test_example_mask_is_the_causal_mask():
    assert torch.equal({m}.example_mask(4), causal_mask(4))


def test_the_explorer_shows_its_view_and_moves():
    box = {m}.example_explorer()
    try:
        assert box.summary.value == "4 tokens: 6 cells blocked"
        box.controls["n"].value = 5
        assert box.summary.value == "5 tokens: 10 cells blocked"
    finally:
        box.close()
    with pytest.raises(ValueError, match="n must be from 1 to 8"):
        {m}.example_view(0)


def test_check_1():
    accepts_every_form({m}.check_1, 6, 4)
    with pytest.raises(Mistake, match="above the diagonal"):
        {m}.check_1(5, 4)
    assert "対角線" in japanese_hint({m}.check_1, 5, 4)
    refuses_the_wrong_kind({m}.check_1, "6", "a str", "str", 4)
'''


def browser_rows(number: int) -> str:
    return (f'EXPECTED["{number:02d}"] = [  # example_explorer: tokens 4 -> 5 (the skeleton\'s; write the chapter\'s '
            'own moves)\n    Move("tokens", presses=1, before="4 tokens: 6 cells blocked", after="5 tokens: 10 cells '
            'blocked", masked=10),\n]\n')


# --- the lists ---

def insert_after_line(text: str, anchor: str, new: str, where: str) -> str:
    """text with the line `new` inserted after the first line that contains `anchor`; ValueError if none does."""
    lines = text.split("\n")
    found = next((i for i, line in enumerate(lines) if anchor in line), None)
    if found is None:
        raise ValueError(f"{where}: no line contains {anchor!r}")
    return "\n".join([*lines[:found + 1], new, *lines[found + 1:]])


def append_to_line(text: str, anchor: str, new: str, where: str) -> str:
    lines = text.split("\n")
    found = next((i for i, line in enumerate(lines) if anchor in line), None)
    if found is None:
        raise ValueError(f"{where}: no line contains {anchor!r}")
    lines[found] += new
    return "\n".join(lines)


def map_row_cell(nb: nbformat.NotebookNode, anchor: str) -> nbformat.NotebookNode:
    """Chapter 0's markdown cell holding the chapter map (the one that links the previous chapter)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(rf"^\| \d+ \| \[[^\]]*\]\({re.escape(anchor)}\)",
                                                      cell.source, re.M):
            return cell
    raise ValueError(f"chapter 0 has no map row linking {anchor}")


def back_link() -> re.Pattern:
    """The last chapter's "next →" link, which leads back to chapter 0."""
    return re.compile(rf"\[[^\]]*→\]\({re.escape(START)}\)")


def retitle_link(cell: nbformat.NotebookNode, new_link: str, where: str) -> None:
    """Replace a cell's link back to chapter 0 (the last chapter's "next") by `new_link`."""
    pattern = back_link()
    if not pattern.search(cell.source):
        raise ValueError(f"{where}: the cell has no link [... →]({START}) to replace")
    cell.source = pattern.sub(lambda _: new_link, cell.source, count=1)


def title_of(path: Path) -> str:
    """The chapter's title from its first heading: '# 13. Beyond the triangle: ...' -> 'Beyond the triangle: ...'."""
    first = nbformat.read(path, as_version=4).cells[0].source.splitlines()[0]
    return re.sub(r"^#\s*\d+\.\s*", "", first).strip()


def readme_title(readme: str, path: str) -> str:
    """The short title a README's chapter list gives the chapter at `path`."""
    found = re.search(rf"\[([^\]]+)\]\({re.escape(path)}\)", readme)
    if not found:
        raise ValueError(f"the README's chapter list does not link {path}")
    return found.group(1)


class Refused(ValueError):
    """Bad input: the message names it."""


def validate(number: str, stem: str, title: str, root: Path) -> tuple[int, str]:
    existing = series.chapters("en", root)
    following = f"{len(existing):02d}"
    if not re.fullmatch(r"\d\d", number):
        raise Refused(f"NN must be two digits, the next chapter's number ({following}), got {number!r}")
    taken = {series.number(p): p for p in existing}
    if number in taken:
        raise Refused(f"chapter {number} exists already ({taken[number].relative_to(root)}); the next one is "
                      f"{following}")
    if number != following:
        raise Refused(f"NN must be the next chapter's number, {following} (the chapters have no gap), got {number}")
    if not STEM.fullmatch(stem):
        raise Refused(f"stem must be lower-case words (letters, digits) joined by '_', starting with a letter, e.g. "
                      f"windows_prefixes_and_chunks; got {stem!r}")
    if not title.strip() or "\n" in title:
        raise Refused(f"Title must be one non-empty line, got {title!r}")
    name = f"{number}_{stem}"
    for path in (series.notebooks("en", root) / f"{name}.ipynb", series.helpers_module(name, root),
                 series.tests_module(name, root)):
        if path.exists():
            raise Refused(f"{path.relative_to(root)} exists already")
    return int(number), name


def write_notebook(path: Path, cells: list[nbformat.NotebookNode], like: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=cells, metadata=dict(nbformat.read(like, as_version=4).metadata))
    nb.metadata.pop("widgets", None)   # another chapter's widget state
    path.write_text(nbformat.writes(links.apply(nb, links.relative(path))) + "\n", encoding="utf-8")


def update_notebook(path: Path, change) -> None:
    nb = nbformat.read(path, as_version=4)
    change(nb)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


def create(number: int, name: str, title: str, ja_title: str, root: Path) -> list[Path]:
    """Write the chapter and register it everywhere; the paths written, relative to root."""
    stem_module = series.helpers_module(name, root).stem
    english, japanese = series.notebooks("en", root), series.notebooks("ja", root)
    previous = series.chapters("en", root)[-1]
    readme, readme_ja = (root / "README.md").read_text(encoding="utf-8"), (root / "README.ja.md").read_text(
        encoding="utf-8")
    notebook = english / f"{name}.ipynb"
    previous_link = f"notebooks/{previous.name}"
    previous_ja_link = f"notebooks/ja/{previous.name}"
    navs = {"en": nav("en", previous, readme_title(readme, previous_link)),
            "ja": nav("ja", previous, readme_title(readme_ja, previous_ja_link))}
    cells = skeleton(number, name, stem_module, title, ja_title, navs)
    made = [nbformat.v4.new_markdown_cell(en, id=cid) if kind == "markdown" else nbformat.v4.new_code_cell(en, id=cid)
            for cid, kind, en, _ in cells]
    for cell in made:
        if cell.id == "ex1-hidden":
            cell.metadata.update(json.loads(json.dumps(SOLUTION)))
    write_notebook(notebook, made, previous)

    # chapter 0's map and the previous chapter's "next" link, both editions (the Japanese through ja_sync)
    # the minutes columns: written at the end by bench_reading.write_map (tests/test_bench_reading.py)
    row = f"| {number} | [{title}]({notebook.name}) | [the question it settles] | – | – |"   # minutes: below
    row_ja = f"| {number} | [{ja_title}]({notebook.name}) | ［その章が決着をつける疑問］ | – | – |"
    start_ja = nbformat.read(series.start("ja", root), as_version=4)
    previous_ja = nbformat.read(series.twin(previous), as_version=4)
    translations = {series.START: {}, previous.stem: {}}

    def add_row(nb):
        cell = map_row_cell(nb, previous.name)
        cell.source = insert_after_line(cell.source, f"]({previous.name})", row, "chapter 0's map")
        ja_cell = next(c for c in start_ja.cells if c.id == cell.id)
        translations[series.START][cell.id] = insert_after_line(ja_cell.source, f"]({previous.name})", row_ja,
                                                                "chapter 0's map (Japanese)")

    def link_forward(nb):
        cells = [nb.cells[0]] + [c for c in nb.cells[1:] if c.cell_type == "markdown" and back_link().search(c.source)]
        for cell in cells:    # the title cell, and the summary's links at the bottom
            retitle_link(cell, next_link("en", notebook.name, title), previous.name)
            ja_cell = next(c for c in previous_ja.cells if c.id == cell.id)
            retitle_link(ja_cell, next_link("ja", notebook.name, ja_title), f"ja/{previous.name}")
            translations[previous.stem][cell.id] = ja_cell.source

    update_notebook(series.start("en", root), add_row)
    update_notebook(previous, link_forward)
    translations[name] = {cid: ja for cid, _, _, ja in cells if ja is not None}
    for path in (series.start("en", root), previous, notebook):
        twin = series.twin(path)
        twin.write_text(nbformat.writes(ja_sync.build(path, translations[path.stem])) + "\n", encoding="utf-8")

    # both READMEs' chapter lists, docs/teaching.md's table, the browser test's moves
    (root / "README.md").write_text(append_to_line(
        readme, f"]({previous_link})", f" · {number}. [{title}](notebooks/{notebook.name})", "README.md"),
        encoding="utf-8")
    (root / "README.ja.md").write_text(append_to_line(
        readme_ja, f"]({previous_ja_link})", f" · {number}. [{ja_title}](notebooks/ja/{notebook.name})",
        "README.ja.md"), encoding="utf-8")
    teaching = root / "docs" / "teaching.md"
    teaching.write_text(insert_after_line(
        teaching.read_text(encoding="utf-8"), f"| {int(series.number(previous))}. ",
        f"| {number}. {title} | {STEPS} | {EXERCISES} | not measured | 45 min | [how to split it] |",
        "docs/teaching.md"), encoding="utf-8")
    browser = root / BROWSER_TEST
    text = browser.read_text(encoding="utf-8")
    anchor = "\n\ndef shows_widget("
    if anchor not in text:
        raise ValueError(f"{BROWSER_TEST}: no 'def shows_widget(' to put the chapter's moves before")
    browser.write_text(text.replace(anchor, "\n" + browser_rows(number) + anchor, 1), encoding="utf-8")

    # the module and its tests
    code, tests = series.helpers_module(name, root), series.tests_module(name, root)
    code.write_text(module_source(number, stem_module, title), encoding="utf-8")
    tests.write_text(tests_source(number, stem_module), encoding="utf-8")
    if root.resolve() == series.ROOT.resolve():   # the estimated minutes: the map's row and totals, teaching.md
        reading = _bench_reading(root)
        reading.write_map()
        reading.write_teaching()
    written = [notebook, japanese / notebook.name, code, tests, series.start("en", root), series.start("ja", root),
               previous, series.twin(previous), root / "README.md", root / "README.ja.md", teaching, browser]
    return [path.relative_to(root) for path in written]


def _bench_reading(root: Path):
    """benchmarks/bench_reading.py, the one reading-time estimator (a script, not a package: loaded by path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_reading", root / "benchmarks" / "bench_reading.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.new_chapter", description=__doc__.splitlines()[0])
    parser.add_argument("number", metavar="NN", help="the next chapter's number, two digits")
    parser.add_argument("stem", help="lower-case words joined by '_' (the file names' NN_<stem>)")
    parser.add_argument("title", metavar="Title", help="the chapter's title, one line")
    parser.add_argument("--ja-title", help="the Japanese title (default: the English one, to translate)")
    parser.add_argument("--no-execute", action="store_true", help="do not run the two new notebooks")
    args = parser.parse_args(argv)
    title = args.title.strip()
    try:
        number, name = validate(args.number, args.stem, args.title, root)
        ja_title = (args.ja_title or title).strip()
        if not ja_title or "\n" in ja_title:
            raise Refused(f"--ja-title must be one non-empty line, got {args.ja_title!r}")
    except Refused as refused:
        parser.error(str(refused))   # exit code 2
    for path in create(number, name, title, ja_title, root):
        print(f"{path.as_posix()}: written")
    if not args.no_execute:
        from tools import execute_notebooks
        notebook = series.notebooks("en", root) / f"{name}.ipynb"
        execute_notebooks.main([notebook, series.twin(notebook)])
    print("Left by hand: the content (README.md, 'Adding a chapter'); then make test.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
