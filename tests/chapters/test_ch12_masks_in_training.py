"""Chapter 12 (helpers.chapters.ch12_masks_in_training): dead-row fixes, labels, pooling, the explorer, the checks."""

import numpy as np
import pytest
import torch
from torch import nn

from helpers import causal_mask
from helpers.chapters import ch12_masks_in_training as ch12
from helpers.exercises import Mistake
from helpers.explorer import view_html
from helpers.language import speaking
from tests.chapters import accepts_every_form, refuses_the_wrong_kind


@pytest.fixture(scope="module")
def mha():
    torch.manual_seed(1)
    return nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.0)


KPM = torch.tensor([[True, True, False, False, False], [False] * 5])   # item 0 left-padded: 2 dead rows


def test_masked_scores_every_way_gives_zero_weight_and_refuses_bad_input():
    s = torch.randn(3, 3)
    blocked = torch.tensor([False, True, True]).expand(3, 3)
    for how in ch12.STEP1_FILLS:
        assert (ch12.masked_scores(s, blocked, how).softmax(-1)[blocked] == 0).all()
    with pytest.raises(ValueError, match="how must be one of"):
        ch12.masked_scores(s, blocked, "-1e4")
    with pytest.raises(TypeError, match="blocked must be a bool tensor"):
        ch12.masked_scores(s, blocked.int(), ch12.STEP1_FILLS[0])


def test_safe_softmax_dead_row_is_zero_with_finite_gradient():
    s = torch.randn(2, 4, 4, requires_grad=True)
    blocked = KPM[:, None, 1:] | causal_mask(4)
    w = ch12.safe_softmax(s, blocked)
    dead = blocked.all(-1)
    assert (w[dead] == 0).all() and torch.allclose(w[~dead].sum(-1), torch.ones(int((~dead).sum())))
    w.sum().backward()
    assert s.grad.isfinite().all()


@pytest.mark.parametrize("fix", ch12.FIXES)
def test_each_fix_keeps_real_rows_and_only_two_give_nan_gradients(mha, fix):
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    d = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    layer = ch12.Attention(mha, fix)
    r = ch12.gradients(mha, lambda t: layer(t, KPM, causal_mask(5)), x, ~KPM, d)
    finite = all(g.isfinite().all() for g in r.params.values())
    assert finite == (fix not in ("-inf", "zero after softmax, additive -inf"))
    assert r.loss.isfinite()
    with torch.no_grad():
        ref = ch12.Attention(mha, "finfo.min")(x, KPM, causal_mask(5))
        out = layer(x, KPM, causal_mask(5))
    assert (out[~KPM] - ref[~KPM]).abs().max() < 1e-5


def test_attention_refuses_bad_arguments(mha):
    with pytest.raises(ValueError, match="fix must be one of"):
        ch12.Attention(mha, "zero")
    with pytest.raises(TypeError, match="nn.MultiheadAttention with batch_first"):
        ch12.Attention(nn.MultiheadAttention(8, 2), "-inf")
    with pytest.raises(TypeError, match="key_padding_mask must be a bool"):
        ch12.Attention(mha)(torch.randn(1, 3, 8), torch.zeros(1, 3))


def test_drop_dead_rows_handles_an_item_with_every_row_dead(mha):
    kpm = torch.tensor([[True] * 3, [False] * 3])
    out = ch12.Attention(mha, "drop dead rows")(torch.randn(2, 3, 8), kpm, causal_mask(3))
    assert out.isfinite().all() and torch.allclose(out[0], mha.out_proj.bias.expand(3, 8))


def test_flex_attention_backward_is_refused_on_cpu(mha):
    q, k, v = (t.detach().requires_grad_(True) for t in ch12.project(mha, torch.randn(2, 5, 8)))
    assert ch12.flex_backward(q, k, v, KPM).startswith("NotImplementedError: FlexAttention does not support backward")


def test_labels_by_position_keep_the_real_eos_and_refuse_bad_masks():
    ids = torch.tensor([[6, 7, 10, 10]])
    assert ch12.labels_by_position(ids, torch.tensor([[1, 1, 1, 0]])).tolist() == [[6, 7, 10, -100]]
    with pytest.raises(TypeError, match="bool tensor"):
        ch12.labels_by_position(ids, torch.tensor([[True, True, True, False]]))
    with pytest.raises(ValueError, match="same shape"):
        ch12.labels_by_position(ids, torch.tensor([[1, 1, 1]]))


def test_stopper_learns_to_stop_only_with_labels_by_position():
    lines = ch12.stop_lines()
    ids = torch.full((10, 11), ch12.EOS_ID)
    mask = torch.zeros(10, 11, dtype=torch.long)
    for i, line in enumerate(lines):
        ids[i, :len(line)], mask[i, :len(line)] = torch.tensor(line), 1
    trap = ids.masked_fill(ids == ch12.EOS_ID, -100)
    model, _ = ch12.train_stopper(ids, mask, trap)
    assert all(ch12.EOS_ID not in ch12.continue_line(model, s) for s in range(10))
    model, losses = ch12.train_stopper(ids, mask, ch12.labels_by_position(ids, mask))
    assert all(ch12.continue_line(model, s) == line for s, line in enumerate(lines)) and losses[-1] < 0.05
    with pytest.raises(ValueError, match="must all be"):
        ch12.train_stopper(ids, mask[:, :5], trap)
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        ch12.train_stopper(ids, mask, trap, steps=0)


def test_token_weights_sum_to_one_and_refuse_bad_input():
    for mean in ("token", "sequence"):
        assert torch.isclose(ch12.token_weights([2, 6, 1], mean).sum(), torch.tensor(1.0, dtype=torch.float64))
    assert ch12.token_weights([1], "sequence").tolist() == [[1.0]]
    for bad in ([], [0], [True], "26"):
        with pytest.raises(ValueError, match="lengths must be"):
            ch12.token_weights(bad, "token")
    with pytest.raises(ValueError, match="mean must be"):
        ch12.token_weights([2], "batch")


def test_pool_fixes_are_padding_invariant_on_both_sides():
    h = torch.randn(2, 4, 3)
    right = torch.tensor([[False, False, True, True], [False] * 4])
    left = right.flip(-1)
    shifted = h.clone()
    shifted[0] = h[0].roll(2, 0)                        # item 0's two real tokens moved to the right end
    for how in ("mean of real tokens", "last real token", "first real token"):
        assert torch.allclose(ch12.pool(h, right, how), ch12.pool(shifted, left, how))
    assert torch.equal(ch12.pool(h, right, "last real token")[0], h[0, 1])
    assert torch.equal(ch12.pool(h, left, "last real token")[0], h[0, 3])
    assert torch.equal(ch12.pool(h, left, "first real token")[0], h[0, 2])
    nan_pads = h.clone()
    nan_pads[0, 2:] = float("nan")
    assert ch12.pool(nan_pads, right, "mean of real tokens").isfinite().all()   # masked_fill, not h * mask
    with pytest.raises(ValueError, match="how must be one of"):
        ch12.pool(h, right, "max")


def test_training_view_summaries_and_refusals():
    view = ch12.training_view()
    assert view.summary == ("lengths [3, 5], left padding + causal, fill -inf, per-token loss, token mean: 2 dead "
                            "row(s); NaN gradients in in_proj_weight, in_proj_bias, out_proj.weight; real-token "
                            "gradients NaN")
    html = view_html(view)
    assert html.count('class="masked"') == 4   # 2 pads in each table
    fine = ch12.training_view(fill="finfo.min")
    assert fine.summary.endswith("every gradient finite; real-token gradients unchanged vs unpadded (within 1e-5)")
    leak = ch12.training_view(padding="right", loss="pads in the loss")
    assert "0 dead row(s)" in leak.summary and "real-token gradients moved by up to" in leak.summary
    assert view_html(leak).count('class="framed') >= 2
    pooled = ch12.training_view(padding="right", fill="safe softmax", pooling="last slot")
    assert "pooled: last slot" in pooled.summary and "moved" in pooled.summary
    for bad in ({"length_0": 0}, {"length_1": 6}, {"padding": "top"}, {"fill": "-1e4"}, {"loss": "sum"},
                {"pooling": "max"}, {"length_0": True}):
        with pytest.raises(ValueError):
            ch12.training_view(**bad)


def test_objective_weights_per_mode():
    right = ch12.objective_weights((3, 5), "right", "token mean", ch12.VIEW_POOLINGS[0])
    assert torch.allclose(right.sum(), torch.tensor(1.0)) and (right[0, 3:] == 0).all()
    seq = ch12.objective_weights((3, 5), "left", "sequence mean", ch12.VIEW_POOLINGS[0])
    assert torch.allclose(seq[0, 2:], torch.full((3,), 1 / 6)) and (seq[0, :2] == 0).all()
    last = ch12.objective_weights((3, 5), "right", "token mean", "last slot")
    assert last[:, -1].tolist() == [0.5, 0.5]


def test_training_explorer_updates():
    box = ch12.training_explorer()
    assert "NaN gradients" in box.summary.value
    box.controls["fill"].value = "finfo.min"
    assert "every gradient finite" in box.summary.value
    box.controls["padding"].value = "right"
    assert "0 dead row(s)" in box.summary.value
    box.controls["length_0"].value = 1
    assert box.summary.value.startswith("lengths [1, 5]")
    box.controls["pooling"].value = "mean with pads"
    assert "pooled: mean with pads" in box.summary.value and "moved" in box.summary.value


IDS = torch.tensor([[6, 7, 8, 9, 10, 10], [8, 9, 10, 10, 10, 10], [4, 5, 6, 7, 8, 9]])
MASK = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]])


def test_check_1_accepts_labels_by_position_and_names_each_mistake():
    ch12.check_1.solution(IDS.masked_fill(MASK == 0, -100), IDS, MASK)
    ch12.check_1.solution(torch.where(MASK == 1, IDS, -100), IDS, MASK)
    ch12.check_1.solution(IDS * MASK - 100 * (1 - MASK), IDS, MASK)
    wrong = {
        "should be a tensor of token ids; got a str": "IDS",
        "shape of ids": IDS[:, :-1],
        "int64 tensor": IDS.float(),
        "got torch.int32": IDS.masked_fill(MASK == 0, -100).int(),
        "-100": IDS.masked_fill(MASK == 0, 0),
        "real <eos> lost its label": IDS.masked_fill(IDS == 10, -100),
        "still have labels": IDS.clone(),
        "keep its own id": IDS.masked_fill(MASK == 0, -100).roll(1, 1).masked_fill(MASK == 0, -100),
        "not -1$": IDS.masked_fill(MASK == 0, -1),
        "sit on the real tokens": IDS.masked_fill(MASK == 1, -100),
        "do not shift": IDS.roll(-1, 1).masked_fill(MASK == 0, -100),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch12.check_1(answer, IDS, MASK)


def test_check_2_accepts_the_last_real_token_and_names_each_mistake():
    ch12.check_2.solution(lambda h, m: h[torch.arange(h.shape[0]), m.shape[1] - 1 - m.flip(-1).argmax(-1)])
    ch12.check_2.solution(lambda h, m: h[torch.arange(h.shape[0]), (m * torch.arange(m.shape[1])).argmax(-1)])
    wrong = {
        "should be a function": 3,
        "last slot is a pad": lambda h, m: h[:, -1],
        "first slot": lambda h, m: h[:, 0],
        "only under right padding": lambda h, m: h[torch.arange(h.shape[0]), m.sum(-1) - 1],
        "last position whose mask is 1$": lambda h, m: h.mean(1),
        "one vector per item": lambda h, m: h,
        "raised": lambda h, m: torch.cat([h, m]),
        "one too far": lambda h, m: h[torch.arange(h.shape[0]), m.sum(-1)],
        "flipped mask counts from the end": lambda h, m: h[torch.arange(h.shape[0]), m.flip(-1).argmax(-1)],
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch12.check_2(answer)


def test_check_3_accepts_a_safe_softmax_and_names_each_mistake():
    ch12.check_3.solution(ch12.safe_softmax)
    ch12.check_3.solution(lambda s, b: s.masked_fill(b, torch.finfo(s.dtype).min).softmax(-1)
                          .masked_fill(b.all(-1, keepdim=True), 0.0))
    ch12.check_3.solution(lambda s, b: torch.where(b.all(-1, keepdim=True), 0.0,                 # other right styles
                                                   s.masked_fill(b, float("-inf")).softmax(-1)))
    ch12.check_3.solution(lambda s, b: (lambda w: w / w.sum(-1, keepdim=True).clamp_min(1e-30))(s.softmax(-1) * ~b))

    def dead_of(b):
        return b.all(-1, keepdim=True)

    def additive_then_zero(s, b):
        w = (s + torch.zeros_like(s).masked_fill(b, float("-inf"))).softmax(-1)
        return w.masked_fill(b.all(-1, keepdim=True), 0.0)
    wrong = {
        "should be a function": "softmax",
        "gave NaN": lambda s, b: s.masked_fill(b, float("-inf")).softmax(-1),
        "must be all zeros": lambda s, b: s.masked_fill(b, -1e9).softmax(-1),
        "ordinary softmax": lambda s, b: (lambda w: w / w.sum(-1, keepdim=True).clamp_min(1e-30))(s.sigmoid() * ~b),
        "sum to 1 over the keys: softmax": lambda s, b: torch.zeros_like(s),
        "lost their gradient": lambda s, b: ch12.safe_softmax(s, b).detach(),
        "gradient is NaN": additive_then_zero,
        "raised": lambda s, b: s @ b,
        "0/0": lambda s, b: (lambda e: e / e.sum(-1, keepdim=True))(s.exp() * ~b),
        "all zeros$": lambda s, b: s.softmax(-1),
        "sum to 1 over the keys": lambda s, b: s.masked_fill(b, -1e9).softmax(-2).masked_fill(dead_of(b), 0),
        "blocked True means hidden": lambda s, b: s.masked_fill(~b, -1e9).softmax(-1).masked_fill(dead_of(b), 0),
        "dtype of scores": lambda s, b: ch12.safe_softmax(s.double(), b),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch12.check_3(answer)


def test_mha_run_need_weights_decides_in_either_mode_and_layout(mha):
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    d = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    seq_first = nn.MultiheadAttention(8, 2, dropout=0.0)
    seq_first.load_state_dict(mha.state_dict())
    float_masks = (ch12.additive(KPM), ch12.additive(causal_mask(5)))
    assert float_masks[0].dtype == torch.float32 and float_masks[0][0, 0] == float("-inf") and float_masks[0][1, 0] == 0
    for layer, masks, mode in ((mha, (KPM, causal_mask(5)), "eval"), (mha, float_masks, "train"),
                               (seq_first, (KPM, causal_mask(5)), "train")):
        for need_weights in (True, False):
            r = ch12.gradients(layer, ch12.mha_run(layer, need_weights, masks, mode), x, ~KPM, d)
            assert all(g.isfinite().all() for g in r.params.values()) == (not need_weights)
    with pytest.raises(ValueError, match="mode must be"):
        ch12.mha_run(mha, False, (KPM, None), "test")
    with pytest.raises(TypeError, match="mha must be an nn.MultiheadAttention"):
        ch12.mha_run(ch12.Attention(mha), False, (KPM, None))
    with pytest.raises(TypeError, match="blocked must be a bool"):
        ch12.additive(KPM.int())


# --- the Japanese edition: the same checks and explorer speak Japanese ---

def test_the_checks_give_their_hints_in_japanese():
    with speaking("ja"):
        for hint, answer in {"^ラベルはトークン ID のテンソルにすること。渡されたのは str である$": "IDS",
                             "^-100 が実トークンの位置に入っている。": IDS.masked_fill(MASK == 1, -100),
                             "^実トークンの <eos> がラベルを失っている。": IDS.masked_fill(IDS == 10, -100),
                             "^ラベルをずらさないこと。": IDS.roll(-1, 1).masked_fill(MASK == 0, -100),
                             "ではなく、-100（cross_entropy の ignore_index）である$": IDS.masked_fill(MASK == 0, -1),
                             }.items():
            with pytest.raises(Mistake, match=hint):
                ch12.check_1(answer, IDS, MASK)
        for hint, answer in {"^右パディングでは、短いサンプルの最後のスロットはパッドである$": lambda h, m: h[:, -1],
                             "^右パディングのとき、書いた関数で IndexError が発生した（.*）。.*インデックスが 1 つ先へ":
                                 lambda h, m: h[torch.arange(h.shape[0]), m.sum(-1)],
                             "右パディングのときだけである）$": lambda h, m: h[torch.arange(h.shape[0]), m.sum(-1) - 1],
                             "^answer_2 は関数 last_token": 3}.items():
            with pytest.raises(Mistake, match=hint):
                ch12.check_2(answer)
        for hint, answer in {"^見えるキーのない行が NaN になった。":
                                 lambda s, b: s.masked_fill(b, float("-inf")).softmax(-1),
                             "すべて 0 にすること（有限の埋め値では": lambda s, b: s.masked_fill(b, -1e9).softmax(-1),
                             "^重みが勾配を失っている": lambda s, b: ch12.safe_softmax(s, b).detach(),
                             "^書いた関数で .* が発生した（": lambda s, b: s @ b}.items():
            with pytest.raises(Mistake, match=hint) as raised:
                ch12.check_3(answer)
    assert raised.value.en.startswith("your function raised")          # the English hint is kept beside it
    with pytest.raises(Mistake, match="^the -100s sit on the real tokens"):
        ch12.check_1(IDS.masked_fill(MASK == 1, -100), IDS, MASK)        # and English again after the block


def test_the_explorer_summary_in_japanese_and_english_unchanged():
    english = ch12.training_view().summary
    with speaking("ja"):
        assert ch12.training_view().summary == (
            "長さ [3, 5]、左パディング、因果マスク、埋め値 -inf、トークンごとの損失（トークン平均）。死んだ行は 2 個。"
            "in_proj_weight、in_proj_bias、out_proj.weight の勾配が NaN。実トークンの勾配は NaN")
        assert ch12.training_view(fill="finfo.min").summary.endswith(
            "勾配はすべて有限。実トークンの勾配はパディングなしと同じ（1e-5 以内）")
        leak = ch12.training_view(padding="right", loss="pads in the loss").summary
        assert "（損失にパッドを含める）" in leak and "実トークンの勾配がパディングなしから最大" in leak
        pooled = ch12.training_view(padding="right", fill="safe softmax", pooling="last slot").summary
        assert "因果マスク、安全なソフトマックス、プーリングは「最後のスロット」。" in pooled
        box = ch12.training_explorer()
        assert "の勾配が NaN" in box.summary.value
        box.controls["fill"].value = "finfo.min"
        assert "勾配はすべて有限" in box.summary.value
    assert english == ch12.training_view().summary and english.startswith("lengths [3, 5], left padding")


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    accepts_every_form(ch12.check_1, IDS.masked_fill(MASK == 0, -100), IDS, MASK)   # a list of lists was refused
    refuses_the_wrong_kind(ch12.check_1, {6, 7}, "a set of length 2", "set（長さ 2）", IDS, MASK)
    refuses_the_wrong_kind(ch12.check_1, [[6, 7], [8]], "a list of length 2", "list（長さ 2）", IDS, MASK)
    with pytest.raises(Mistake, match="int64 tensor, got torch.float64"):      # the dtype is still judged
        ch12.check_1(IDS.masked_fill(MASK == 0, -100).numpy().astype(np.float64), IDS, MASK)
