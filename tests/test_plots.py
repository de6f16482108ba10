import warnings

import matplotlib.pyplot as plt
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
    with pytest.raises(ValueError, match=r"matrix must be 2-D \(2, 2\)"):
        print_table(torch.zeros(1, 2, 2), ["a", "b"], ["a", "b"])
