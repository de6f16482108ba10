"""Chapter 10: waste counts, bucketing, packing, mask_mods and the packing explorer
(helpers/chapters/ch10_packing_and_the_cost_of_padding.py)."""

import itertools

import numpy as np
import pytest
import torch
from torch.nn.attention.flex_attention import create_mask

from helpers.chapters import ch10_packing_and_the_cost_of_padding as ch10
from helpers.exercises import Mistake
from helpers.explorer import view_html
from helpers.language import speaking
from helpers.masks import causal_mask, key_padding_mask
from tests.chapters import accepts_every_form, refuses_the_wrong_kind


def test_padded_cost_counts_squares_and_rows():
    cost = ch10.padded_cost([[7, 2, 3, 12, 5]])
    assert cost == (49 + 4 + 9 + 144 + 25, 5 * 144, 29, 60)
    assert cost.wasted_attention == pytest.approx(1 - 231 / 720)
    assert ch10.padded_cost([[4, 4, 4]]).wasted_attention == 0


def test_padded_cost_sums_over_batches():
    both = ch10.padded_cost([[3, 1], [5]])
    assert both.computed_attention == 2 * 9 + 25 and both.computed_positionwise == 2 * 3 + 5


def test_batching_strategies_cover_every_sequence_once():
    lengths = ch10.lognormal_lengths(50, median=10, sigma=1.0, max_len=40, seed=0)
    for groups in (ch10.in_order(lengths, 8), ch10.bucketed(lengths, 8), ch10.packed_rows(lengths, 40)):
        assert sorted(itertools.chain(*groups)) == list(range(50))
    assert all(sum(lengths[i] for i in row) <= 40 for row in ch10.packed_rows(lengths, 40))


def test_bucketing_never_wastes_more_than_arrival_order():
    for seed in range(5):
        lengths = ch10.lognormal_lengths(64, median=20, sigma=0.9, max_len=200, seed=seed)
        for n in (2, 4, 16):
            plain = ch10.padded_cost(ch10.pick(lengths, ch10.in_order(lengths, n)))
            sorted_ = ch10.padded_cost(ch10.pick(lengths, ch10.bucketed(lengths, n)))
            assert sorted_.computed_attention <= plain.computed_attention


def test_pack_restarts_positions_and_mask_is_block_causal():
    row = ch10.pack([3, 1, 2])
    assert row.document.tolist() == [0, 0, 0, 1, 2, 2]
    assert row.position.tolist() == [0, 1, 2, 0, 0, 1]
    blocked = ch10.document_mask(row.document)
    expected = torch.ones(6, 6, dtype=torch.bool)
    for start, n in ((0, 3), (3, 1), (4, 2)):
        expected[start:start + n, start:start + n] = causal_mask(n)
    assert torch.equal(blocked, expected)
    assert not ch10.document_mask(row.document, causal=False)[0, 2]


def test_mask_mods_equal_hand_built_masks():
    lengths = torch.tensor([5, 3])
    kpm = key_padding_mask([5, 3])[:, None, None, :]
    L = 5
    pairs = [
        (ch10.padding_mod(lengths), ~kpm.expand(2, 1, L, L)),
        (ch10.causal_mod, ~causal_mask(L).expand(2, 1, L, L)),
        (ch10.padding_causal_mod(lengths), ~(kpm | causal_mask(L))),
        (ch10.sliding_window_mod(2),
         ~(causal_mask(L) | torch.ones(L, L, dtype=torch.bool).tril(-2)).expand(2, 1, L, L)),
        (ch10.document_mod(torch.tensor([0, 0, 1, 1, 1])),
         ~ch10.document_mask(torch.tensor([0, 0, 1, 1, 1])).expand(2, 1, L, L)),
    ]
    for mod, want in pairs:
        assert torch.equal(create_mask(mod, 2, None, L, L, device="cpu"), want)


def test_lognormal_lengths_is_seeded_and_clipped():
    a = ch10.lognormal_lengths(100, median=8, sigma=2.0, max_len=30, seed=3)
    assert a == ch10.lognormal_lengths(100, median=8, sigma=2.0, max_len=30, seed=3)
    assert min(a) >= 1 and max(a) <= 30 and max(a) == 30


@pytest.mark.parametrize("call, error, match", [
    (lambda: ch10.padded_cost([[3, 0]]), ValueError, "each batch must hold ints >= 1"),
    (lambda: ch10.padded_cost([]), ValueError, "batches must be a non-empty list"),
    (lambda: ch10.in_order([3, 4], 0), ValueError, "batch_size must be an int >= 1"),
    (lambda: ch10.packed_rows([3, 9], 8), ValueError, r"row_len must be >= the longest sequence \(9\)"),
    (lambda: ch10.packed_cost([[5, 4]], 8), ValueError, "every row must fit in row_len=8"),
    (lambda: ch10.packed_cost([], 8), ValueError, "rows must be a non-empty list"),
    (lambda: ch10.pack([2, True]), TypeError, r"lengths must hold ints .*got \[2, True\]"),
    (lambda: ch10.pack([]), ValueError, "lengths must be a non-empty list"),
    (lambda: ch10.document_mask(torch.zeros(3)), TypeError, "document must be a 1-D integer tensor"),
    (lambda: ch10.document_mask(torch.zeros(3, dtype=torch.long), causal=1), TypeError, "causal must be a bool"),
    (lambda: ch10.sliding_window_mod(0), ValueError, "width must be an int >= 1"),
    (lambda: ch10.padding_mod([3, 2]), TypeError, r"lengths must be a 1-D integer tensor.*torch.tensor"),
    (lambda: ch10.document_mod([0, 0, 1]), TypeError, "document must be a 1-D integer tensor"),
    (lambda: ch10.pick([3, 4, 5], [[0, -1]]), ValueError, r"groups must hold indices 0..2 into lengths, got \[-1\]"),
    (lambda: ch10.pick([3, 4, 5], [[0, 3]]), ValueError, r"indices 0..2 .*got \[3\]"),
    (lambda: ch10.pick([3, 4, 5], [[0.5]]), TypeError, "groups.* must be an int"),
    (lambda: ch10.lognormal_lengths(4, median=0, sigma=1, max_len=8, seed=0), ValueError, "median must be > 0"),
    (lambda: ch10.lognormal_lengths("4", median=8, sigma=1, max_len=8, seed=0), TypeError, "n must be an int"),
    (lambda: ch10.lognormal_lengths(4, median=8, sigma=1, max_len=8, seed=None), TypeError, "seed must be an int"),
    (lambda: ch10.lognormal_lengths(4, median=8, sigma=1, max_len=8, seed=2**70), ValueError, "seed must fit"),
    (lambda: ch10.lognormal_lengths(10**9, median=8, sigma=1, max_len=8, seed=0), ValueError, "at most 10"),
    (lambda: ch10.lognormal_lengths(4, median="8", sigma=1, max_len=8, seed=0), TypeError, "median must be a number"),
    (lambda: ch10.median_ms(None), TypeError, "fn must be a function"),
    (lambda: ch10.median_ms(lambda: None, repeats=1.5), TypeError, "repeats must be an int"),
])
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("distribution, batch_size, strategy",
                         list(itertools.product(ch10.DISTRIBUTIONS, ch10.BATCH_SIZES, ch10.STRATEGIES)))
def test_view_renders_and_counts(distribution, batch_size, strategy):
    view = ch10.packing_view(distribution, batch_size, strategy)
    assert "<table" in view_html(view)
    assert f"batch size {batch_size}, {strategy}:" in view.summary
    lengths = ch10.pool_lengths(distribution)
    assert f"for {sum(lengths)} tokens" in view.summary
    layout_rows = sum(len(p.rows) for p in view.panels[:-1])
    packed = len(ch10.packed_rows(list(lengths), max(lengths)))
    assert layout_rows == (packed if strategy == "pack" else len(lengths))


def test_view_refuses_unknown_values():
    with pytest.raises(ValueError, match="strategy"):
        ch10.packing_view(strategy="shuffle")
    with pytest.raises(ValueError, match="batch_size"):
        ch10.packing_view(batch_size=3)
    with pytest.raises(ValueError, match="distribution"):
        ch10.packing_view(distribution="uniform")


def test_explorer_updates_summary():
    box = ch10.packing_explorer()
    summary = box.summary
    before = summary.value
    box.controls["strategy"].value = "bucket"
    assert summary.value != before and "bucket" in summary.value


def test_check_1_accepts_the_wasted_fraction_and_names_each_mistake():
    batch = [7, 2, 3, 12, 5]
    ch10.check_1.solution(1 - (49 + 4 + 9 + 144 + 25) / (5 * 144), batch)
    wrong = {
        "a number such as 0.5; got a str": "0.68",
        "percentage": 100 * (1 - 231 / 720),
        "useful share": 231 / 720,
        "counts pad positions": 1 - 29 / 60,
        "between 0 and 1": -0.2,
        "count the": 0.5,
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch10.check_1(answer, batch)
    with pytest.raises(Mistake, match="a number such as 0.5; got a bool"):
        ch10.check_1(True, batch)


def test_check_2_accepts_a_sliding_window_and_names_each_mistake():
    ch10.check_2.solution(ch10.sliding_window_mod)

    def window(test):
        return lambda w: lambda b, h, q, kv: test(w, q, kv)

    wrong = {
        "function of the width": 3,
        "should return a mask_mod": lambda w: None,
        "with &, | and ~": window(lambda w, q, kv: q >= kv and q - kv < w),
        "opposite polarity": window(lambda w, q, kv: (q < kv) | (q - kv >= w)),
        "must also be causal": window(lambda w, q, kv: (q - kv).abs() < w),
        "one key too wide": window(lambda w, q, kv: (q >= kv) & (q - kv <= w)),
        "one key too narrow": window(lambda w, q, kv: (q >= kv) & (q - kv < w - 1)),
        "the mask differs": window(lambda w, q, kv: q >= kv),
        # the mask_mod itself, not the factory: answer(w) used to raise "<lambda>() missing 3 required ..." bare
        "^answer_2 is a mask_mod itself; it should be the function of the width w": ch10.sliding_window_mod(2),
        "^with w = 1, your function raised ZeroDivisionError": lambda w: 1 / 0,
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch10.check_2(answer)


def test_check_3_accepts_restarted_positions_and_names_each_mistake():
    docs = [3, 1, 4, 2]
    ch10.check_3.solution([0, 1, 2, 0, 0, 1, 2, 3, 0, 1], docs)
    wrong = {
        "one position per token": [0, 1, 2, 0],
        "run on across the whole row": list(range(10)),
        "document ids": [0, 0, 0, 1, 2, 2, 2, 2, 3, 3],
        "start at 0": [1, 2, 3, 1, 1, 2, 3, 4, 1, 2],
        r"document 2 \(slots 4 to 7\)": [0, 1, 2, 0, 0, 1, 2, 2, 0, 1],
        "list of ints": [0.5] * 10,
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch10.check_3(answer, docs)


# ---- the Japanese edition: the same checks and the explorer's summary speak Japanese ----

def test_the_checks_hint_in_japanese():
    batch = [7, 2, 3, 12, 5]
    with speaking("ja"):
        wrong_1 = {
            "0.5 のような数で答えること。渡されたのは str である": "0.68",
            "パーセントである": 100 * (1 - 231 / 720),
            "有用なスコアの割合": 231 / 720,
            "パッド位置.*を数えている": 1 - 29 / 60,
            "0 から 1 の間にある": -0.2,
            "組を数えること": 0.5,
        }
        for hint, answer in wrong_1.items():
            with pytest.raises(Mistake, match=hint):
                ch10.check_1(answer, batch)

        def window(test):
            return lambda w: lambda b, h, q, kv: test(w, q, kv)

        wrong_2 = {
            "幅 w の関数にすること": 3,
            "bool テンソルを返す関数を返すこと": lambda w: None,
            "&、|、~（と括弧）で組み合わせること": window(lambda w, q, kv: q >= kv and q - kv < w),
            "極性が逆である": window(lambda w, q, kv: (q < kv) | (q - kv >= w)),
            "因果的でもなければならない": window(lambda w, q, kv: (q - kv).abs() < w),
            "キー 1 つ分広すぎる": window(lambda w, q, kv: (q >= kv) & (q - kv <= w)),
            "キー 1 つ分狭すぎる": window(lambda w, q, kv: (q >= kv) & (q - kv < w - 1)),
            "因果的なウィンドウと一致しない": window(lambda w, q, kv: q >= kv),
            "^answer_2 が mask_mod そのものになっている。": ch10.sliding_window_mod(2),
            "^w = 1 のとき、書いた関数で ZeroDivisionError が発生した（": lambda w: 1 / 0,
        }
        for hint, answer in wrong_2.items():
            with pytest.raises(Mistake, match=hint):
                ch10.check_2(answer)
        docs = [3, 1, 4, 2]
        wrong_3 = {
            "10 個要る。答えは 4 個である": [0, 1, 2, 0],
            "行全体の通し番号": list(range(10)),
            "文書 ID": [0, 0, 0, 1, 2, 2, 2, 2, 3, 3],
            "0 から始まる": [1, 2, 3, 1, 1, 2, 3, 4, 1, 2],
            "文書 2（スロット 4〜7）": [0, 1, 2, 0, 0, 1, 2, 2, 0, 1],
            "int のリストで答えること。渡されたのは list（長さ 10）である": [0.5] * 10,
        }
        for hint, answer in wrong_3.items():
            with pytest.raises(Mistake, match=hint) as raised:
                ch10.check_3(answer, docs)
            assert raised.value.en != raised.value.ja


def test_the_summary_speaks_japanese_and_english_is_unchanged():
    english = ch10.packing_view("log-normal", 4, "pack").summary
    assert english == ("log-normal lengths [8, 2, 1, 4, 1, 1, 4, 5], batch size 4, pack: 32 token slots for 26 "
                       "tokens, wasted 19% of position-wise work and 50% of attention scores (one dense mask per "
                       "row; the batch size does not change packing)")
    with speaking("ja"):
        japanese = ch10.packing_view("log-normal", 4, "pack").summary
        assert japanese == ("対数正規分布の長さ [8, 2, 1, 4, 1, 1, 4, 5]、バッチサイズ 4、パッキング："
                            "トークン 26 個に 32 スロットを使い、位置ごとの計算の 19% と"
                            "アテンションスコアの 50% が無駄になる"
                            "（行ごとに密なマスクが 1 つ。バッチサイズはパッキングを変えない）")
        assert "無駄になる" in ch10.packing_view("bimodal", 2, "bucket").summary
        box = ch10.packing_explorer()
        assert box.summary.value.startswith("対数正規分布の長さ")
    assert ch10.packing_view("log-normal", 4, "pack").summary == english


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    batch = [7, 2, 3, 12, 5]
    accepts_every_form(ch10.check_1, 1 - (49 + 4 + 9 + 144 + 25) / (5 * 144), batch)
    docs = [3, 1, 4, 2]
    accepts_every_form(ch10.check_3, (0, 1, 2, 0, 0, 1, 2, 3, 0, 1), docs)   # a tensor was refused
    refuses_the_wrong_kind(ch10.check_1, [0.3, 0.4], "a list of length 2", "list（長さ 2）", batch)
    refuses_the_wrong_kind(ch10.check_3, np.array([[0, 1, 2, 0, 0, 1, 2, 3, 0, 1]]),
                           "a numpy int64 array of shape (1, 10)", "numpy の int64 配列（形状 (1, 10)）", docs)
