"""The Japanese edition shows no English on screen where the reader's language is meant: the explorers' control
labels and option labels (live, and as each Japanese notebook stores them in its metadata "widgets"), their summary
lines, and every text an explorer's static figure draws (titles, axis and tick labels, captions: the matplotlib
Text artists of helpers.explorer.draw_view). Code stays as it is: a text may hold code names (key_padding_mask,
is_causal, dtype names, -1e9, PAD, seed, API names), numbers and token strings, listed below, inside Japanese.

Each label exists in both languages: the English explorer shows the same controls and the same option values with
English labels, and the English notebooks' stored controls are what the English explorer shows (the English
edition is unchanged by the Japanese labels)."""

from __future__ import annotations

import ast
import functools
import html
import json
import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

from helpers import chapters
from helpers.diagnose import CODES, WARNINGS
from helpers.explorer import draw_view
from helpers.language import Bilingual, speaking
from tools import series

matplotlib.use("Agg")

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
CONTROLS = ("DropdownModel", "ToggleButtonsModel", "CheckboxModel", "IntSliderModel", "FloatSliderModel",
            "SelectModel", "RadioButtonsModel", "SelectionSliderModel")
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")

# Latin words a Japanese text may hold: code (argument, attribute, library and function names, dtype names,
# constants), and the words of chapter 11's toy translation, whose target language is English in both editions.
CODE_WORDS = frozenset({
    "bool", "float", "inf", "nan", "NaN", "True", "False", "None", "seed", "dtype", "config", "diagnose",
    "transformers", "flash-attn", "sdpa", "max", "softmax", "ms", "torch",
    "dog", "cat", "bird", "fish", "cow", "horse",
}) | frozenset(CODES) | frozenset(WARNINGS) | {"eos-untrained"}
TOKEN = re.compile(r"<[^<>\s]+>")                          # a token string: <pad>, <cls>, <s>
CALL = re.compile(r"[A-Za-z_][\w.]*\([^()]*\)")               # a call with its arguments: masked_fill(mask, -inf)
NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)?(?:e[+-]?\d+)?")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-./][A-Za-z0-9_]+)*(?:\()?")


def english_words(text: str) -> list[str]:
    """The words of `text` that are English rather than code: not a listed code word, not an identifier that
    looks like code (an underscore, a dot, a call, a digit, a repository path), not an acronym (MHA, SDPA, KV), not
    a one-letter symbol of the maths (q, k, d; but the article "a" is English)."""
    text = NUMBER.sub(" ", CALL.sub(" ", TOKEN.sub(" ", text)))
    words = []
    for word in WORD.findall(text):
        if (word in CODE_WORDS or word.isupper() or any(c in word for c in "_.(/") or re.search(r"\d", word)
                or word == "NaN" or (len(word) == 1 and word != "a")):
            continue
        words.append(word)
    return words


def stored_controls(path: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    """(model name, description, option labels) of every control a notebook stores in its widget state."""
    state = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("widgets", {})
    models = state.get(WIDGET_STATE, {}).get("state", {}).values()
    return sorted((m["model_name"], m["state"].get("description", ""), tuple(m["state"].get("_options_labels", ())))
                  for m in models if m["model_name"] in CONTROLS)


def stored_summaries(path: Path) -> list[str]:
    """The summary line of every explorer a notebook stores (its HTML models that are not the tables)."""
    state = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("widgets", {})
    models = state.get(WIDGET_STATE, {}).get("state", {}).values()
    return [html.unescape(m["state"]["value"]) for m in models if m["model_name"] == "HTMLModel"
            and not m["state"].get("value", "").startswith('<div class="explorer-view"')]


def live_controls(make, language: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """What stored_controls reads, from a fresh explorer in `language`."""
    with speaking(language):
        box = make()
    try:
        return sorted((type(c).__name__ + "Model", c.description, tuple(getattr(c, "_options_labels", ())))
                      for c in box.controls.values())
    finally:
        box.close()


@functools.cache
def drawn(chapter: str, language: str) -> tuple[tuple[str, str, list[str], str], ...]:
    """Per explorer of the chapter: its name, its summary, the texts its static figure draws (start values)."""
    found = []
    for make in chapters.explorers(chapter):
        with speaking(language):
            box = make()
            try:
                view = box._view(**{name: c.value for name, c in box.controls.items()})
                figure = draw_view(view)
                texts = [t.get_text() for t in figure.findobj(Text) if t.get_text()]
                plt.close(figure)
                title = box.title.said()
            finally:
                box.close()
        found.append((make.__name__, view.summary, texts, title))
    return tuple(found)


WITH_EXPLORERS = [c for c in chapters.chapters() if chapters.explorers(c)]
JAPANESE_NOTEBOOKS = {series.number(p): p for p in series.chapters("ja")}
ENGLISH_NOTEBOOKS = {series.number(p): p for p in series.chapters("en")}


def test_the_check_tells_english_from_code():
    assert english_words("2 層目の重み、パッド行 = random x1000") == ["random"]
    assert english_words("log-normal の長さ") == ["log-normal"]
    assert english_words("マスク none、is_causal missing") == ["none", "missing"]
    assert english_words("MHA (need_weights=False)、評価モード + no_grad、bool マスク、埋め値 -1e9") == []
    assert english_words("パッキング、バグあり（alex-hh/profam #495）：diagnose の判定は不合格（document-leak）") == []
    assert english_words("<pad> t0 @3 d1 F.scaled_dot_product_attention finfo.min float16 KV キャッシュ") == []


@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_each_control_has_an_english_and_a_japanese_label(chapter):
    """The same controls and option values in both languages; an English control's label holds no Japanese (its
    options may: chapter 8's sentences are the toy's Japanese); a Japanese label holds no English word (code names,
    numbers and tokens aside)."""
    for make in chapters.explorers(chapter):
        boxes = {}
        for language in ("en", "ja"):
            with speaking(language):
                boxes[language] = make()
        try:
            en, ja = (boxes[lang].controls for lang in ("en", "ja"))
            assert list(en) == list(ja)
            for name in en:
                assert type(en[name]) is type(ja[name]) and en[name].value == ja[name].value
                values = tuple(getattr(en[name], "_options_values", ()))
                assert values == tuple(getattr(ja[name], "_options_values", ())), (make.__name__, name)
                assert not JAPANESE.search(en[name].description), (make.__name__, name)
                for text in (ja[name].description, *getattr(ja[name], "_options_labels", ())):
                    assert not english_words(text), f"{make.__name__}, control {name}: {text!r} is English"
        finally:
            for box in boxes.values():
                box.close()


@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_the_japanese_notebook_stores_japanese_controls_and_summaries(chapter):
    """What a reader of the Japanese notebook sees before running it (its stored widget state) is Japanese, and
    is what the Japanese explorer shows now (the notebook was re-executed)."""
    path = JAPANESE_NOTEBOOKS[chapter]
    stored = stored_controls(path)
    problems = [f"{model} {description!r}: {text!r}" for model, description, labels in stored
                for text in (description, *labels) if english_words(text)]
    problems += [f"summary: {english_words(s)} in {s!r}" for s in stored_summaries(path) if english_words(s)]
    assert not problems, f"{path.name} stores English labels:\n" + "\n".join(problems)
    live = sorted(c for make in chapters.explorers(chapter) for c in live_controls(make, "ja"))
    assert set(live) == set(stored), f"{path.name}: re-execute it (python -m tools.execute_notebooks)"


@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_the_english_notebook_stores_what_the_english_explorer_shows(chapter):
    live = sorted(c for make in chapters.explorers(chapter) for c in live_controls(make, "en"))
    assert set(live) == set(stored_controls(ENGLISH_NOTEBOOKS[chapter]))


@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_every_explorer_figure_and_summary_speaks_japanese(chapter):
    """Every text the static figure draws (titles, axis and tick labels, caption) and the summary line, under ja:
    no English word but code names, numbers and tokens; under en, no Japanese but the toy's tokens."""
    for name, summary, texts, title in drawn(chapter, "ja"):
        problems = [f"{english_words(t)} in {t!r}" for t in (title, summary, *texts) if english_words(t)]
        assert not problems, f"{name} draws English in the Japanese edition:\n" + "\n".join(problems)
    for name, _summary, _texts, title in drawn(chapter, "en"):
        assert not JAPANESE.search(title), name


# --- The static figures: what a chapter's code and the helpers' plotting functions draw outside the explorers ---
# A figure's text is written where the figure is drawn: in a notebook's code cell (the same code in both editions)
# or in a module of helpers. Where it is a literal, it must be said in both languages (say, Bilingual, or a
# chapter's own table such as ch07.label); the check reads the code, since a stored figure is a picture.
FIGURE_KEYWORDS = {"title", "xlabel", "ylabel", "label", "suptitle"}
FIGURE_METHODS = {"set_title": 0, "set_xlabel": 0, "set_ylabel": 0, "suptitle": 0, "supxlabel": 0, "supylabel": 0,
                  "text": 2, "annotate": 0}
TRANSLATED = {"say", "Bilingual", "label", "verdict", "said"}   # calls whose result is already in the language


def _called(node: ast.AST) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _fragments(node: ast.AST, names: dict[str, list[ast.AST]], seen: frozenset[str] = frozenset()) -> list[str]:
    """The literal text an expression puts on a figure, outside any call that translates it."""
    if isinstance(node, ast.Call) and _called(node) in TRANSLATED:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value for v in node.values if isinstance(v, ast.Constant))] + [
            f for v in node.values if isinstance(v, ast.FormattedValue) for f in _fragments(v.value, names, seen)]
    if isinstance(node, ast.Name) and node.id in names and node.id not in seen:
        return [f for value in names[node.id] for f in _fragments(value, names, seen | {node.id})]
    if isinstance(node, (ast.BinOp, ast.IfExp, ast.BoolOp, ast.Tuple, ast.List)):
        return [f for child in ast.iter_child_nodes(node) for f in _fragments(child, names, seen)]
    return []


def english_figure_texts(source: str) -> list[str]:
    """Each English literal that `source` (a code cell or a module) draws on a figure, with its line."""
    tree = ast.parse(source)
    names: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.setdefault(target.id, []).append(node.value)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        drawn_args = [k.value for k in node.keywords if k.arg in FIGURE_KEYWORDS]
        position = FIGURE_METHODS.get(_called(node)) if isinstance(node.func, ast.Attribute) else None
        if position is not None and len(node.args) > position:
            drawn_args.append(node.args[position])
        for arg in drawn_args:
            for text in _fragments(arg, names):
                if english_words(text):
                    found.append(f"line {arg.lineno}: {text!r} {english_words(text)}")
    return found


def test_the_figure_check_finds_english_literals():
    assert english_figure_texts('show_weights(w, t, t, title="attention weights")')
    assert english_figure_texts('ax.set_xlabel("position")')
    assert english_figure_texts('t = f"item {n}, no mask"\nshow_weights(w, t, t, title=t)')
    assert english_figure_texts('ax.plot(x, y, label="masked")')
    assert not english_figure_texts('show_weights(w, t, t, title=say("attention weights", "注意の重み"))')
    assert not english_figure_texts('ax.set(title=f"{name}", xlabel=say("step", "ステップ"))')
    assert not english_figure_texts('ax.set_title(ch07.label("encoder output"))')
    assert not english_figure_texts('show_weights(w, t, t, title="is_causal=True, PAD=1000, float16")')


@pytest.mark.parametrize("path", series.chapters("ja"), ids=lambda p: p.stem[:2])
def test_every_static_figure_of_the_japanese_edition_speaks_japanese(path):
    """A code cell of the Japanese edition draws no English title, axis label or legend (code names aside)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    problems = [f"{c['id']} {text}" for c in cells if c["cell_type"] == "code"
                for text in english_figure_texts("".join(c["source"]).replace("%matplotlib", "#"))]
    assert not problems, f"{path.name} draws English on its figures:\n" + "\n".join(problems)


def test_the_helpers_draw_no_english_figure_text():
    """The same for every module of helpers that draws a figure."""
    root = Path(chapters.__file__).resolve().parents[1]
    problems = [f"{p.relative_to(root)} {text}" for p in sorted(root.rglob("*.py"))
                for text in english_figure_texts(p.read_text(encoding="utf-8"))]
    assert not problems, "\n".join(problems)


def test_show_weights_and_the_mask_pattern_speak_the_readers_language():
    import torch

    from helpers.checks import check_mask_pattern
    from helpers.plots import show_mask_pattern, show_weights

    attn = torch.nn.MultiheadAttention(4, 1, batch_first=True).eval()
    report = check_mask_pattern(lambda x, kpm, am: attn(x, x, x, need_weights=False, attn_mask=am)[0],
                                "causal", length=3, embed_dim=4)
    for language, key in (("en", "key"), ("ja", "キー")):
        with speaking(language):
            ax = show_weights(torch.eye(2), ["a", "b"], ["a", "b"], title=Bilingual("title", "タイトル"))
            assert (ax.get_xlabel(), ax.get_title()) == (key, {"en": "title", "ja": "タイトル"}[language])
            plt.close(ax.figure)
            figure = show_mask_pattern(report)
            texts = [t.get_text() for t in figure.findobj(Text) if t.get_text()]
            plt.close(figure)
        if language == "ja":
            assert not [t for t in texts if english_words(t.replace(report.check, ""))], texts


def test_each_chapters_figure_texts_have_japanese_with_the_same_placeholders():
    import string

    for chapter in chapters.chapters():
        table = getattr(chapters.module(chapter), "FIGURES_JA", {})
        for en, ja in table.items():
            fields = [{f for _, f, _, _ in string.Formatter().parse(text) if f} for text in (en, ja)]
            assert fields[0] == fields[1], (chapter, en)
            assert not english_words(re.sub(r"\{\w+\}", " ", ja)), (chapter, en, ja)   # {placeholders} aside
