import os
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from helpers import print_table, show_weights
from helpers.plots import format_cell

TOKENS = ["犬", "猫", "鳥", "<pad>", "<pad>"]


def test_japanese_labels_render_without_missing_glyph_warnings():
    scores = torch.arange(25.0).view(5, 5).masked_fill(torch.tensor([0, 0, 0, 1, 1], dtype=torch.bool), -1e9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font" is a UserWarning
        ax = show_weights(scores, TOKENS, TOKENS, masked=torch.tensor([0, 0, 0, 1, 1], dtype=torch.bool))
        ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert texts[3] == "-1e9" and texts[0] == "0.00"
    assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
    plt.close(ax.figure)


def test_format_cell():
    assert [format_cell(v) for v in (-1e9, float("-inf"), float("nan"), 0.2, -1e4, -65504.0, -3.4028e38)] == \
        ["-1e9", "-inf", "nan", "0.20", "-1e4", "-6.6e4", "-3.4e38"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"matrix": torch.zeros(5)}, ValueError, "matrix must be 2-D"),
        ({"rows": ["a"]}, ValueError, "rows must have 5 labels"),
        ({"cols": ["a"]}, ValueError, "cols must have 5 labels"),
        ({"masked": torch.zeros(5)}, TypeError, "masked must be a bool array"),
        ({"masked": torch.zeros(4, dtype=torch.bool)}, ValueError, "masked must broadcast"),
    ],
)
def test_bad_input_is_named(kwargs, error, message):
    args = {"matrix": torch.zeros(5, 5), "rows": TOKENS, "cols": TOKENS, **kwargs}
    with pytest.raises(error, match=message):
        show_weights(args.pop("matrix"), args.pop("rows"), args.pop("cols"), **args)
    plt.close("all")


def test_print_table(capsys):
    print_table(torch.tensor([[0.5, -1e9], [float("nan"), float("-inf")]]), ["犬", "<pad>"], ["犬", "<pad>"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["犬", "0.50", "-1e9"]
    assert lines[2].split() == ["<pad>", "nan", "-inf"]
    with pytest.raises(ValueError, match=r"matrix must be 2-D \(L, S\), got shape \(1, 2, 2\)"):
        print_table(torch.zeros(1, 2, 2), ["a", "b"], ["a", "b"])


def test_print_table_takes_numpy_like_show_weights(capsys):
    table = [[0.5, -1e9], [float("nan"), float("-inf")]]
    print_table(torch.tensor(table, dtype=torch.float64), ["犬", "<pad>"], ["犬", "<pad>"])
    from_torch = capsys.readouterr().out
    print_table(np.array(table), ["犬", "<pad>"], ["犬", "<pad>"])
    assert capsys.readouterr().out == from_torch
    print_table(torch.tensor([[0.25]], requires_grad=True), ["a"], ["b"], fmt=".1f")  # no .numpy() error
    assert capsys.readouterr().out.splitlines()[1].split() == ["a", "0.2"]


# Bad input to either table function: a clear error naming the argument (issue #11, section 4).
BAD_TABLES = [
    ({"matrix": torch.zeros(0, 5), "rows": []}, ValueError,
     r"matrix must have at least one row and one column, got shape \(0, 5\)"),
    ({"matrix": np.zeros((5, 0)), "cols": []}, ValueError, "matrix must have at least one row and one column"),
    ({"matrix": [["a", "b"]]}, TypeError, "matrix must be a torch.Tensor or numpy array of numbers, got list"),
    ({"rows": "abcde"}, TypeError, "rows must be a list of str labels .one per query row., got str 'abcde'"),
    ({"cols": "abc"}, TypeError, "cols must be a list of str labels .one per key column., got str 'abc'"),
    ({"rows": ["a", "b", "c"]}, ValueError, r"rows must have 5 labels \(one per query row\), got 3"),
    ({"cols": [0, 1, 2, 3, 4]}, TypeError, "cols must hold str labels, got int 0"),
    ({"rows": None}, TypeError, "rows must be a list of str labels .one per query row., got NoneType"),
    ({"fmt": ".2q"}, ValueError, "fmt must be a format spec for a float, like '.2f', got '.2q'"),
    ({"fmt": "d"}, ValueError, "fmt must be a format spec for a float, like '.2f', got 'd'"),
    ({"fmt": 2}, TypeError, "fmt must be a format spec str for a float, like '.2f', got int"),
]


@pytest.mark.parametrize("draw", ["show_weights", "print_table"])
@pytest.mark.parametrize(("kwargs", "error", "message"), BAD_TABLES)
def test_bad_tables_are_refused_with_the_argument_named(draw, kwargs, error, message, capsys):
    args = {"matrix": torch.zeros(5, 5), "rows": TOKENS, "cols": TOKENS, **kwargs}
    function = show_weights if draw == "show_weights" else print_table
    with pytest.raises(error, match=message):
        function(args.pop("matrix"), args.pop("rows"), args.pop("cols"), fmt=args.pop("fmt", ".2f"))
    assert capsys.readouterr().out == "", "nothing is printed before the error"
    assert not plt.get_fignums(), "no figure is left open"


@pytest.mark.slow   # a fresh interpreter importing helpers (~4 s): in make test, not in make unit
def test_importing_helpers_leaves_matplotlib_settings_alone():
    """In a fresh interpreter: importing every helpers module and drawing changes no global rcParams."""
    code = """if True:
        import matplotlib
        matplotlib.use("Agg")
        before = dict(matplotlib.rcParams)
        import torch
        import helpers, helpers.plots, helpers.explorer
        from helpers import chapters
        for number in chapters.chapters():
            chapters.module(number)
        from helpers import show_weights
        changed = {k for k in before if matplotlib.rcParams[k] != before[k]}
        assert not changed, changed
        ax = show_weights(torch.eye(2), ["犬", "猫"], ["犬", "猫"], title="t")
        assert ax.texts[0].get_fontsize() == 12 and ax.title.get_fontsize() == 14
        assert ax.get_xticklabels()[0].get_fontfamily() == ["IPAexGothic"]
        assert dict(matplotlib.rcParams) == before
        print("ok")
    """
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_one_value_scale_keeps_zero_lightest():
    """A table whose unmasked cells are all 0 (e.g. an MHA mask passed to SDPA) must not paint 0 mid-blue."""
    import numpy as np

    from helpers.plots import CMAP, cell_colors

    zeros = np.zeros((2, 2))
    hidden = np.array([[False, True], [False, False]])
    rgba, dark = cell_colors(zeros, hidden)
    assert np.allclose(rgba[0, 0], CMAP(0.0)) and not dark.any()
    rgba, _ = cell_colors(np.full((2, 2), 0.2), np.zeros((2, 2), dtype=bool))
    assert np.allclose(rgba[0, 0], CMAP(0.2 / 1.2))  # scale 0 .. value + 1


def test_a_fixed_scale_paints_the_same_value_alike_in_every_table():
    """vmin=0, vmax=1 (weights): 0.95 and 0.99 get nearly one shade, 0 is the lightest, values outside are clipped."""
    import numpy as np
    import pytest

    from helpers.plots import CMAP, cell_colors

    visible = np.zeros((1, 3), dtype=bool)
    rgba, dark = cell_colors(np.array([[0.95, 0.99, 0.97]]), visible, 0.0, 1.0)
    assert np.allclose(rgba[0, 0], CMAP(0.95)) and np.allclose(rgba[0, 1], CMAP(0.99)) and dark.all()
    default, _ = cell_colors(np.array([[0.95, 0.99, 0.97]]), visible)     # scaled to the table: 0.95 is white
    assert np.allclose(default[0, 0], CMAP(0.0))
    rgba, _ = cell_colors(np.array([[-1.0, 0.0, 2.0]]), visible, 0.0, 1.0)
    assert np.allclose(rgba[0, 0], CMAP(0.0)) and np.allclose(rgba[0, 2], CMAP(1.0))
    with pytest.raises(ValueError, match="vmin must not be above vmax"):
        cell_colors(np.zeros((1, 3)), visible, 1.0, 0.0)
