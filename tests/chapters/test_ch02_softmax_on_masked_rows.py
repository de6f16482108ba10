"""Chapter 2's explorer (helpers.chapters.ch02_softmax_on_masked_rows): softmax on masked rows."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers import toy
from helpers.chapters import ch02_softmax_on_masked_rows as ch02
from helpers.exercises import Mistake
from helpers.language import speaking
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


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
        ({"fill": "-1e9", "dtype": "float16"}, "fill -1e9 does not fit in float16.*choose fill finfo.min.*overflow"),
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
    assert box.summary.value.startswith("<b>Not possible:</b> fill -1e9 does not fit in float16")
    assert "choose fill finfo.min" in box.summary.value and "finfo.min" in box.controls["fill"].options
    box.controls["fill"].value = "finfo.min"
    assert box.summary.value.startswith("float16, fill finfo.min, 2 pad(s), pad rows masked")
    box.controls["fill"].value = "-inf"
    assert "NaN on purpose" in box.summary.value


def test_explorer_labels_sit_beside_their_controls():
    box = ch02.softmax_explorer()
    for control in box.controls.values():
        assert control.style.description_width == "initial"
    assert box.controls["mask_pad_rows"].indent is False


ROW = torch.tensor([2.0, -1e9, 0.5, -1e9, -1e9])                     # exercise 1's row


def by_hand(row):
    shifted = row - row.max()
    return torch.exp(shifted) / torch.exp(shifted).sum()


def test_check_1_accepts_softmax_by_hand_and_names_each_mistake():
    ch02.check_1.solution(by_hand, ROW)
    ch02.check_1.solution(lambda row: torch.exp(row - torch.logsumexp(row, -1)), ROW)   # by hand, another way
    wrong = {
        "answer with a function": by_hand(ROW),
        "by hand, please.*_softmax": lambda row: torch.softmax(row, -1),
        "by hand, please.*called _softmax": lambda row: torch._softmax(row, -1, False),
        "by hand, please.* _softmax": lambda row: torch.ops.aten._softmax(row, -1, False),
        "by hand, please.*_log_softmax": lambda row: row.log_softmax(-1).exp(),
        "by hand, please.*_safe_softmax": lambda row: F.scaled_dot_product_attention(
            torch.ones(1, 1, 1), torch.ones(1, 5, 1), torch.eye(5)[None], attn_mask=row[None, None])[0, 0],
        "NaN on a row of large scores.*overflows": lambda row: torch.exp(row) / torch.exp(row).sum(),
        "NaN on a row whose first cell is masked.*overflows":                # shifted by the first cell, not the max
            lambda row: torch.exp(row - row[0]) / torch.exp(row - row[0]).sum(),
        "every weight is NaN on the exercise's row.*underflowed":              # a fixed shift, too large here
            lambda row: torch.exp(row - 1000) / torch.exp(row - 1000).sum(),
        "sum to 1": lambda row: torch.exp(row - row.max()),
        "sigmoid model": lambda row: torch.sigmoid(row) / torch.sigmoid(row).sum(),
        "log-weights": lambda row: (row - row.max()) - torch.exp(row - row.max()).sum().log(),
        "shaped like the row": lambda row: by_hand(row).tolist(),
        "dtype": lambda row: by_hand(row.double()),
        "exactly 0.0": lambda row: (torch.exp(row - row.max()) + 1e-9) / (torch.exp(row - row.max()) + 1e-9).sum(),
        "not softmax's": lambda row: torch.ones_like(row) / row.numel(),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch02.check_1(answer, ROW)


def test_check_2_accepts_one_fifth_and_names_each_mistake():
    tokens = toy.tokens(n_pads=3)
    ch02.check_2.solution(0.2, tokens)
    ch02.check_2.solution(torch.tensor(0.2), tokens)
    for hint, answer in {"one number": "0.2", "cannot all be 0": 0, "real words only": 0.5,
                         "pad keys only": 1 / 3, "from a row of -inf": float("nan"),
                         "constant row": 0.25}.items():
        with pytest.raises(Mistake, match=hint):
            ch02.check_2(answer, tokens)


def test_check_3_accepts_finfo_min_and_rejects_fragile_fills():
    ids, _, q, k, _ = toy.qkv(toy.tokens(n_pads=2))
    row, key_is_pad = (q @ k.transpose(-2, -1) / 2)[0, 0], (ids == toy.PAD_ID)[0]   # the 犬 row, unmasked
    ch02.check_3.solution(torch.finfo(torch.float16).min, row, key_is_pad)
    ch02.check_3.solution(-65489.0, row, key_is_pad)                  # float16 stores it as -65504 too
    wrong = {
        "one number": "min",
        "NaN is no fill": float("nan"),
        "masked_fill refuses": -1e9,
        "very negative": 5.0,
        "fully masked row became NaN": float("-inf"),
        "exercise's row": -5.0,
    }
    for fragile in (-17.0, -20.0, -100.0, -1e4):                      # pass the 犬 row (max 0.18), fail below it
        wrong[f"about -20000.*works only while|{fragile}"] = fragile
    wrong["about -60000"] = -3e4
    for near in (-60100.0, -61000.0, -65000.0, -65488.0):              # pass the -60000 row, fail at -65472
        wrong[f"-65472.*float16 can hold real scores this low|{near}"] = near
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint.split("|")[0]):
            ch02.check_3(answer, row, key_is_pad)


# --- the Japanese edition: the same views and checks speak Japanese (helpers.language) ---


def test_softmax_view_speaks_japanese_in_the_japanese_edition():
    english = ch02.softmax_view().summary
    with speaking("ja"):
        assert ch02.softmax_view().summary == ("float32、埋め値 -1e9、パッド 2 個、パッド行はそのまま："
                                               "実トークンの行がパッドのキーに置く重みは 0。"
                                               "パッド行：単語に対する普通の確率分布")
        uniform = ch02.softmax_view(2, "-1e4", mask_pad_rows=True).summary
        assert "どの重みも 0.2000（1/5。定数の行は一様になる）" in uniform
        assert "わざと NaN" in ch02.softmax_view(3, "-inf", mask_pad_rows=True).summary
        assert ch02.softmax_view(0).summary.endswith("パッドのキーはない。パッド行はない")
        box = ch02.softmax_explorer()
        box.controls["dtype"].value = "float16"
        assert box.summary.value.startswith("<b>この組み合わせは不可：</b>埋め値 -1e9 は float16 に収まらない")
        assert "埋め値には finfo.min を選ぶこと" in box.summary.value
        with pytest.raises(ValueError, match="単語を少なくとも 1 つ残すこと"):
            ch02.softmax_view(5)
        with pytest.raises(ValueError, match="fill must be one of"):          # a programmer's error stays English
            ch02.softmax_view(fill="-1e99")
    assert ch02.softmax_view().summary == english and english.startswith("float32, fill -1e9, 2 pad(s)")



def test_the_checks_hints_are_japanese_in_the_japanese_edition():
    wrong_1 = {
        "関数で答えること": by_hand(ROW),
        "計算は自分で書くこと.*_softmax を呼び出した": lambda row: torch.softmax(row, -1),
        "大きなスコア（1000 前後）の行で NaN になった": lambda row: torch.exp(row) / torch.exp(row).sum(),
        "先頭のセルがマスクされ.*ある行で NaN": lambda row: torch.exp(row - row[0]) / torch.exp(row - row[0]).sum(),
        "確認問題の行で、すべての重みが NaN.*アンダーフロー":
            lambda row: torch.exp(row - 1000) / torch.exp(row - 1000).sum(),
        "和が 1 にならない": lambda row: torch.exp(row - row.max()),
        "シグモイドのモデル": lambda row: torch.sigmoid(row) / torch.sigmoid(row).sum(),
        "重みの対数": lambda row: (row - row.max()) - torch.exp(row - row.max()).sum().log(),
        r"同じ形状 \(5,\) のテンソル": lambda row: by_hand(row).tolist(),
        r"dtype（torch.float32）を保つ": lambda row: by_hand(row.double()),
        "ちょうど 0.0": lambda row: (torch.exp(row - row.max()) + 1e-9) / (torch.exp(row - row.max()) + 1e-9).sum(),
        "ソフトマックスの重みではない": lambda row: torch.ones_like(row) / row.numel(),
    }
    for hint, answer in wrong_1.items():
        assert re.search(hint, japanese_hint(ch02.check_1, answer, ROW)), hint
    tokens = toy.tokens(n_pads=3)
    for hint, answer in {"数を 1 つ": "0.2", "すべて 0 になることはない": 0, "単語のセルだけで": 0.5,
                         "パッドのキーだけで": 1 / 3, "-inf だけの行": float("nan"), "定数の行": 0.25}.items():
        assert hint in japanese_hint(ch02.check_2, answer, tokens)
    ids, _, q, k, _ = toy.qkv(toy.tokens(n_pads=2))
    row, key_is_pad = (q @ k.transpose(-2, -1) / 2)[0, 0], (ids == toy.PAD_ID)[0]
    wrong_3 = {"埋め値そのもの": "min", "NaN は埋め値にならない": float("nan"),
               "masked_fill が -1e+09 を受け付けない": -1e9, "大きな負の数": 5.0,
               "完全にマスクされた行が NaN": float("-inf"), "確認問題の行で、マスクしたキーに重みが残った": -5.0,
               "-20000 前後の行": -100.0, "-60000 前後": -3e4, "-65472 の行": -65000.0}
    for hint, answer in wrong_3.items():
        assert hint in japanese_hint(ch02.check_3, answer, row, key_is_pad)


def test_the_hints_kept_in_tables_follow_the_style_guide():
    """Hints stored in module tables are not literal Mistake(...) arguments, so the helpers' style test misses them."""
    from tests.test_japanese_edition import forbidden_variants, style_problems

    rules = forbidden_variants()
    texts = [ja for _, ja in ch02.ROW_NAMES] + [ja for _, (_, ja) in ch02.FLOAT16_ROWS.values()]
    assert len(texts) == 6 and not [p for text in texts for p in style_problems("ch02", text, rules)]


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    tokens = toy.tokens(n_pads=3)
    accepts_every_form(ch02.check_2, 0.2, tokens)                  # np.array(0.2) was refused, np.float64(0.2) not
    ch02.check_2.solution(np.array(0.2), tokens)
    ids, _, q, k, _ = toy.qkv(toy.tokens(n_pads=2))
    row, key_is_pad = (q @ k.transpose(-2, -1) / 2)[0, 0], (ids == toy.PAD_ID)[0]
    accepts_every_form(ch02.check_3, torch.finfo(torch.float16).min, row, key_is_pad)
    ch02.check_3.solution(torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16), row, key_is_pad)
    refuses_the_wrong_kind(ch02.check_2, np.bool_(True), "a numpy bool", "numpy の bool", tokens)
    refuses_the_wrong_kind(ch02.check_2, [0.2, 0.2], "a list of length 2", "list（長さ 2）", tokens)
    refuses_the_wrong_kind(ch02.check_3, "-65504", "a str", "str", row, key_is_pad)
    with pytest.raises(Mistake, match="from a row of -inf"):                   # NaN still reaches its own hint
        ch02.check_2(np.array(np.nan), tokens)
    with pytest.raises(Mistake, match="NaN is no fill"):
        ch02.check_3(torch.tensor(float("nan")), row, key_is_pad)
