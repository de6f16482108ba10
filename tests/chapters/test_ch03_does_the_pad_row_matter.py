"""Chapter 3 (helpers.chapters.ch03_does_the_pad_row_matter): the two layers' pad-row policies and the explorer."""

import pytest
import torch

from helpers import toy
from helpers.chapters import ch03_does_the_pad_row_matter as ch03

TOKENS = ["犬", "猫", "鳥", "<pad>", "<pad>"]


def test_attention_layer_policies_agree_on_real_rows():
    ids, x, *_ = toy.qkv(TOKENS)
    _, *W1 = toy.params()
    pad = ids == toy.PAD_ID
    outs = {p: ch03.attention_layer(x, W1, pad, p) for p in ("leave", "uniform", "zero")}
    for out, _ in outs.values():
        assert torch.equal(out[~pad], outs["leave"][0][~pad])
    assert torch.equal(outs["uniform"][1][0, 3:], torch.full((2, 5), 0.2))
    assert (outs["zero"][1][0, 3:] == 0).all()
    assert outs["leave"][1][0, 3:, :3].gt(0).all()
    assert ch03.attention_layer(x, W1, pad, "-inf")[1][0, 3:].isnan().all()
    with pytest.raises(ValueError, match="policy must be one of"):
        ch03.attention_layer(x, W1, pad, "mask")


@pytest.mark.parametrize("policy", ["leave", "uniform", "zero"])
@pytest.mark.parametrize("junk", ["none", "random x1000", "zeros"])
def test_pad_rows_finite_junk_never_reaches_real_rows(policy, junk):
    view = ch03.pad_rows_view(policy, junk)
    text = view.summary
    assert len(view.panels) == 2
    assert text.startswith(f"policy {policy}, junk {junk}, 2 pad(s): real rows max |change| = 0;")


def test_pad_rows_nan_reaches_real_rows_and_says_why():
    text = ch03.pad_rows_view("leave", "NaN").summary
    assert "real rows max |change| = nan" in text and "0 x NaN = NaN" in text
    text = ch03.pad_rows_view("-inf", "none").summary
    assert "real rows max |change| = nan" in text and "-inf pad rows are NaN after layer 1" in text
    text = ch03.pad_rows_view("-inf", "zeros").summary        # the junk overwrote the NaN rows
    assert "real rows max |change| = 0;" in text


def test_pad_rows_invalid_input_is_named():
    with pytest.raises(ValueError, match="every token is <pad>"):
        ch03.pad_rows_view(n_pads=5)
    with pytest.raises(ValueError, match="junk must be one of"):
        ch03.pad_rows_view(junk="inf")
    with pytest.raises(ValueError, match="policy must be one of"):
        ch03.pad_rows_view(policy="mask")


def test_pad_rows_explorer_updates_and_reports_errors():
    box = ch03.pad_rows_explorer()
    assert box.summary.value.startswith("policy leave, junk random x1000, 2 pad(s): real rows max |change| = 0;")
    box.controls["policy"].value = "uniform"
    assert box.summary.value.startswith("policy uniform, junk random x1000")
    box.controls["junk"].value = "NaN"
    assert "0 x NaN = NaN" in box.summary.value
    box.controls["n_pads"].value = 5
    assert box.summary.value.startswith("<b>Not possible:</b> every token is &lt;pad&gt;")
    box.controls["n_pads"].value = 0
    assert box.summary.value == "policy uniform, junk NaN, 0 pad(s): real rows max |change| = 0"
