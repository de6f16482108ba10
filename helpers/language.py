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
Errors and warnings from PyTorch and transformers stay in English, so that they can be searched for, and so do a
helper's ValueError/TypeError for bad arguments (they name the argument, which is code).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

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
