"""The tests of each chapter's module (helpers/chapters/chNN_*.py), one file per chapter, and what they share."""

from __future__ import annotations

import pytest

from helpers.exercises import Mistake
from helpers.language import speaking


def japanese_hint(check, answer, *data) -> str:
    """The hint a Japanese learner reads for `answer`: the Mistake's Japanese text, which differs from its English."""
    with speaking("ja"), pytest.raises(Mistake) as raised:
        check(answer, *data)
    assert str(raised.value) == raised.value.ja != raised.value.en
    return str(raised.value)


def forms(right: object) -> dict[str, object]:
    """The forms a learner may write the right answer in, by name: a table (a tensor) as a torch tensor, a numpy
    array, a nested list or tuple, a list of numpy or torch rows; one number as a Python, numpy or 0-d torch number
    and a 0-d numpy array; a row of numbers (a tuple) as a tuple, a list, a numpy array, a torch tensor, and a tuple
    of numpy or 0-d torch numbers."""
    import numpy as np
    import torch

    if isinstance(right, torch.Tensor):
        array = right.detach().numpy()
        return {"torch tensor": right, "numpy array": array, "nested list": right.tolist(),
                "nested tuple": _tuples(right.tolist()), "list of numpy rows": list(array),
                "list of torch rows": list(right)}
    if isinstance(right, int | float):
        return {"Python number": right, "numpy scalar": np.array(right)[()], "0-d numpy array": np.array(right),
                "0-d torch tensor": torch.tensor(right), "one-element tensor": torch.tensor([right])}
    row = tuple(right)
    return {"tuple": row, "list": list(row), "numpy array": np.array(row), "torch tensor": torch.tensor(row),
            "numpy scalars": tuple(np.array(row)), "0-d torch tensors": tuple(torch.tensor(row))}


def _tuples(nested: object) -> object:
    return tuple(_tuples(item) for item in nested) if isinstance(nested, list) else nested


def accepts_every_form(check, right, *data) -> None:
    """`check` passes the right answer written in each of its forms (forms(right))."""
    for name, form in forms(right).items():
        try:
            check.solution(form, *data)
        except Mistake as mistake:
            pytest.fail(f"check {check.number} refused the right answer as a {name}: {mistake.en}")


def refuses_the_wrong_kind(check, answer, given: str, given_ja: str, *data) -> None:
    """`check` refuses `answer`, of the wrong kind, with a hint that ends by naming what was given, in English and
    in Japanese (given: e.g. "a str"; given_ja: e.g. "str")."""
    with pytest.raises(Mistake) as raised:
        check(answer, *data)
    assert raised.value.en.endswith(f"; got {given}"), raised.value.en
    assert f"。渡されたのは {given_ja}" in japanese_hint(check, answer, *data)
