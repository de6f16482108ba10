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

A check reads a value answer through one of `as_number`, `as_int`, `as_numbers`, `as_ints`, `as_tensor` and
`as_bool_tensor` (below), so that every form of the same answer (a torch tensor, a numpy array or scalar, a 0-d
array, a Python number, a list or tuple, nested too) is one canonical value, and a wrong kind gets the check's
own hint with what was given added:

    answer = as_bool_tensor(answer, Mistake("the mask should be a bool tensor", "マスクは bool テンソルにすること"))
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
from collections.abc import Callable
from typing import Any

import torch

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


# --- One reading of a value answer -----------------------------------------------------------------------------
# A learner may write the same answer as a torch tensor, a numpy array or scalar, a 0-d array, a Python number, or
# a list or tuple (nested for a table); each check reads it through one of these functions, which return one
# canonical form, or raise the check's own "what is wanted" hint (`wrong`) with what was given added: its type,
# and its dtype and shape for an array, never its values.
#
# The rules:
#   a bool is not a number: True, numpy's bool and a bool tensor are refused where a number is wanted, and a bool
#       mask is refused where numbers (scores) are wanted; a bool array (torch or numpy) is a bool mask;
#   an int wanted (a count, an index: as_int, as_ints): a float that is a whole number (3.0, an array of whole
#       floats) is that int; any other float, NaN and inf included, is the wrong kind;
#   a tensor wanted (as_tensor): its dtype's kind is part of the answer (a float tensor is not a tensor of token
#       ids, a 0/1 int tensor is not a bool mask); dtype=None keeps the answer's own dtype for the check to judge;
#   a value inside a list may itself be a tensor or a numpy array or scalar; a Python number and a list's numbers
#       become int64, bool, or float64 if one of them is a float (a Python float's own precision);
#   NaN stays NaN (as_number, as_numbers, as_tensor), so that a check can name it; a tensor keeps its gradient.
# numpy is never imported here: an answer can only be a numpy object if numpy has been imported already.

def _numpy(answer: object) -> bool:
    """True for a numpy array or numpy scalar (numpy's bool, ints, floats), without importing numpy."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(answer, numpy.ndarray | numpy.generic)


def _article(name: str) -> str:
    return f"an {name}" if name[:1] in "aeiouAEIOU" else f"a {name}"


def given(answer: object) -> tuple[str, str]:
    """What the learner gave, for a hint, in English and in Japanese: its type, and dtype and shape for an array."""
    if isinstance(answer, torch.Tensor):
        return (f"a {answer.dtype} tensor of shape {tuple(answer.shape)}",
                f"{answer.dtype} のテンソル（形状 {tuple(answer.shape)}）")
    if _numpy(answer) and hasattr(answer, "shape") and answer.ndim > 0:
        return (f"a numpy {answer.dtype} array of shape {tuple(answer.shape)}",
                f"numpy の {answer.dtype} 配列（形状 {tuple(answer.shape)}）")
    if _numpy(answer):
        return f"a numpy {answer.dtype}", f"numpy の {answer.dtype}"
    name = type(answer).__name__
    if isinstance(answer, list | tuple | dict | set | frozenset):
        return f"{_article(name)} of length {len(answer)}", f"{name}（長さ {len(answer)}）"
    return _article(name), name


def wrong_kind(wrong: Mistake, answer: object, *inside: object) -> Mistake:
    """`wrong` (the check's hint for what is wanted) with what was given added; `inside`: the value in the list
    `answer` that does not fit, if one is named."""
    en, ja = given(answer)
    if inside:
        inside_en, inside_ja = given(*inside)
        en, ja = f"{en} holding {inside_en}", f"{inside_ja} を含む {ja}"
    then = " である" if ja[-1:].isascii() else "である"         # a space between ASCII and Japanese, none after ）
    return Mistake(f"{wrong.en}; got {en}", f"{wrong.ja}。渡されたのは {ja}{then}")


def _plain(answer: object) -> object:
    """A list or tuple as nested Python lists of Python scalars (a tensor or numpy value inside becomes its
    .tolist()); anything else as it is."""
    if isinstance(answer, list | tuple):
        return [_plain(a) for a in answer]
    if isinstance(answer, torch.Tensor) or _numpy(answer):
        return answer.tolist()
    return answer


def _leaves(plain: object) -> list[object]:
    return [leaf for item in plain for leaf in _leaves(item)] if isinstance(plain, list) else [plain]


def _as_any_tensor(answer: object, wrong: Mistake) -> torch.Tensor:
    """The answer as a tensor of bools or real numbers, its dtype kept: a tensor as it is, a numpy array or scalar
    in its dtype, a Python number or a (nested) list or tuple: of bools -> bool, of ints -> int64, with a float in it
    -> float64."""
    if isinstance(answer, torch.Tensor):
        tensor = answer
    elif _numpy(answer):
        numpy = sys.modules["numpy"]
        try:
            tensor = torch.from_numpy(numpy.array(answer))    # a copy: writable, contiguous
        except TypeError:                                     # strings, objects, a dtype torch lacks
            raise wrong_kind(wrong, answer) from None
    elif isinstance(answer, bool | numbers.Real | list | tuple):
        plain = _plain(answer)
        leaves = _leaves(plain)
        bools = [isinstance(leaf, bool) for leaf in leaves]
        unfit = [not isinstance(leaf, numbers.Real) for leaf in leaves]   # a str, None, a complex...
        if not any(unfit) and any(bools) and not all(bools):
            unfit = bools                                                # a bool among numbers: not a number
        if any(unfit):
            raise wrong_kind(wrong, answer, leaves[unfit.index(True)])
        floats = any(isinstance(leaf, float) for leaf in leaves)  # a Python float's own precision: float64
        try:
            tensor = torch.tensor(plain, dtype=torch.float64 if floats else None)
        except (TypeError, ValueError, RuntimeError, OverflowError):   # rows of different lengths
            raise wrong_kind(wrong, answer) from None
    else:
        raise wrong_kind(wrong, answer)
    if tensor.dtype.is_complex:
        raise wrong_kind(wrong, answer)
    return tensor


def as_tensor(answer: object, wrong: Mistake, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The answer as a torch tensor (a tensor, a numpy array or scalar, a Python number, a nested list or tuple).

    dtype None keeps the answer's own dtype (a check that judges the dtype says so in its own hint); torch.bool
    takes bool values only; an integer dtype takes integers only; a floating dtype takes any real numbers, not
    bools. The result has `dtype` (a tensor of another dtype of the same kind is converted, its gradient kept);
    otherwise `wrong`, naming what was given, is raised.
    """
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype or None, got {type(dtype).__name__}")
    tensor = _as_any_tensor(answer, wrong)
    if dtype is None or tensor.dtype == dtype:
        return tensor
    is_bool, is_float = tensor.dtype == torch.bool, tensor.dtype.is_floating_point
    fits = is_bool if dtype == torch.bool else not is_bool if dtype.is_floating_point else not (is_bool or is_float)
    if not fits:
        raise wrong_kind(wrong, answer)
    return tensor.to(dtype)


def as_bool_tensor(answer: object, wrong: Mistake) -> torch.Tensor:
    """A bool mask as a bool tensor: a bool tensor, a numpy bool array, a (nested) list of bools; 0/1 numbers are
    the wrong kind (a mask's polarity and its dtype are the lesson)."""
    return as_tensor(answer, wrong, torch.bool)


def blocked_mask(answer: object, expected: torch.Tensor,
                 shape: Callable[[tuple[int, ...]], Mistake]) -> tuple[torch.Tensor, bool]:
    """A mask answer (True = blocked) against the expected one: (the answer as a bool tensor, whether it is right).
    Raises the mistakes every mask exercise shares: not a bool mask, `shape(got)` (the caller's words for the shape
    it wants, given the shape it got) when the shape differs, and the flipped polarity. The caller names the
    other mistakes."""
    answer = as_bool_tensor(answer, Mistake("give a bool tensor, True = blocked (the helpers' convention)",
                                            "bool テンソルで答えること。True = 遮断（helpers の規約）"))
    if tuple(answer.shape) != tuple(expected.shape):
        raise shape(tuple(answer.shape))
    if torch.equal(answer, expected):
        return answer, True
    if torch.equal(answer, ~expected):
        raise Mistake("the polarity is flipped: True must mean blocked",
                      "極性が逆である。True は遮断を意味しなければならない")
    return answer, False


def as_number(answer: object, wrong: Mistake) -> float:
    """One real number as a Python float: a Python or numpy number, a tensor or array with one element (0-d or
    not), a list of one number; never a bool. NaN and inf are numbers: the check judges them."""
    tensor = _as_any_tensor(answer, wrong)
    if tensor.numel() != 1 or tensor.dtype == torch.bool:
        raise wrong_kind(wrong, answer)
    return float(tensor.item())


def as_int(answer: object, wrong: Mistake) -> int:
    """One integer (a count, an index) as a Python int: what as_number accepts, if its value is a whole number."""
    number = _as_any_tensor(answer, wrong)
    if number.numel() != 1 or number.dtype == torch.bool:
        raise wrong_kind(wrong, answer)
    value = number.item()
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise wrong_kind(wrong, answer)
    return int(value)


def as_numbers(answer: object, wrong: Mistake) -> tuple[float, ...]:
    """A row of real numbers as a tuple of Python floats: a list or tuple of numbers, a 1-D tensor or array; never
    bools. The check judges the count."""
    tensor = _as_any_tensor(answer, wrong)
    if tensor.dim() != 1 or tensor.dtype == torch.bool:
        raise wrong_kind(wrong, answer)
    return tuple(float(a) for a in tensor.tolist())


def as_ints(answer: object, wrong: Mistake) -> tuple[int, ...]:
    """A row of integers (counts, positions) as a tuple of Python ints: what as_numbers accepts, if every value is
    a whole number."""
    tensor = _as_any_tensor(answer, wrong)
    if tensor.dim() != 1 or tensor.dtype == torch.bool:
        raise wrong_kind(wrong, answer)
    if tensor.dtype.is_floating_point and not (tensor.isfinite() & (tensor == tensor.round())).all():
        raise wrong_kind(wrong, answer)
    return tuple(int(a) for a in tensor.tolist())
