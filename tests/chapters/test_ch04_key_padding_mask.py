"""Chapter 4 (helpers.chapters.ch04_key_padding_mask): the PAD=1000 batch, the numbers the explorer's summary
states, and the messages for impossible settings."""

import pytest
import torch

from helpers.chapters import ch04_key_padding_mask as ch04
from helpers.exercises import Mistake
from helpers.explorer import view_html
from helpers.language import speaking
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


def test_kpm_batch_is_the_write_ups_data():
    data = ch04.kpm_batch(1000)
    assert data.shape == (3, 5, 1)
    assert data[..., 0].tolist() == [[1, 2, 3, 4, 1000], [5, 6, 7, 1000, 1000], [8, 9, 10, 11, 12]]


def test_kpm_default_view_masks_the_pad_column():
    view = ch04.kpm_view()
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
    summary = ch04.kpm_view(**kwargs).summary
    assert expected in summary


def test_kpm_pad_value_that_is_real_data_is_refused():
    with pytest.raises(ValueError, match="PAD=7 is also a real value"):
        ch04.kpm_view(pad=7)


def test_kpm_view_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ch04.kpm_view(seed=5)
    assert torch.equal(torch.rand(3), expected)


def test_kpm_explorer_updates_and_shows_the_message_in_the_widget():
    box = ch04.kpm_explorer()
    controls, summary = box.controls, box.summary
    assert "exactly 0" in summary.value
    controls["masked"].value = False
    assert "mask off" in summary.value and "= 1.000" in summary.value
    controls["pad"].value = 7
    assert summary.value.startswith("<b>Not possible:</b>") and "real value" in summary.value
    controls["pad"].value = 1000
    assert "mask off" in summary.value


def test_check_1_accepts_the_padding_mask_and_names_each_mistake():
    ids = torch.tensor([[3, 1, 4, 0, 0], [1, 5, 9, 2, 6], [5, 3, 0, 0, 0]])
    ch04.check_1.solution(ids == 0, ids)
    wrong = {
        "bool tensor": (ids == 0).int(),
        "shape": (ids == 0)[None],
        "opposite polarity": ids != 0,
        "start of each row": (ids == 0).flip(-1),
        "a real token is masked": ids == 1,
        "a pad is left visible": torch.zeros(3, 5, dtype=torch.bool),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch04.check_1(answer, ids)


def _chapter_module():
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True)


def test_check_2_finds_the_winning_key_and_names_each_mistake():
    mha, data = _chapter_module(), ch04.kpm_batch(1000)
    kpm = (data == 1000)[:, :, 0]
    ch04.check_2.solution(0, mha, data, kpm)
    wrong = {"an int": 0.5, "runs from 0 to 4": 5, "pad key of item 1": 3, "positive query": 2,
             "reason from step 7": 1}
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch04.check_2(answer, mha, data, kpm)
    with pytest.raises(Mistake, match="pad key of item 1"):
        ch04.check_2(4, mha, data, kpm)


def test_check_3_accepts_the_head_average_and_names_each_mistake():
    weights = torch.softmax(torch.randn(3, 2, 5, 5, generator=torch.Generator().manual_seed(0)), dim=-1)
    ch04.check_3.solution(weights.mean(dim=1), weights)
    wrong = {"a tensor": "weights", "queries or the keys": weights.mean(dim=2),
             "one head's table": weights[:, 0], "sum over the heads": weights.sum(dim=1),
             r"shape \(N, L, S\)": weights, "equally": weights.amax(dim=1)}
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch04.check_3(answer, weights)


# --- the Japanese edition: the same view and checks speak Japanese (helpers.language) ---


def test_kpm_view_speaks_japanese_in_the_japanese_edition():
    english = ch04.kpm_view().summary
    with speaking("ja"):
        assert ch04.kpm_view().summary == ("シード 0（w_q·w_k = +0.909：正のクエリでは値が最も大きいキーが勝つ）。"
                                           "サンプル 0、マスクあり：パッド列の重み（実トークンのクエリ行での平均）= "
                                           "0.000（どの行でもちょうど 0）")
        assert "値が最も小さいキーが勝つ" in ch04.kpm_view(seed=1, masked=False).summary
        assert "マスクなし：" in ch04.kpm_view(masked=False).summary
        assert ch04.kpm_view(item=2).summary.endswith("サンプル 2、マスクあり：サンプル 2 にはパッドのキーがない")
        box = ch04.kpm_explorer()
        box.controls["pad"].value = 7
        assert box.summary.value.startswith("<b>この組み合わせは不可：</b>PAD=7 はデータの実際の値")
    assert ch04.kpm_view().summary == english and english.startswith("seed 0 (w_q·w_k = +0.909: a positive query")



def test_the_checks_hints_are_japanese_in_the_japanese_edition():
    ids = torch.tensor([[3, 1, 4, 0, 0], [1, 5, 9, 2, 6], [5, 3, 0, 0, 0]])
    wrong_1 = {
        "bool テンソルにすること": (ids == 0).int(),
        "形状 (N, S) = (3, 5) になるはずだが、(1, 3, 5) になっている": (ids == 0)[None],
        "極性が逆になっている": ids != 0,
        "各行の先頭にパッド": (ids == 0).flip(-1),
        "ID がパッドの ID 0 である位置だけ": ids == 1,
        "見えるままのパッドがある": torch.zeros(3, 5, dtype=torch.bool),
    }
    for hint, answer in wrong_1.items():
        assert hint in japanese_hint(ch04.check_1, answer, ids)
    mha, data = _chapter_module(), ch04.kpm_batch(1000)
    kpm = (data == 1000)[:, :, 0]
    wrong_2 = {"0 から 4 までの int": 0.5, "受け取った値は 5": 5, "キー 3 はサンプル 1 のパッドのキー": 3,
               "パッドが -500 なので": 2, "ステップ 7 をもとに考えること": 1}
    for hint, answer in wrong_2.items():
        assert hint in japanese_hint(ch04.check_2, answer, mha, data, kpm)
    weights = torch.softmax(torch.randn(3, 2, 5, 5, generator=torch.Generator().manual_seed(0)), dim=-1)
    wrong_3 = {"形状 (N, L, S) = (3, 5, 5) のテンソル": "weights",
               "クエリかキーについて平均": weights.mean(dim=2), "1 つのヘッドの表": weights[:, 0],
               "ヘッドについての和": weights.sum(dim=1), "(3, 2, 5, 5) になっている": weights,
               "等しい割合で": weights.amax(dim=1)}
    for hint, answer in wrong_3.items():
        assert hint in japanese_hint(ch04.check_3, answer, weights)


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    ids = torch.tensor([[3, 1, 4, 0, 0], [1, 5, 9, 2, 6], [5, 3, 0, 0, 0]])
    accepts_every_form(ch04.check_1, ids == 0, ids)
    mha, data = _chapter_module(), ch04.kpm_batch(1000)
    kpm = (data == 1000)[:, :, 0]
    accepts_every_form(ch04.check_2, 0, mha, data, kpm)
    ch04.check_2.solution(0.0, mha, data, kpm)                                 # a whole float is that int
    weights = torch.softmax(torch.randn(3, 2, 5, 5, generator=torch.Generator().manual_seed(0)), dim=-1)
    accepts_every_form(ch04.check_3, weights.mean(dim=1), weights)
    refuses_the_wrong_kind(ch04.check_1, (ids == 0).long().tolist(), "a list of length 3", "list（長さ 3）", ids)
    refuses_the_wrong_kind(ch04.check_2, 0.5, "a float", "float", mha, data, kpm)
    refuses_the_wrong_kind(ch04.check_2, True, "a bool", "bool", mha, data, kpm)
    refuses_the_wrong_kind(ch04.check_3, weights.mean(dim=1) > 0.2, "a torch.bool tensor of shape (3, 5, 5)",
                           "torch.bool のテンソル（形状 (3, 5, 5)）", weights)
