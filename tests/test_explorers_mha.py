"""Chapter 4 and 5 explorers: the numbers their summaries state, and the messages for impossible settings."""

import pytest
import torch

from helpers.explorers import causal_explorer, causal_view, kpm_explorer, kpm_view, view_html
from helpers.explorers.mha import kpm_batch

# --- chapter 4 ---

def test_kpm_batch_is_the_write_ups_data():
    data = kpm_batch(1000)
    assert data.shape == (3, 5, 1)
    assert data[..., 0].tolist() == [[1, 2, 3, 4, 1000], [5, 6, 7, 1000, 1000], [8, 9, 10, 11, 12]]


def test_kpm_default_view_masks_the_pad_column():
    view = kpm_view()
    summary = view.summary
    (panel,) = view.panels
    assert panel.cols == ["1", "2", "3", "4", "PAD"] and panel.matrix.shape == (5, 5)
    assert (panel.matrix[:, 4] == 0).all()  # the pad column
    assert view_html(view).count('class="masked"') == 5
    assert "w_q·w_k = +0.909" in summary and "largest" in summary
    assert "mean over real query rows = 0.000 (exactly 0 in every row)" in summary


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"masked": False}, "mask off: weight on the pad column(s), mean over real query rows = 1.000"),
        ({"masked": False, "seed": 1}, "smallest"),
        ({"item": 2}, "item 2 has no pad key"),
        ({"masked": False, "item": 1}, "= 1.000"),
    ],
)
def test_kpm_summary_states_the_pad_weight(kwargs, expected):
    summary = kpm_view(**kwargs).summary
    assert expected in summary


def test_kpm_pad_value_that_is_real_data_is_refused():
    with pytest.raises(ValueError, match="PAD=7 is also a real value"):
        kpm_view(pad=7)


def test_kpm_view_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    kpm_view(seed=5)
    assert torch.equal(torch.rand(3), expected)


def test_kpm_explorer_updates_and_shows_the_message_in_the_widget():
    box = kpm_explorer()
    controls, summary = box.controls, box.summary
    assert "exactly 0" in summary.value
    controls["masked"].value = False
    assert "mask off" in summary.value and "= 1.000" in summary.value
    controls["pad"].value = 7
    assert summary.value.startswith("<b>Not possible:</b>") and "real value" in summary.value
    controls["pad"].value = 1000
    assert "mask off" in summary.value


# --- chapter 5 ---

@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "right-padded, causal + key padding: editing token 1 (猫) changes the outputs at positions [1, 2, 3, 4]; "
             "exactly unchanged: [0]"),
        ({"edit": 3}, "changes the outputs at positions [3]; exactly unchanged: [0, 1, 2, 4]"),
        ({"causal": False, "padding": False, "edit": 4}, "no mask: editing token 4 (<pad>) changes the outputs at "
                                                        "positions [0, 1, 2, 3, 4]"),
        ({"sequence": "no padding", "padding": False, "edit": 2}, "exactly unchanged: [0, 1]"),
        ({"sequence": "left-padded", "padding": False, "edit": 0}, "exactly unchanged: none"),
    ],
)
def test_causal_summary_names_the_changed_outputs(kwargs, expected):
    summary = causal_view(**kwargs).summary
    assert expected in summary


def test_causal_view_hatches_the_future_and_labels_the_changed_outputs():
    (panel,) = causal_view().panels
    assert panel.matrix[0].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]   # query 0 sees only itself
    assert panel.rows == ["犬 same", "猫 CHANGED", "鳥 CHANGED", "<pad> CHANGED", "<pad> CHANGED"]
    assert panel.red_rows == (1, 2, 3, 4) and panel.red_cols == (1,)
    assert panel.masked.sum() == 10 + 6 - 3         # 10 future cells, 2 pad columns, 3 cells in both


@pytest.mark.parametrize("edit", range(5))
def test_causal_left_padding_with_both_masks_is_refused(edit):
    with pytest.raises(ValueError, match=r"query 0 \(<pad>\) would see no key at all"):
        causal_view(sequence="left-padded", causal=True, padding=True, edit=edit)


def test_causal_bad_arguments_are_named():
    with pytest.raises(ValueError, match="sequence must be one of"):
        causal_view(sequence="middle-padded")
    with pytest.raises(ValueError, match="edit must be a position from 0 to 4"):
        causal_view(edit=5)


def test_causal_explorer_updates_and_shows_the_message_in_the_widget():
    box = causal_explorer()
    controls, summary = box.controls, box.summary
    assert "exactly unchanged: [0]" in summary.value
    controls["sequence"].value = "left-padded"
    assert summary.value.startswith("<b>Not possible:</b>") and "would see no key at all" in summary.value
    controls["padding"].value = False
    assert summary.value.startswith("left-padded, causal:")
    controls["edit"].value = 4
    assert "exactly unchanged: [0, 1, 2, 3]" in summary.value


@pytest.mark.parametrize("make", [kpm_explorer, causal_explorer])
def test_first_control_one_step_gives_a_new_valid_picture(make):
    """What the generic browser check does: move the first control one step (next option / +1)."""
    box = make()
    first = next(iter(box.controls.values()))
    before = box.summary.value
    if hasattr(first, "options"):
        values = [o[1] if isinstance(o, tuple) else o for o in first.options]
        first.value = values[(values.index(first.value) + 1) % len(values)]
    else:
        first.value = first.value + 1
    after = box.summary.value
    assert after != before and not after.startswith("<b>Not possible")
