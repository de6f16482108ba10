"""Exercise checks: a wrong answer prints one short line that names the likely mistake, never the answer.

A chapter's checks live in its module (helpers.chapters.chNN_<stem>), each written as a plain function that
computes the expected answer from the problem's data and raises `Mistake` with a hint when the answer differs:

    @exercise
    def check_1(answer, ids):
        \"\"\"Exercise 1: the book's mask for `ids`, True = real token, shape (N, 1, S).\"\"\"
        expected = (ids != PAD_ID).unsqueeze(1)
        if answer.shape != expected.shape:
            raise Mistake(f"the mask should have shape (N, 1, S) = {tuple(expected.shape)}",
                          f"マスクの形状は (N, 1, S) = {tuple(expected.shape)} になるはずである")
        ...

In the notebook, `ch01.check_1(answer_1, ids)` prints "Not attempted yet" for None, "Correct!" when the
check passes, and for a wrong answer only the line "✗ Not yet: <hint>" (IPython shows a `Mistake` without its
traceback). The hidden solution cell runs `ch01.check_1.solution(..., ids)`, which proves that the check accepts
the right answer and prints "The hidden solution passes check 1", so that after Run All the learner's own
result ("Not attempted yet") is not confused with the solution's.

Every hint is written in English and in Japanese, side by side (`Mistake(en, ja)`); the Japanese edition shows
the Japanese one (helpers.language).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from helpers.language import say

NOT_ATTEMPTED = "Not attempted yet: write your answer in the cell above, then run this cell again."
NOT_ATTEMPTED_JA = "まだ答えがない。上のセルに答えを書いてから、このセルをもう一度実行すること。"


class Mistake(AssertionError):
    """A wrong answer, with its hint in English and in Japanese: one line in IPython and Jupyter, no traceback."""

    def __init__(self, en: str, ja: str) -> None:
        if not isinstance(en, str) or not isinstance(ja, str) or not en or not ja:
            raise TypeError("Mistake needs its hint twice, as two non-empty strings: English, then Japanese")
        super().__init__(say(en, ja))
        self.en, self.ja = en, ja

    def _render_traceback_(self) -> list[str]:
        """What IPython prints instead of a traceback (IPython looks for this method on any exception)."""
        return [f"\x1b[31m{say('✗ Not yet: ', '✗ まだ正解ではない：')}{self}\x1b[0m"]


class Check:
    """An exercise check: call it on the learner's answer; `.solution(answer, ...)` on the hidden solution."""

    def __init__(self, check: Callable[..., None]) -> None:
        if not callable(check):
            raise TypeError(f"check must be a function, got {type(check).__name__}")
        functools.update_wrapper(self, check)
        self._check = check
        name = check.__name__
        self.number = name.rsplit("_", 1)[-1] if name.startswith("check_") else name

    def __call__(self, answer: Any, *data: Any, **options: Any) -> None:
        """Check the learner's answer: None -> "Not attempted yet"; right -> "Correct!"; wrong -> raises Mistake."""
        if answer is None:
            print(say(NOT_ATTEMPTED, NOT_ATTEMPTED_JA))
            return
        self._check(answer, *data, **options)
        print(say("Correct!", "正解！"))

    def solution(self, answer: Any, *data: Any, **options: Any) -> None:
        """Run the hidden solution through the same check; a failure here is a bug in the chapter, not the learner's."""
        if answer is None:
            raise ValueError(f"check {self.number}: the solution must be an answer, got None")
        self._check(answer, *data, **options)
        print(say(f"The hidden solution passes check {self.number}.",
                  f"隠してある解答は確認問題 {self.number} に合格する。"))

    def __repr__(self) -> str:
        return f"<exercise check {self.number}>"


def call(answer: Callable[..., Any], *args: Any, when: str = "") -> Any:
    """Run the learner's function on the check's inputs; an error in it becomes a Mistake naming it, not a traceback.

    when: where it was called, e.g. say("with left padding", "左パディングのとき"), put before "your function
    raised ...".
    """
    if not callable(answer):
        raise Mistake("the answer should be a function (def ... or lambda), not a value",
                      "答えは値ではなく関数（def … または lambda）にすること")
    try:
        return answer(*args)
    except Exception as error:  # noqa: BLE001  (any error of the learner's code becomes a hint)
        first_line = (str(error).splitlines() or [""])[0][:120]
        where = say(f"{when} ", when) if when else ""  # Japanese puts no space after 、
        detail = f"（{first_line}）" if first_line else ""   # the hint follows 「まだ正解ではない：」: no second colon
        raise Mistake(f"{where}your function raised {type(error).__name__}: {first_line}",
                      f"{where}書いた関数で {type(error).__name__} が発生した{detail}") from None


def exercise(check: Callable[..., None]) -> Check:
    """Decorator: turn `check(answer, *data)`, which raises Mistake for a wrong answer, into an exercise Check."""
    return Check(check)
