"""helpers.exercises: a check prints "Not attempted yet", "Correct!", or one short line without a traceback."""

import ast
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from helpers.exercises import NOT_ATTEMPTED, NOT_ATTEMPTED_JA, Check, Mistake, exercise
from helpers.language import speaking

HELPERS = Path(__file__).resolve().parents[1] / "helpers"


@exercise
def check_7(answer, expected):
    """A check of the usual shape: the expected answer is computed from the problem's data."""
    if answer != expected:
        raise Mistake("count again", "数え直すこと")


def test_none_correct_and_wrong(capsys):
    assert isinstance(check_7, Check) and check_7.number == "7" and check_7.__doc__.startswith("A check")
    check_7(None, 3)
    assert capsys.readouterr().out == NOT_ATTEMPTED + "\n"
    check_7(3, 3)
    assert capsys.readouterr().out == "Correct!\n"
    with pytest.raises(Mistake, match="count again"):
        check_7(4, 3)
    assert capsys.readouterr().out == ""


def test_the_solution_run_does_not_say_correct(capsys):
    check_7.solution(3, 3)
    assert capsys.readouterr().out == "The hidden solution passes check 7.\n"
    with pytest.raises(Mistake):
        check_7.solution(4, 3)
    with pytest.raises(ValueError, match="the solution must be an answer"):
        check_7.solution(None, 3)


def test_a_mistake_shows_in_ipython_as_one_line_without_a_traceback(capsys):
    shell = InteractiveShell.instance()
    shell.user_ns["check_7"] = check_7
    shell.run_cell("check_7(4, 3)")
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "Not yet: count again" in text
    assert "Traceback" not in text and "File " not in text and len(text.strip().splitlines()) == 1


def test_exercise_needs_a_function():
    with pytest.raises(TypeError, match="check must be a function"):
        exercise("check_1")


def test_call_turns_an_error_in_the_learners_function_into_one_hint():
    from helpers.exercises import call

    assert call(lambda a, b: a + b, 1, 2) == 3
    with pytest.raises(Mistake, match=r"^with left padding, your function raised ZeroDivisionError: division by zero$"):
        call(lambda x: x / 0, 1, when="with left padding,")
    with pytest.raises(Mistake, match="should be a function"):
        call(3, 1)


def test_the_japanese_edition_hears_japanese(capsys):
    with speaking("ja"):
        check_7(None, 3)
        check_7(3, 3)
        check_7.solution(3, 3)
        assert capsys.readouterr().out.splitlines() == [NOT_ATTEMPTED_JA, "正解！",
                                                        "隠してある解答は確認問題 7 に合格する。"]
        with pytest.raises(Mistake, match="^数え直すこと$") as raised:
            check_7(4, 3)
        assert raised.value.en == "count again" and raised.value._render_traceback_() == [
            "\x1b[31m✗ まだ正解ではない：数え直すこと\x1b[0m"]
        from helpers.exercises import call

        with pytest.raises(Mistake, match="^左パディングのとき、書いた関数で ZeroDivisionError が発生した（"):
            call(lambda x: x / 0, 1, when="左パディングのとき、")
        with pytest.raises(Mistake, match="関数"):
            call(3, 1)
    with pytest.raises(Mistake, match="^count again$"):
        check_7(4, 3)


def test_a_mistake_needs_two_non_empty_hints():
    with pytest.raises(TypeError, match="English, then Japanese"):
        Mistake("count again", "")


def mistakes_without_japanese(path: Path) -> list[int]:
    """Lines of `path` where Mistake(...) is raised with its English hint only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Mistake"
            and len(node.args) + len(node.keywords) < 2]


@pytest.mark.parametrize("path", sorted(HELPERS.rglob("*.py")), ids=lambda p: p.relative_to(HELPERS).as_posix())
def test_every_hint_is_written_in_japanese_too(path: Path):
    lines = mistakes_without_japanese(path)
    assert not lines, f"{path.relative_to(HELPERS).as_posix()}: Mistake(...) without its Japanese hint at lines {lines}"
