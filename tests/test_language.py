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


def test_a_bilingual_text_is_said_in_the_language_current_where_it_is_shown(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    text = language.Bilingual("no visible key", "見えるキーなし")
    assert text.said() == "no visible key" and text.en == "no visible key"
    with speaking("ja"):
        assert text.said() == "見えるキーなし" and text.en == "no visible key"


@pytest.mark.parametrize(("name", "en", "ja"), [(name, *marks) for name, marks in language.PUNCTUATION.items()])
def test_each_mark_in_each_language(monkeypatch, name, en, ja):
    monkeypatch.delenv(VARIABLE, raising=False)
    assert language.mark(name) == en and language.listed(["a", "b"], by=name) == f"a{en}b"
    with speaking("ja"):
        assert language.mark(name) == ja and language.listed(iter(["a", "b"]), by=name) == f"a{ja}b"


def test_listed_joins_by_commas_unless_told(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    assert language.listed(["1", "2", "3"]) == "1, 2, 3" and language.listed([]) == ""
    with speaking("ja"):
        assert language.listed(["1", "2", "3"]) == "1、2、3" and language.listed(["1"]) == "1"
    with pytest.raises(ValueError, match="name must be one of \\['comma', "):
        language.listed(["a"], by="dash")


def test_labeller_says_a_template_in_the_current_language():
    from helpers.language import labeller

    label = labeller({"item {n}, no mask": "サンプル {n}、マスクなし", "key slot": "キーのスロット"})
    with speaking("en"):
        assert label("item {n}, no mask", n=2) == "item 2, no mask" and label("key slot") == "key slot"
    with speaking("ja"):
        assert label("item {n}, no mask", n=2) == "サンプル 2、マスクなし" and label("key slot") == "キーのスロット"
    with pytest.raises(ValueError, match="text must be one of"):
        label("item 2, no mask")                     # the English template, not a filled-in text
    with pytest.raises(TypeError, match="table must be"):
        labeller({"a": 1})
