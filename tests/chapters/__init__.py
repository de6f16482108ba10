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
