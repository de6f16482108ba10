"""Chapter 5's explorer (helpers.chapters.ch05_attn_mask_and_causality): which outputs an edit changes, and the
messages for impossible settings."""

import pytest

from helpers.chapters import ch05_attn_mask_and_causality as ch05


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
    summary = ch05.causal_view(**kwargs).summary
    assert expected in summary


def test_causal_view_hatches_the_future_and_labels_the_changed_outputs():
    (panel,) = ch05.causal_view().panels
    assert panel.matrix[0].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]   # query 0 sees only itself
    assert panel.rows == ["犬 same", "猫 CHANGED", "鳥 CHANGED", "<pad> CHANGED", "<pad> CHANGED"]
    assert panel.red_rows == (1, 2, 3, 4) and panel.red_cols == (1,)
    assert panel.masked.sum() == 10 + 6 - 3         # 10 future cells, 2 pad columns, 3 cells in both


@pytest.mark.parametrize("edit", range(5))
def test_causal_left_padding_with_both_masks_is_refused(edit):
    with pytest.raises(ValueError, match=r"query 0 \(<pad>\) would see no key at all"):
        ch05.causal_view(sequence="left-padded", causal=True, padding=True, edit=edit)


def test_causal_bad_arguments_are_named():
    with pytest.raises(ValueError, match="sequence must be one of"):
        ch05.causal_view(sequence="middle-padded")
    with pytest.raises(ValueError, match="edit must be a position from 0 to 4"):
        ch05.causal_view(edit=5)


def test_causal_explorer_updates_and_shows_the_message_in_the_widget():
    box = ch05.causal_explorer()
    controls, summary = box.controls, box.summary
    assert "exactly unchanged: [0]" in summary.value
    controls["sequence"].value = "left-padded"
    assert summary.value.startswith("<b>Not possible:</b>") and "would see no key at all" in summary.value
    controls["padding"].value = False
    assert summary.value.startswith("left-padded, causal:")
    controls["edit"].value = 4
    assert "exactly unchanged: [0, 1, 2, 3]" in summary.value
