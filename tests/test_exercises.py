"""helpers.exercises: a check prints "Not attempted yet", "Correct!", or one short line without a traceback."""

import pytest
from IPython.core.interactiveshell import InteractiveShell

from helpers.exercises import NOT_ATTEMPTED, Check, Mistake, exercise


@exercise
def check_7(answer, expected):
    """A check of the usual shape: the expected answer is computed from the problem's data."""
    if answer != expected:
        raise Mistake("count again")


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
