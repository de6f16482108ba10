"""The running toy (helpers.toy, chapter 3's layers included) and the explorers of chapters 1-3 (explorers.padding)."""

import pytest
import torch

from helpers import explorers, toy
from helpers.explorers import view_html

TOKENS = ["犬", "猫", "鳥", "<pad>", "<pad>"]



def summary(box):
    return box.summary.value


# --- chapter 1 ---

def test_toy_tokens():
    assert toy.tokens() == TOKENS
    assert toy.tokens(0) == ["犬", "猫", "鳥", "魚", "馬"]
    assert toy.tokens(5) == ["<pad>"] * 5
    with pytest.raises(ValueError, match="n_pads must be an int from 0 to 5"):
        toy.tokens(6)
    with pytest.raises(ValueError, match="n_pads must be an int"):
        toy.tokens(True)


def test_toy_qkv_is_seeded_and_pads_share_a_vector():
    ids, x, q, k, v = toy.qkv(TOKENS)
    assert ids.tolist() == [[2, 3, 4, 1, 1]]
    assert x.shape == q.shape == k.shape == v.shape == (1, 5, 4)
    assert torch.equal(x[0, 3], x[0, 4])
    assert torch.equal(toy.qkv(TOKENS).q, q)             # same numbers every call, fields by name
    assert torch.equal(x, x.round(decimals=1))                   # readable: one decimal


def test_question_cells_are_pad_rows_times_real_columns():
    assert toy.is_pad(TOKENS).tolist() == [False, False, False, True, True]
    unsure = toy.question_cells(TOKENS)
    expected = torch.zeros(5, 5, dtype=torch.bool)
    expected[3:, :3] = True
    assert torch.equal(unsure, expected)


def test_pad_cells_view_counts():
    view = explorers.pad_cells_view()
    assert view.summary.startswith("2 pad(s): 10 cells set to -1e9")
    assert "6 '?' cells" in view.summary
    (panel,) = view.panels
    assert panel.masked.expand(5, 5).sum() == 10 and panel.framed.sum() == 6 and panel.mark == "?"
    assert view_html(view).count('class="masked"') == 10 and view_html(view).count('class="framed"') == 6
    assert "20 cells set to -1e9" in explorers.pad_cells_view(4).summary
    assert "4 '?' cells" in explorers.pad_cells_view(4).summary
    with pytest.raises(ValueError, match="every token is <pad>"):
        explorers.pad_cells_view(5)


def test_pad_cells_explorer_updates_and_reports_errors():
    box = explorers.pad_cells_explorer()
    assert "10 cells set to -1e9" in summary(box)
    box.controls["n_pads"].value = 1
    assert summary(box).startswith("1 pad(s): 5 cells set to -1e9")
    box.controls["n_pads"].value = 5
    assert summary(box).startswith("<b>Not possible:</b> every token is &lt;pad&gt;")


# --- chapter 2 ---

def test_softmax_view_book_settings():
    view = explorers.softmax_view()
    assert len(view.panels) == 2
    assert view.summary == ("float32, fill -1e9, 2 pad(s), pad rows kept: real rows give the pad keys weight 0; "
                    "pad rows: ordinary distributions over the real words")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fill", ["-1e4", "finfo.min"])
def test_softmax_masked_rows_are_uniform(dtype, fill):
    text = explorers.softmax_view(2, fill, dtype, mask_pad_rows=True).summary
    assert "real rows give the pad keys weight 0;" in text
    assert "every weight 0.2" in text and "1/5" in text


def test_softmax_inf_rows_are_nan_on_purpose():
    text = explorers.softmax_view(3, "-inf", "float32", mask_pad_rows=True).summary
    assert "NaN on purpose" in text
    text = explorers.softmax_view(3, "-inf", "float32", mask_pad_rows=False).summary
    assert "NaN" not in text


def test_softmax_no_pads():
    text = explorers.softmax_view(0).summary
    assert text.endswith("no pad keys; no pad rows")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_pads": 5}, "every token is <pad>"),
        ({"fill": "-1e9", "dtype": "float16"}, "does not fit in torch.float16.*overflow error"),
        ({"fill": "-1e99"}, "fill must be one of"),
        ({"dtype": "float64"}, "dtype one of"),
    ],
)
def test_softmax_invalid_combinations_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        explorers.softmax_view(**kwargs)


def test_softmax_explorer_updates_and_reports_errors():
    box = explorers.softmax_explorer()
    assert summary(box).startswith("float32, fill -1e9, 2 pad(s), pad rows kept")
    box.controls["mask_pad_rows"].value = True
    assert "every weight 0.2000" in summary(box)
    box.controls["dtype"].value = "float16"
    assert summary(box).startswith("<b>Not possible:</b> fill=-1e+09 does not fit in torch.float16")
    box.controls["fill"].value = "finfo.min"
    assert summary(box).startswith("float16, fill finfo.min, 2 pad(s), pad rows masked")
    box.controls["fill"].value = "-inf"
    assert "NaN on purpose" in summary(box)


# --- chapter 3 ---

def test_attention_layer_policies_agree_on_real_rows():
    ids, x, *_ = toy.qkv(TOKENS)
    _, *W1 = toy.params()
    pad = ids == toy.PAD_ID
    outs = {p: toy.attention_layer(x, W1, pad, p) for p in ("leave", "uniform", "zero")}
    for out, _ in outs.values():
        assert torch.equal(out[~pad], outs["leave"][0][~pad])
    assert torch.equal(outs["uniform"][1][0, 3:], torch.full((2, 5), 0.2))
    assert (outs["zero"][1][0, 3:] == 0).all()
    assert outs["leave"][1][0, 3:, :3].gt(0).all()
    assert toy.attention_layer(x, W1, pad, "-inf")[1][0, 3:].isnan().all()
    with pytest.raises(ValueError, match="policy must be one of"):
        toy.attention_layer(x, W1, pad, "mask")


@pytest.mark.parametrize("policy", ["leave", "uniform", "zero"])
@pytest.mark.parametrize("junk", ["none", "random x1000", "zeros"])
def test_pad_rows_finite_junk_never_reaches_real_rows(policy, junk):
    view = explorers.pad_rows_view(policy, junk)
    text = view.summary
    assert len(view.panels) == 2
    assert text.startswith(f"policy {policy}, junk {junk}, 2 pad(s): real rows max |change| = 0;")


def test_pad_rows_nan_reaches_real_rows_and_says_why():
    text = explorers.pad_rows_view("leave", "NaN").summary
    assert "real rows max |change| = nan" in text and "0 x NaN = NaN" in text
    text = explorers.pad_rows_view("-inf", "none").summary
    assert "real rows max |change| = nan" in text and "-inf pad rows are NaN after layer 1" in text
    text = explorers.pad_rows_view("-inf", "zeros").summary        # the junk overwrote the NaN rows
    assert "real rows max |change| = 0;" in text


def test_pad_rows_invalid_input_is_named():
    with pytest.raises(ValueError, match="every token is <pad>"):
        explorers.pad_rows_view(n_pads=5)
    with pytest.raises(ValueError, match="junk must be one of"):
        explorers.pad_rows_view(junk="inf")
    with pytest.raises(ValueError, match="policy must be one of"):
        explorers.pad_rows_view(policy="mask")


def test_pad_rows_explorer_updates_and_reports_errors():
    box = explorers.pad_rows_explorer()
    assert summary(box).startswith("policy leave, junk random x1000, 2 pad(s): real rows max |change| = 0;")
    box.controls["policy"].value = "uniform"
    assert summary(box).startswith("policy uniform, junk random x1000")
    box.controls["junk"].value = "NaN"
    assert "0 x NaN = NaN" in summary(box)
    box.controls["n_pads"].value = 5
    assert summary(box).startswith("<b>Not possible:</b> every token is &lt;pad&gt;")
    box.controls["n_pads"].value = 0
    assert summary(box) == "policy uniform, junk NaN, 0 pad(s): real rows max |change| = 0"
