"""Chapter 5's explorer (helpers.chapters.ch05_attn_mask_and_causality): which outputs an edit changes, and the
messages for impossible settings."""

import pytest
import torch

from helpers.chapters import ch05_attn_mask_and_causality as ch05
from helpers.exercises import Mistake
from helpers.language import speaking
from helpers.masks import causal_mask, key_padding_mask
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


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


def _all_ones_module():
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True)


def test_check_1_accepts_the_window_and_names_each_mistake():
    mha, x = _all_ones_module(), torch.ones(1, 5, 1)
    window = causal_mask(5) | torch.ones(5, 5, dtype=torch.bool).tril(-2)
    ch05.check_1.solution(window, mha, x)
    wrong = {
        "bool tensor": window.float(),
        "shape": window[None],
        "opposite polarity": ~window,
        "later key": torch.tril(torch.ones(5, 5)).bool(),
        "see itself": window | torch.eye(5, dtype=torch.bool),
        "plain causal mask": causal_mask(5),
        "too wide": causal_mask(5) | torch.ones(5, 5, dtype=torch.bool).tril(-3),
        "too narrow": ~torch.eye(5, dtype=torch.bool),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch05.check_1(answer, mha, x)


def test_check_2_accepts_the_row_and_names_each_mistake():
    mha, batch = _all_ones_module(), torch.ones(2, 5, 1)
    ch05.check_2.solution([0.5, 0.5, 0, 0, 0], mha, batch)
    wrong = {"list of 5 numbers": "0.5 0.5 0 0 0", "5 numbers, got 2": [0.5, 0.5], "sum to 1": [1, 1, 0, 0, 0],
             "ignores both masks": [0.2] * 5, "check again which keys of item 1 are pads": [1 / 3, 1 / 3, 1 / 3, 0, 0],
             "which keys": [1, 0, 0, 0, 0]}
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch05.check_2(answer, mha, batch)


def check_3_data(N, H, S):
    """Exercise 3's data: the per-item mask (N, S, S), a seeded MHA with H heads, the batch, and its outputs."""
    torch.manual_seed(0)
    mha6 = torch.nn.MultiheadAttention(embed_dim=6, num_heads=H, batch_first=True)
    seq = torch.randn(N, S, 6)
    kpm = key_padding_mask([6, 4], max_len=S)
    per_item = causal_mask(S)[None] | kpm[:, None, :]
    with torch.no_grad():
        reference, _ = mha6(seq, seq, seq, attn_mask=causal_mask(S), key_padding_mask=kpm)
    return per_item, mha6, seq, reference


def test_check_3_accepts_batch_major_order_and_names_each_mistake():
    N, H, S = 2, 3, 6
    per_item, mha6, seq, reference = check_3_data(N, H, S)
    ch05.check_3.solution(per_item.unsqueeze(1).expand(N, H, S, S).reshape(N * H, S, S), per_item, mha6, seq,
                          reference)
    wrong = {"bool type": per_item.repeat_interleave(H, 0).float(), "shape": per_item,
             "head-major": per_item.repeat(H, 1, 1),
             "every head": per_item.unsqueeze(0).expand(H, N, S, S).reshape(N * H, S, S).flip(0)}
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch05.check_3(answer, per_item, mha6, seq, reference)


# --- the Japanese edition: the same view and checks speak Japanese (helpers.language) ---


def test_causal_view_speaks_japanese_in_the_japanese_edition():
    english = ch05.causal_view().summary
    with speaking("ja"):
        assert ch05.causal_view().summary == ("右パディング、因果マスク + パディングマスク："
                                              "トークン 1（猫）を編集すると、位置 [1, 2, 3, 4] の出力が変わる。"
                                              "まったく変わらない位置：[0]")
        summary = ch05.causal_view(sequence="left-padded", padding=False, edit=0).summary
        assert summary.startswith("左パディング、因果マスク：") and summary.endswith("まったく変わらない位置：なし")
        assert ch05.causal_view(causal=False, padding=False).summary.startswith("右パディング、マスクなし：")
        with pytest.raises(ValueError, match="クエリ 0（<pad>）には見えるキーが 1 つもなくなる"):
            ch05.causal_view(sequence="left-padded")
        box = ch05.causal_explorer()
        box.controls["sequence"].value = "left-padded"
        assert box.summary.value.startswith("<b>この組み合わせは不可：</b>クエリ 0（&lt;pad&gt;）には見えるキー")
        assert "（第 7 章）。" in box.summary.value
        with pytest.raises(ValueError, match="sequence must be one of"):     # a programmer's error stays English
            ch05.causal_view(sequence="middle-padded")
    assert ch05.causal_view().summary == english and english.startswith("right-padded, causal + key padding:")



def test_the_checks_hints_are_japanese_in_the_japanese_edition():
    mha, x = _all_ones_module(), torch.ones(1, 5, 1)
    window = causal_mask(5) | torch.ones(5, 5, dtype=torch.bool).tril(-2)
    wrong_1 = {
        "bool テンソルにすること": window.float(),
        "形状は (L, S) = (5, 5) になるはずだが、(1, 5, 5) になっている": window[None],
        "極性が逆": ~window,
        "後ろのキーを見られるクエリ": torch.tril(torch.ones(5, 5)).bool(),
        "自分自身を見られる": window | torch.eye(5, dtype=torch.bool),
        "ただの因果マスク": causal_mask(5),
        "広すぎる": causal_mask(5) | torch.ones(5, 5, dtype=torch.bool).tril(-3),
        "狭すぎる": ~torch.eye(5, dtype=torch.bool),
    }
    for hint, answer in wrong_1.items():
        assert hint in japanese_hint(ch05.check_1, answer, mha, x)
    batch = torch.ones(2, 5, 1)
    wrong_2 = {"5 個の数のリストで答えること": "0.5 0.5 0 0 0", "2 個になっている": [0.5, 0.5],
               "和は 1 である": [1, 1, 0, 0, 0], "両方のマスクを無視": [0.2] * 5,
               "サンプル 1 のどのキーがパッドかを確かめ直すこと": [1 / 3, 1 / 3, 1 / 3, 0, 0],
               "クエリ 4 が参照してよいキーはどれか。": [1, 0, 0, 0, 0]}
    for hint, answer in wrong_2.items():
        assert hint in japanese_hint(ch05.check_2, answer, mha, batch)
    N, H, S = 2, 3, 6
    per_item, mha6, seq, reference = check_3_data(N, H, S)
    wrong_3 = {"per_item と同じく bool テンソル": per_item.repeat_interleave(H, 0).float(),
               "(N*num_heads, L, S) = (6, 6, 6) になるはず": per_item,
               "ヘッド優先の順序": per_item.repeat(H, 1, 1),
               "どのヘッド h についても": per_item.unsqueeze(0).expand(H, N, S, S).reshape(N * H, S, S).flip(0)}
    for hint, answer in wrong_3.items():
        assert hint in japanese_hint(ch05.check_3, answer, per_item, mha6, seq, reference)


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    mha, x = _all_ones_module(), torch.ones(1, 5, 1)
    window = causal_mask(5) | torch.ones(5, 5, dtype=torch.bool).tril(-2)
    accepts_every_form(ch05.check_1, window, mha, x)
    batch = torch.ones(2, 5, 1)
    accepts_every_form(ch05.check_2, (0.5, 0.5, 0, 0, 0), mha, batch)
    N, H, S = 2, 3, 6
    per_item, mha6, seq, reference = check_3_data(N, H, S)
    accepts_every_form(ch05.check_3, per_item.repeat_interleave(H, 0), per_item, mha6, seq, reference)
    refuses_the_wrong_kind(ch05.check_1, window.float().numpy(), "a numpy float32 array of shape (5, 5)",
                           "numpy の float32 配列（形状 (5, 5)）", mha, x)
    refuses_the_wrong_kind(ch05.check_2, [[0.5, 0.5, 0, 0, 0]], "a list of length 1", "list（長さ 1）", mha, batch)
    refuses_the_wrong_kind(ch05.check_3, "per_item", "a str", "str", per_item, mha6, seq, reference)
