"""Chapter 3 (helpers.chapters.ch03_does_the_pad_row_matter): the two layers' pad-row policies and the explorer."""

import pytest
import torch

from helpers import toy
from helpers.chapters import ch03_does_the_pad_row_matter as ch03
from helpers.exercises import Mistake
from helpers.language import speaking
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind

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


def test_explorer_hatches_the_pad_rows_exactly_where_they_are_masked():
    for policy, hatched in {"leave": 10, "uniform": 16, "-inf": 16, "zero": 10}.items():
        view = ch03.pad_rows_view(policy, "none")
        assert int(view.panels[0].masked.sum()) == hatched
        assert view.caption.en.startswith("hatched: masked before softmax")
    assert "zeroed after softmax, not masked" in ch03.pad_rows_view("zero", "none").caption.en


def _chapter_data():
    ids, x, *_ = toy.qkv(TOKENS)
    _, *W1 = toy.params()
    pad = ids == toy.PAD_ID
    W2 = ch03.layer2_params()
    return x, W1, W2, pad


def test_check_1_accepts_layer_2_on_zeroed_pads_and_names_each_mistake():
    x, W1, W2, pad = _chapter_data()
    h1, _ = ch03.attention_layer(x, W1, pad)
    zeroed = torch.where(pad.unsqueeze(-1), 0.0, h1)
    right = ch03.attention_layer(zeroed, W2, pad)
    ch03.check_1.solution(right[0], h1, W2, pad)
    wrong = {
        "store the output only": right,
        "shape \\(1, 5, 4\\)": right[0][0],
        "layer 2's input": zeroed,
        "original h1": ch03.attention_layer(h1, W2, pad)[0],
        "zeroes every row": ch03.attention_layer(h1 * 0, W2, pad)[0],
        "layer 1's weights": ch03.attention_layer(zeroed, W1, pad)[0],
        "key mask": ch03.attention_layer(zeroed, W2, torch.zeros_like(pad))[0],
        "residual": right[0] - zeroed,
        "pad rows are not": ch03.attention_layer(zeroed, W2, pad, "uniform")[0],
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch03.check_1(answer, h1, W2, pad)


def masked_max(h, pad):
    return h.masked_fill(pad.unsqueeze(-1), float("-inf")).max(1).values


def test_check_2_accepts_masked_max_and_names_each_mistake():
    ch03.check_2.solution(masked_max)
    ch03.check_2.solution(lambda h, pad: torch.where(pad.unsqueeze(-1), torch.finfo(h.dtype).min, h).amax(1))
    wrong = {
        "answer with a function": masked_max(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.bool)),
        "every position": lambda h, pad: h.max(1).values,
        "over the pad positions": lambda h, pad: h.masked_fill(~pad.unsqueeze(-1), float("-inf")).max(1).values,
        "filled with 0 won": lambda h, pad: h.masked_fill(pad.unsqueeze(-1), 0.0).max(1).values,
        "feature dimension": lambda h, pad: h.masked_fill(pad, float("-inf")).max(1).values,
        "values, indices": lambda h, pad: h.masked_fill(pad.unsqueeze(-1), float("-inf")).max(1),
        "shape \\(N, E\\)": lambda h, pad: h.masked_fill(pad.unsqueeze(-1), float("-inf")).max(2).values,
        "largest value": lambda h, pad: (h * ~pad.unsqueeze(-1)).sum(1) / (~pad).sum(1, keepdim=True),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch03.check_2(answer)


def test_check_3_accepts_the_leaky_heads_and_names_each_mistake():
    x, W1, W2, pad = _chapter_data()
    W_head = torch.randn(4, 3, generator=torch.Generator().manual_seed(5))
    label, targets = torch.tensor([1]), torch.tensor([[0, 2, 1, -100, -100]])
    x_junk = torch.where(pad.unsqueeze(-1), torch.randn(1, 5, 4, generator=torch.Generator().manual_seed(1)) * 100, x)
    data = (x, x_junk, pad, [*W1, *W2, W_head], label, targets)
    ch03.check_3.solution({"a", "c", "d"}, *data)
    ch03.check_3.solution(["A", "c", "d"], *data)
    wrong = {
        "set of letters": 3,
        "the heads are a, b, c and d": {"a", "c", "d", "e"},
        "\\(a\\): which token sits at the last position": {"c", "d"},
        "\\(b\\): it reads 鳥": {"a", "b", "c", "d"},
        "\\(c\\): it divides by the right count": {"a", "d"},
        "\\(d\\): without ignore_index": {"a", "c"},
        "and 2 more letter": set(),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch03.check_3(answer, *data)


# --- the Japanese edition: the same views and checks speak Japanese (helpers.language) ---


def test_pad_rows_view_speaks_japanese_in_the_japanese_edition():
    english = ch03.pad_rows_view().summary
    with speaking("ja"):
        assert ch03.pad_rows_view().summary.startswith(
            "パッド行はそのまま、ゴミ値 乱数 ×1000、パッド 2 個：実トークンの行の最大 |変化| = 0、"
            "パッド行の最大 |変化| = ")
        assert "。NaN が実トークンの行に届いた：" in ch03.pad_rows_view("leave", "NaN").summary
        assert "。-inf のパッド行は 1 層目の後で NaN になり" in ch03.pad_rows_view("-inf", "none").summary
        box = ch03.pad_rows_explorer()
        box.controls["n_pads"].value = 5
        assert box.summary.value.startswith("<b>この組み合わせは不可：</b>すべてのトークンが &lt;pad&gt; で")
        box.controls["n_pads"].value = 0
        assert box.summary.value == ("パッド行はそのまま、ゴミ値 乱数 ×1000、パッド 0 個："
                                     "実トークンの行の最大 |変化| = 0")
        with pytest.raises(ValueError, match="junk must be one of"):          # a programmer's error stays English
            ch03.pad_rows_view(junk="inf")
    assert ch03.pad_rows_view().summary == english and english.startswith("policy leave, junk random x1000")



def test_the_checks_hints_are_japanese_in_the_japanese_edition():
    x, W1, W2, pad = _chapter_data()
    h1, _ = ch03.attention_layer(x, W1, pad)
    zeroed = torch.where(pad.unsqueeze(-1), 0.0, h1)
    right = ch03.attention_layer(zeroed, W2, pad)
    wrong_1 = {
        "出力だけを格納すること": right,
        "2 層目の出力（形状 (1, 5, 4)）": right[0][0],
        "2 層目の入力": zeroed,
        "元の h1 に 2 層目を適用": ch03.attention_layer(h1, W2, pad)[0],
        "実トークンの行まで、h1 のすべての行がゼロ": ch03.attention_layer(h1 * 0, W2, pad)[0],
        "1 層目の重み W1": ch03.attention_layer(zeroed, W1, pad)[0],
        "キーマスク pad を渡すこと": ch03.attention_layer(zeroed, W2, torch.zeros_like(pad))[0],
        "残差接続": right[0] - zeroed,
        "パッド行が違う。パッド行をゼロにした入力": ch03.attention_layer(zeroed, W2, pad, "uniform")[0],
    }
    for hint, answer in wrong_1.items():
        assert hint in japanese_hint(ch03.check_1, answer, h1, W2, pad)
    wrong_2 = {
        "関数で答えること": masked_max(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.bool)),
        "すべての位置にわたる最大値": lambda h, pad: h.max(1).values,
        "パッド位置にわたる最大値": lambda h, pad: h.masked_fill(~pad.unsqueeze(-1), float("-inf")).max(1).values,
        "0 で埋めたパッドが最大値": lambda h, pad: h.masked_fill(pad.unsqueeze(-1), 0.0).max(1).values,
        "特徴量の次元を加える": lambda h, pad: h.masked_fill(pad, float("-inf")).max(1).values,
        "values を返すこと": lambda h, pad: h.masked_fill(pad.unsqueeze(-1), float("-inf")).max(1),
        "(N, E) = (2, 4) になるはず": lambda h, pad: h.masked_fill(pad.unsqueeze(-1), float("-inf")).max(2).values,
        "2 つ目の文を確かめる": lambda h, pad: (h * ~pad.unsqueeze(-1)).sum(1) / (~pad).sum(1, keepdim=True),
    }
    for hint, answer in wrong_2.items():
        assert hint in japanese_hint(ch03.check_2, answer)
    W_head = torch.randn(4, 3, generator=torch.Generator().manual_seed(5))
    label, targets = torch.tensor([1]), torch.tensor([[0, 2, 1, -100, -100]])
    x_junk = torch.where(pad.unsqueeze(-1), torch.randn(1, 5, 4, generator=torch.Generator().manual_seed(1)) * 100, x)
    data = (x, x_junk, pad, [*W1, *W2, W_head], label, targets)
    wrong_3 = {
        "文字の集合で答えること": 3,
        "ヘッドは a、b、c、d の 4 つ": {"a", "c", "d", "e"},
        "(a) を見直すこと。犬 猫 鳥 <pad> <pad> の最後の位置": {"c", "d"},
        "(b) を見直すこと。これは実トークンの 鳥 を読む": {"a", "b", "c", "d"},
        "(c) を見直すこと": {"a", "d"},
        "(d) を見直すこと": {"a", "c"},
        "（ほかにも見直すべき文字が 2 個ある）": set(),
    }
    for hint, answer in wrong_3.items():
        assert hint in japanese_hint(ch03.check_3, answer, *data)


def test_the_hints_kept_in_a_table_follow_the_style_guide():
    """HEAD_HINTS are not literal Mistake(...) arguments, so the helpers' style test misses them."""
    from tests.test_japanese_edition import forbidden_variants, style_problems

    rules = forbidden_variants()
    texts = [ja for _, ja in ch03.HEAD_HINTS.values()]
    assert len(texts) == 4 and not [p for text in texts for p in style_problems("ch03", text, rules)]


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    x, W1, W2, pad = _chapter_data()
    h1, _ = ch03.attention_layer(x, W1, pad)
    right = ch03.attention_layer(torch.where(pad.unsqueeze(-1), 0.0, h1), W2, pad)[0]
    accepts_every_form(ch03.check_1, right, h1, W2, pad)
    ch03.check_1.solution(right.double(), h1, W2, pad)                         # another float dtype
    refuses_the_wrong_kind(ch03.check_1, {"output": right}, "a dict of length 1", "dict（長さ 1）", h1, W2, pad)
    with pytest.raises(Mistake, match="store the output only"):               # its own hint comes first
        ch03.check_1((right, None), h1, W2, pad)


def test_step_3s_result_lines_are_said_in_the_current_language():
    assert ch03.diff_line("real", 0.0) == "real rows, max abs diff: 0.0"
    assert ch03.diff_line("pad", 2177.4) == "pad rows,  max abs diff: 2177.4"
    with speaking("ja"):
        assert ch03.diff_line("real", 0.0) == "実トークンの行の差の絶対値の最大：0.0"
        assert ch03.diff_line("pad", 2177.4) == "パッド行の差の絶対値の最大：2177.4"
    with pytest.raises(ValueError, match="rows must be one of"):
        ch03.diff_line("key", 0.0)
