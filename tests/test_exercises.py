"""helpers.exercises: a check prints "Not attempted yet", "Correct!", or one short line without a traceback."""

import ast
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

from helpers.exercises import NOT_ATTEMPTED, NOT_ATTEMPTED_JA, Check, Mistake, blocked_mask, exercise
from helpers.language import speaking
from tools import series

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


# --- the answer normaliser: every form of the same answer is one value; a wrong kind is named, in both languages ---

WANTED = Mistake("give the answer", "答えを渡すこと")


def refused(read, answer, *args) -> Mistake:
    """The Mistake that `read` (as_number, ...) raises for `answer`, after checking its Japanese twin."""
    with pytest.raises(Mistake) as raised:
        read(answer, WANTED, *args)
    with speaking("ja"), pytest.raises(Mistake) as raised_ja:
        read(answer, WANTED, *args)
    mistake = raised.value
    assert str(mistake) == mistake.en
    assert mistake.en.startswith("give the answer; got ") and mistake.ja.startswith("答えを渡すこと。渡されたのは ")
    assert mistake.ja.endswith("である") and str(raised_ja.value) == mistake.ja
    return mistake


def test_as_number_reads_every_form_of_one_number():
    from helpers.exercises import as_number

    for form in (0.2, np.float64(0.2), np.array(0.2), np.array([0.2]), torch.tensor(0.2, dtype=torch.float64),
                 torch.tensor([[0.2]], dtype=torch.float64), [0.2], (0.2,), [np.float64(0.2)]):
        assert as_number(form, WANTED) == 0.2 and type(as_number(form, WANTED)) is float, form
    for form in (3, np.int64(3), np.array(3, dtype=np.int32), torch.tensor(3), torch.tensor(3.0, requires_grad=True)):
        assert as_number(form, WANTED) == 3.0
    assert math.isnan(as_number(float("nan"), WANTED)) and math.isnan(as_number(np.array(np.nan), WANTED))
    assert as_number(float("-inf"), WANTED) == float("-inf")
    assert as_number(torch.tensor(0.2), WANTED) == torch.tensor(0.2).item()     # float32's own 0.2, not rounded again


def test_a_bool_is_not_a_number():
    from helpers.exercises import as_int, as_number, as_numbers

    for read in (as_number, as_int):
        for form in (True, np.bool_(False), torch.tensor(True), np.array([True]), [True]):
            refused(read, form)
    assert "got a bool" in refused(as_number, True).en
    assert "got a numpy bool" in refused(as_number, np.bool_(True)).en
    assert refused(as_numbers, [0.5, True]).en.endswith("got a list of length 2 holding a bool")
    assert refused(as_numbers, [0.5, True]).ja == "答えを渡すこと。渡されたのは bool を含む list（長さ 2）である"
    assert "torch.bool tensor" in refused(as_numbers, torch.tensor([True, False])).en


def test_a_wrong_kind_is_named_by_its_type_and_shape_never_its_values():
    from helpers.exercises import as_number, as_tensor

    assert refused(as_number, "0.2").en == "give the answer; got a str"
    assert refused(as_number, "0.2").ja == "答えを渡すこと。渡されたのは str である"
    assert refused(as_number, [0.2, 0.3]).en == "give the answer; got a list of length 2"
    assert refused(as_number, np.zeros((2, 3))).en == "give the answer; got a numpy float64 array of shape (2, 3)"
    assert refused(as_number, np.zeros((2, 3))).ja == ("答えを渡すこと。"
                                                       "渡されたのは numpy の float64 配列（形状 (2, 3)）である")
    assert refused(as_number, torch.zeros(4)).ja == ("答えを渡すこと。"
                                                     "渡されたのは torch.float32 のテンソル（形状 (4,)）である")
    assert refused(as_number, {"a": 1}).en == "give the answer; got a dict of length 1"
    assert refused(as_number, 1j).en == "give the answer; got a complex"
    assert refused(as_number, object()).en == "give the answer; got an object"
    assert refused(as_tensor, [[1, 2], [3]]).en == "give the answer; got a list of length 2"       # ragged rows
    assert refused(as_tensor, ["犬", "猫"]).en == "give the answer; got a list of length 2 holding a str"
    assert refused(as_tensor, np.array(["犬"])).en.startswith("give the answer; got a numpy <U1 array")
    assert "0.123" not in refused(as_tensor, [0.123, "x"]).en


def test_as_int_takes_whole_numbers_only():
    from helpers.exercises import as_int

    for form in (2, 2.0, np.int64(2), np.float32(2.0), np.array(2), np.array([2.0]), torch.tensor(2),
                 torch.tensor([2.0]), [2]):
        assert as_int(form, WANTED) == 2 and type(as_int(form, WANTED)) is int, form
    for form in (2.5, float("nan"), float("inf"), np.float64(2.5), torch.tensor(2.5), [1, 2]):
        refused(as_int, form)


def test_as_numbers_and_as_ints_read_a_row_in_every_form():
    from helpers.exercises import as_ints, as_numbers

    for form in ([5, 3], (5, 3), np.array([5, 3]), np.array([5.0, 3.0]), torch.tensor([5, 3]),
                 torch.tensor([5.0, 3.0]), (np.int64(5), np.int32(3)), (torch.tensor(5), torch.tensor(3)),
                 [np.array(5), 3.0]):
        assert as_ints(form, WANTED) == (5, 3) and all(type(c) is int for c in as_ints(form, WANTED)), form
        assert as_numbers(form, WANTED) == (5.0, 3.0)
    assert as_numbers([0.1, 0.2], WANTED) == (0.1, 0.2)                  # a Python float keeps its precision
    assert as_numbers(np.array([0.1, np.nan]), WANTED)[0] == 0.1 and math.isnan(as_numbers([0.1, np.nan], WANTED)[1])
    assert as_ints([], WANTED) == () and as_numbers((), WANTED) == ()
    for read in (as_ints, as_numbers):
        for form in (5, np.int64(5), torch.tensor(5), [[5, 3]], np.array([[5, 3]]), [5, "3"], [5, None], [5, True]):
            refused(read, form)
    for form in ([5.5, 3], np.array([5.0, np.nan]), torch.tensor([5.0, float("inf")])):
        refused(as_ints, form)
    assert refused(as_ints, [5, None]).en.endswith("holding a NoneType")


def test_as_tensor_reads_tables_in_every_form_and_keeps_the_kind():
    from helpers.exercises import as_tensor

    table = [[1.0, -1e9], [0.5, 2.0]]
    want = torch.tensor(table)
    for form in (torch.tensor(table), torch.tensor(table, dtype=torch.float64), np.array(table),
                 np.array(table, dtype=np.float32), table, tuple(map(tuple, table)), [np.array(row) for row in table],
                 [torch.tensor(row) for row in table], [[1, -1e9], (0.5, np.float32(2))]):
        got = as_tensor(form, WANTED, torch.float32)
        assert got.dtype == torch.float32 and torch.equal(got, want), form
    ids = as_tensor([[3, 1], [4, 0]], WANTED)                             # dtype None: the answer's own dtype
    assert ids.dtype == torch.int64 and as_tensor(np.array([1], dtype=np.int32), WANTED).dtype == torch.int32
    assert as_tensor([1.5], WANTED).dtype == torch.float64 and as_tensor(torch.ones(2).half(), WANTED).dtype == \
        torch.float16
    assert torch.equal(as_tensor(np.array([[1, 2]]), WANTED, torch.float32), torch.tensor([[1.0, 2.0]]))
    assert torch.equal(as_tensor([3, 1], WANTED, torch.long), torch.tensor([3, 1]))
    assert as_tensor(3.0, WANTED).shape == ()                              # a number: a 0-d tensor
    grad = torch.ones(2, requires_grad=True)
    assert as_tensor(grad, WANTED) is grad and as_tensor(grad * 2, WANTED, torch.float64).requires_grad
    assert as_tensor(np.array([np.nan]), WANTED, torch.float32).isnan().all()
    view = np.arange(6.0).reshape(2, 3)[:, ::-1]                          # a non-contiguous view
    view.flags.writeable = False
    assert torch.equal(as_tensor(view, WANTED), torch.tensor(view.copy()))
    assert refused(as_tensor, torch.tensor([True]), torch.float32).en.endswith("got a torch.bool tensor of shape (1,)")
    assert refused(as_tensor, [1.5, 2.0], torch.long).en.endswith("got a list of length 2")     # ids are not floats
    assert refused(as_tensor, torch.tensor([1.0]), torch.long).en.endswith("got a torch.float32 tensor of shape (1,)")
    refused(as_tensor, torch.tensor([1j]))
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        as_tensor([1], WANTED, np.float32)


def test_a_bool_array_is_a_bool_mask_and_0_1_numbers_are_not():
    from helpers.exercises import as_bool_tensor

    mask = torch.tensor([[True, False, False]])
    for form in (mask, mask.numpy(), mask.tolist(), (np.bool_(True), False, False), [[True, np.bool_(False), False]],
                 [torch.tensor([True, False, False])]):
        got = as_bool_tensor(form, WANTED)
        assert got.dtype == torch.bool and torch.equal(got.reshape(-1), mask.reshape(-1)), form
    assert as_bool_tensor(mask, WANTED) is mask
    for form in (mask.int(), mask.numpy().astype(int), [[1, 0, 0]], [True, 0], mask.float()):
        refused(as_bool_tensor, form)
    assert refused(as_bool_tensor, mask.numpy().astype(np.int64)).en.endswith(
        "got a numpy int64 array of shape (1, 3)")
    assert refused(as_bool_tensor, mask.numpy().astype(np.int64)).ja == (
        "答えを渡すこと。渡されたのは numpy の int64 配列（形状 (1, 3)）である")


def test_wrong_kind_adds_what_was_given_to_the_checks_own_hint():
    from helpers.exercises import given, wrong_kind

    mistake = wrong_kind(Mistake("give two numbers", "2 つの数で答えること"), (1, 2, 3))
    assert (mistake.en, mistake.ja) == ("give two numbers; got a tuple of length 3",
                                       "2 つの数で答えること。渡されたのは tuple（長さ 3）である")
    assert given(np.float32(1)) == ("a numpy float32", "numpy の float32")
    assert given(torch.zeros(2, 1)) == ("a torch.float32 tensor of shape (2, 1)",
                                        "torch.float32 のテンソル（形状 (2, 1)）")
    assert given(7) == ("an int", "int") and given(None) == ("a NoneType", "NoneType")


@pytest.mark.slow   # a fresh interpreter: about a second
def test_the_normaliser_needs_no_numpy():
    """numpy stays optional: helpers.exercises never imports it, and reads answers without it."""
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import warnings; warnings.simplefilter('ignore')\n"
            "import torch\n"
            "from helpers.exercises import Mistake, as_bool_tensor, as_ints, as_number\n"
            "wanted = Mistake('give it', '渡すこと')\n"
            "assert as_number(0.5, wanted) == 0.5 and as_ints((1, torch.tensor(2)), wanted) == (1, 2)\n"
            "assert as_bool_tensor([[True, False]], wanted).dtype == torch.bool\n"
            "try:\n    as_number('x', wanted)\nexcept Mistake as m:\n    assert m.en == 'give it; got a str'\n"
            "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=HELPERS.parent, env={**os.environ, "PYTHONPATH": str(HELPERS.parent)})
    assert run.returncode == 0 and run.stdout == "ok\n", run.stderr[-2000:]
    source = (HELPERS / "exercises.py").read_text(encoding="utf-8")
    assert "import numpy" not in source


def test_blocked_mask_names_the_shared_mistakes_and_leaves_the_rest_to_the_caller():
    """The mistakes every mask exercise shares: the kind, the shape (in the caller's words) and the polarity."""
    expected = torch.ones(2, 3, dtype=torch.bool).triu(1)
    shape = lambda got: Mistake(f"want (2, 3), got {got}", f"(2, 3) が必要、{got} を受け取った")  # noqa: E731
    assert blocked_mask(expected.tolist(), expected, shape)[1] is True
    assert blocked_mask(expected.numpy(), expected, shape)[1] is True
    answer, right = blocked_mask(torch.zeros(2, 3, dtype=torch.bool), expected, shape)
    assert right is False and answer.dtype == torch.bool
    with pytest.raises(Mistake, match="want \\(2, 3\\), got \\(3, 3\\)"):
        blocked_mask(torch.zeros(3, 3, dtype=torch.bool), expected, shape)
    with pytest.raises(Mistake, match="polarity is flipped"):
        blocked_mask(~expected, expected, shape)
    with pytest.raises(Mistake, match="give a bool tensor"):
        blocked_mask(expected.int(), expected, shape)


# --- the chapters' hidden solutions: folded in JupyterLab (and so on the site, tools/site.py), in both editions ---

def unfolded_solutions(path: Path) -> list[str]:
    """Ids of the code cells of a chapter that run a hidden solution (`.solution(`, or tagged "solution") but are
    not folded: each needs metadata {"jupyter": {"source_hidden": true}, "tags": ["solution"]}."""
    import nbformat

    cells = nbformat.read(path, as_version=4).cells
    return [cell.get("id") for cell in cells if cell.cell_type == "code"
            and (".solution(" in cell.source or "solution" in cell.metadata.get("tags", []))
            and not (cell.metadata.get("jupyter", {}).get("source_hidden") is True
                     and "solution" in cell.metadata.get("tags", []))]


@pytest.mark.parametrize("path", series.every_chapter(), ids=lambda p: f"{series.edition_of(p)}-{p.stem}")
def test_every_solution_cell_is_folded(path: Path):
    assert not unfolded_solutions(path), (f"{series.edition_of(path)} {path.name}: solution cells not folded "
                                          f"(source_hidden and the 'solution' tag): {unfolded_solutions(path)}")


def test_an_unfolded_solution_is_found(tmp_path: Path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("ch99.check_1.solution(3)", id="a", metadata={"tags": ["solution"]}),
                             new_code_cell("ch99.check_2.solution(4)", id="b", metadata={
                                 "jupyter": {"source_hidden": True}, "tags": ["solution"]}),
                             new_code_cell("ch99.check_1(answer)", id="c")])
    nbformat.write(nb, tmp_path / "99_x.ipynb")
    assert unfolded_solutions(tmp_path / "99_x.ipynb") == ["a"]
