"""Chapter 2's explorer (helpers.chapters.ch02_softmax_on_masked_rows): softmax on masked rows."""

import pytest

from helpers.chapters import ch02_softmax_on_masked_rows as ch02


def test_softmax_view_book_settings():
    view = ch02.softmax_view()
    assert len(view.panels) == 2
    assert view.summary == ("float32, fill -1e9, 2 pad(s), pad rows kept: real rows give the pad keys weight 0; "
                    "pad rows: ordinary distributions over the real words")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fill", ["-1e4", "finfo.min"])
def test_softmax_masked_rows_are_uniform(dtype, fill):
    text = ch02.softmax_view(2, fill, dtype, mask_pad_rows=True).summary
    assert "real rows give the pad keys weight 0;" in text
    assert "every weight 0.2" in text and "1/5" in text


def test_softmax_inf_rows_are_nan_on_purpose():
    text = ch02.softmax_view(3, "-inf", "float32", mask_pad_rows=True).summary
    assert "NaN on purpose" in text
    text = ch02.softmax_view(3, "-inf", "float32", mask_pad_rows=False).summary
    assert "NaN" not in text


def test_softmax_no_pads():
    text = ch02.softmax_view(0).summary
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
        ch02.softmax_view(**kwargs)


def test_softmax_explorer_updates_and_reports_errors():
    box = ch02.softmax_explorer()
    assert box.summary.value.startswith("float32, fill -1e9, 2 pad(s), pad rows kept")
    box.controls["mask_pad_rows"].value = True
    assert "every weight 0.2000" in box.summary.value
    box.controls["dtype"].value = "float16"
    assert box.summary.value.startswith("<b>Not possible:</b> fill=-1e+09 does not fit in torch.float16")
    box.controls["fill"].value = "finfo.min"
    assert box.summary.value.startswith("float16, fill finfo.min, 2 pad(s), pad rows masked")
    box.controls["fill"].value = "-inf"
    assert "NaN on purpose" in box.summary.value
