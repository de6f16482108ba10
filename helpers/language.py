"""The language the helpers speak to a learner: English, or Japanese in the Japanese edition.

What a learner reads from the helpers (an exercise's hint, "Correct!", an explorer's summary line, chapter 7's
path labels) is written in both languages where it is made:

    raise Mistake("the mask has the opposite polarity", "マスクの極性が逆である")
    summary = say(f"{n} keys visible", f"見えるキーは {n} 個")

and `say` picks one by the environment variable ATTENTION_MASKS_LANGUAGE: "ja" for Japanese, "en" (the default)
for English. Each chapter's first code cell (made by tools/links.py for the edition it belongs to) sets it, so
the code cells of the two editions stay identical and a Japanese chapter speaks Japanese wherever it runs:
JupyterLab, Binder, Colab, VS Code or nbval. Tools that build pages of the Japanese edition (decks, static
explorers) use `speaking("ja")`.
A text kept in both languages until it is shown is a `Bilingual` (en, ja) pair: an explorer's panel titles, axis
labels and captions (helpers.explorer) are, since a chapter may cache its panels and both editions draw them;
`said(text)` shows a `Bilingual` or a plain str in the current language, where it is drawn.
A chapter's notebook writes its figures' titles and labels in English, the text a reader of its code reads:
`title=ch04.label("item {n}, no mask", n=n)`; the chapter's module holds their Japanese in one table and makes
`label = labeller(FIGURES_JA)`, so the Japanese edition draws the same figure in Japanese.
Punctuation between pieces is the language's too (a Japanese list takes "、", not ", "): `mark("colon")` and
`listed(items, by="comma")` say it from one table, PUNCTUATION, so no module writes a pair of marks of its own.
Errors and warnings from PyTorch and transformers stay in English, so that they can be searched for, and so do a
helper's ValueError/TypeError for bad arguments (they name the argument, which is code).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

VARIABLE = "ATTENTION_MASKS_LANGUAGE"
LANGUAGES = ("en", "ja")


def current() -> str:
    """ "ja" or "en": the language ATTENTION_MASKS_LANGUAGE names (English when it is unset or empty)."""
    value = os.environ.get(VARIABLE, "") or "en"
    if value not in LANGUAGES:
        raise ValueError(f"the environment variable {VARIABLE} must be one of {list(LANGUAGES)}, got {value!r}")
    return value


def say(en: str, ja: str) -> str:
    """The text in the current language: `en` or `ja`."""
    if not isinstance(en, str) or not isinstance(ja, str):
        raise TypeError(f"en and ja must be strings, got {type(en).__name__} and {type(ja).__name__}")
    if current() == "ja":
        return ja
    return en


class Bilingual(NamedTuple):
    """One text in both languages, resolved where it is shown: `said()` in the current language, `.en` where only
    English is shown (the figures' titles)."""

    en: str
    ja: str

    def said(self) -> str:
        """The text in the current language."""
        return say(self.en, self.ja)


def said(text: str | Bilingual) -> str:
    """The text in the current language: a Bilingual's `said()`, a str as it is."""
    if isinstance(text, Bilingual):
        return text.said()
    if not isinstance(text, str):
        raise TypeError(f"text must be a str or a Bilingual, got {type(text).__name__}")
    return text


# A mark between pieces of text: name -> (English, Japanese).
PUNCTUATION: dict[str, tuple[str, str]] = {
    "comma": (", ", "、"),        # between the items of a list
    "semicolon": ("; ", "、"),    # between the items of a list whose English items hold commas of their own
    "sentence": ("; ", "。"),     # between statements: one English sentence, Japanese sentences each ended by 。
    "colon": (": ", "："),        # between a label and what it says
    "arrow": ("->", "→"),         # from what goes in to what comes out
}


def mark(name: str) -> str:
    """The punctuation mark `name` (a key of PUNCTUATION) in the current language."""
    if name not in PUNCTUATION:
        raise ValueError(f"name must be one of {list(PUNCTUATION)}, got {name!r}")
    return say(*PUNCTUATION[name])


def listed(items: Iterable[str], by: str = "comma") -> str:
    """The items one after another, separated by the mark `by` in the current language: "a, b" or "a、b"."""
    return mark(by).join(items)


def labeller(table: dict[str, str]) -> Callable[..., str]:
    """label(text, **values): `text` (a key of `table`, an English template) in the current language, its
    {placeholders} filled from `values`: label("item {n}", n=1) is "item 1", or table["item {n}"] with n=1."""
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise TypeError("table must be a dict of English str -> Japanese str")

    def label(text: str, **values: object) -> str:
        """`text` in the current language (an English key of the chapter's table), its {placeholders} filled."""
        if text not in table:
            raise ValueError(f"text must be one of {list(table)}, got {text!r}")
        chosen = say(text, table[text])
        return chosen.format(**values) if values else chosen

    return label


@contextmanager
def speaking(language: str) -> Iterator[None]:
    """Inside the block, the helpers speak `language` ("en" or "ja"); the variable is restored after it."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {list(LANGUAGES)}, got {language!r}")
    before = os.environ.get(VARIABLE)
    os.environ[VARIABLE] = language
    try:
        yield
    finally:
        if before is None:
            del os.environ[VARIABLE]
        else:
            os.environ[VARIABLE] = before


def main() -> None:
    """Show one sentence in each language."""
    for language in LANGUAGES:
        with speaking(language):
            print(language, say("the hint a learner reads", "学習者が読むヒント"))


if __name__ == "__main__":
    main()
