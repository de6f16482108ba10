"""helpers.language: what the helpers say to a learner, in English or (in the Japanese edition) Japanese."""

from __future__ import annotations

import pytest

from helpers import language
from helpers.language import VARIABLE, current, say, speaking


def test_english_unless_the_variable_says_ja(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    assert current() == "en" and say("hint", "ヒント") == "hint"
    monkeypatch.setenv(VARIABLE, "")
    assert current() == "en"
    monkeypatch.setenv(VARIABLE, "ja")
    assert current() == "ja" and say("hint", "ヒント") == "ヒント"


def test_an_unknown_language_is_an_error_not_english(monkeypatch):
    monkeypatch.setenv(VARIABLE, "jp")
    with pytest.raises(ValueError, match=f"{VARIABLE} must be one of \\['en', 'ja'\\], got 'jp'"):
        say("hint", "ヒント")


def test_speaking_restores_what_was_there(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    with speaking("ja"):
        assert say("a", "あ") == "あ"
        with speaking("en"):
            assert say("a", "あ") == "a"
        assert current() == "ja"
    assert VARIABLE not in __import__("os").environ
    with pytest.raises(ValueError, match="language must be one of"), speaking("fr"):
        pass


def test_say_wants_two_strings():
    with pytest.raises(TypeError, match="en and ja must be strings"):
        say("hint", None)


def test_main_shows_both(capsys, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    language.main()
    assert capsys.readouterr().out.splitlines() == ["en the hint a learner reads", "ja 学習者が読むヒント"]
