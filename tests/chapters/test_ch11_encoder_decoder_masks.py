"""Chapter 11 (helpers.chapters.ch11_encoder_decoder_masks): the three masks, nn.Transformer written out, the
misroutings, the explorer, and the exercise checks."""

import re

import numpy as np
import pytest
import torch
from torch import nn

from helpers import causal_mask, key_padding_mask, to_additive_mask
from helpers.chapters import ch11_encoder_decoder_masks as ch11
from helpers.exercises import Mistake
from helpers.explorer import view_html
from helpers.language import Bilingual, speaking
from tests.chapters import accepts_every_form, forms, refuses_the_wrong_kind

pytestmark = [pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage"),
              pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask and attn_mask")]


def test_three_masks_at_the_edges():
    masks = ch11.three_masks([3, 5], [4, 1], S=6, T=4)
    assert masks.cross.shape == (2, 4, 6) and masks.encoder.shape == (2, 6, 6) and masks.decoder.shape == (2, 4, 4)
    assert masks.cross[0].tolist() == [[False] * 3 + [True] * 3] * 4        # source pads in every row, no triangle
    assert masks.decoder[1, 3].tolist() == [False, True, True, True]        # target pads and the future
    left = ch11.three_masks([1], [1], S=3, T=2, padding_side="left")
    assert left.src_key_padding_mask.tolist() == [[True, True, False]]
    assert left.cross[0].all(-1).tolist() == [False, False]                 # one real key: no row is dead
    empty = ch11.three_masks([0, 2], [1, 1], S=2, T=1)
    assert empty.cross[0].all() and not empty.cross[1].any()               # an empty source: every key hidden


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: ch11.three_masks([1, 2], [1]), ValueError, "one length per item"),
    (lambda: ch11.three_masks("12", [1, 2]), TypeError, "lists of ints"),
    (lambda: ch11.three_masks([1], [1], padding_side="middle"), ValueError, "side must be one of"),
    (lambda: ch11.three_masks([3], [1], S=2), ValueError, "lengths must be <= max_len"),
    (lambda: ch11.three_masks([1], [1], T=True), TypeError, "T must be an int"),
    (lambda: ch11.cross_triangle(0, 3), ValueError, "T must be an int >= 1"),
    (lambda: ch11.toy_batch(0, 2), ValueError, "src_length must be an int >= 1"),
    (lambda: ch11.toy_batch(6, 2), ValueError, "src_length must be 1..5"),
    (lambda: ch11.embed([["dragon"]]), ValueError, "words must come from"),
    (lambda: ch11.routed("no masks", ch11.three_masks([1], [1])), ValueError, "routing must be one of"),
    (lambda: ch11.encoder_decoder_view(padding_side="up"), ValueError, "padding_side must be one of"),
    (lambda: ch11.encoder_decoder_view(routing="x"), ValueError, "routing must be one of"),
])
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_written_out_matches_nn_transformer_on_both_paths_and_in_every_routing_that_runs():
    model = ch11.toy_transformer()
    for side in ch11.PADDING_SIDES:
        src, tgt, masks, _, _ = ch11.toy_batch(3, 3, side)
        real = ~masks.tgt_key_padding_mask
        for routing in ch11.ROUTINGS:
            kwargs = ch11.routed(routing, masks)
            if routing == "padding mask as src_mask":
                with pytest.raises(ValueError, match="nn.Transformer raises RuntimeError"):
                    ch11.run_transformer(model, src, tgt, kwargs)
                continue
            mine = ch11.written_out(model, src, tgt, kwargs).output
            model.train()          # dropout 0: the ordinary path, which refuses the hint without a mask
            if routing == "tgt_is_causal=True, no tgt_mask":
                with pytest.raises(RuntimeError, match="Need attn_mask"):
                    model(src, tgt, **kwargs)
            else:
                assert (model(src, tgt, **kwargs) - mine)[real].abs().max() < 1e-5, (side, routing)
            model.eval()
            fast = ch11.run_transformer(model, src, tgt, kwargs)
            reads_zero_pads = side == "right" and routing in ("memory_key_padding_mask forgotten",
                                                              "padding mask as memory_mask")
            # the fast path's memory is 0 at right pads: a routing that reads them differs from the written-out model
            assert ((fast - mine)[real].abs().max() < 1e-5) != reads_zero_pads, (side, routing)


def test_written_out_bad_input():
    model = ch11.toy_transformer()
    src, tgt, masks, _, _ = ch11.toy_batch()
    with pytest.raises(TypeError, match="model must be an nn.Transformer"):
        ch11.encoder_decoder(nn.Linear(2, 2), src, tgt)
    with pytest.raises(ValueError, match=r"memory_mask must have shape \(4, 5\)"):
        ch11.encoder_decoder(model, src, tgt, memory_mask=masks.src_key_padding_mask[:, :4].T)
    with pytest.raises(ValueError, match="src_key_padding_mask must have shape"):
        ch11.encoder_decoder(model, src, tgt, src_key_padding_mask=masks.tgt_key_padding_mask)
    with pytest.raises(ValueError, match=r"tgt_mask is a float mask, added to the scores: .* got other values \[1.0\]"):
        ch11.encoder_decoder(model, src, tgt, tgt_mask=torch.ones(4, 4))
    with pytest.raises(ValueError, match="d_model=8"):
        ch11.encoder_decoder(model, src[..., :4], tgt)
    with pytest.raises(ValueError, match="same batch size"):
        ch11.encoder_decoder(model, src[:2], tgt)
    float_causal = nn.Transformer.generate_square_subsequent_mask(4)
    with torch.no_grad():
        a = ch11.encoder_decoder(model, src, tgt, tgt_mask=float_causal).output
        b = ch11.encoder_decoder(model, src, tgt, tgt_mask=masks.tgt_mask).output
        c = ch11.encoder_decoder(model, src, tgt, tgt_mask=to_additive_mask(masks.tgt_mask, fill=-1e9)).output
    assert torch.equal(a, b) and torch.equal(a, c)


def test_the_written_out_model_and_check_2_read_a_float_mask_alike():
    # one definition of a blocked float mask (helpers.masks.as_blocked): -inf or <= -1e4 blocks, 0 is visible
    for fill in ("-inf", "min", -1e4, -1e9):
        float_causal = to_additive_mask(causal_mask(4), fill=fill)
        assert torch.equal(ch11.as_bool_mask(float_causal, "tgt_mask"), causal_mask(4))
        assert torch.equal(ch11._as_blocked(float_causal, "tgt_mask"), causal_mask(4))
    with pytest.raises(ValueError, match="tgt_mask is a float mask"):
        ch11.as_bool_mask(torch.tensor([[0.0, -1.0]]), "tgt_mask")
    with pytest.raises(Mistake, match="tgt_mask: a float mask is added to the scores, so only -inf"):
        ch11._as_blocked(torch.tensor([[0.0, -1.0]]), "tgt_mask")


def test_views_say_what_is_wrong_and_what_moves():
    correct = ch11.encoder_decoder_view()
    assert "correct: correct; no real target output moves" in correct.summary
    assert [p.matrix.shape for p in correct.panels] == [(5, 5), (4, 4), (4, 5)]
    assert view_html(correct).count('class="masked"') == 10 + 6 + 8     # 2 pad columns, the triangle, 2 pad columns
    forgotten = ch11.encoder_decoder_view(routing="memory_key_padding_mask forgotten")
    assert "cross-attention: weight on blocked cells" in forgotten.summary
    assert "real target outputs move in items [0, 2, 3]" in forgotten.summary
    assert view_html(forgotten).count('class="masked framed"') == 8
    hint = ch11.encoder_decoder_view(routing="tgt_is_causal=True, no tgt_mask")
    assert "decoder self-attention: weight on blocked cells" in hint.summary
    left = ch11.encoder_decoder_view(padding_side="left", routing="causal mask on cross-attention")
    assert "no visible key in rows 0, 1" in left.summary
    with pytest.raises(ValueError, match="nn.Transformer raises RuntimeError"):
        ch11.encoder_decoder_view(routing="padding mask as src_mask")


def test_explorer_updates_and_refuses():
    box = ch11.encoder_decoder_explorer()
    assert box.summary.value.startswith("source 3 real + 2 pads, target 4 real + 0 pads, right padding, correct")
    box.controls["routing"].value = "memory_key_padding_mask forgotten"
    assert "cross-attention reads the source pads" in box.summary.value
    box.controls["src_length"].value = 5
    assert box.summary.value.startswith("source 5 real + 0 pads")
    box.controls["routing"].value = "padding mask as src_mask"
    assert box.summary.value.startswith("<b>Not possible:</b> nn.Transformer raises RuntimeError")
    box.controls["padding_side"].value = "left"
    box.controls["routing"].value = "correct"
    assert "left padding, correct: correct" in box.summary.value


# ---- the exercise checks ----

SRC_1, TGT_1 = [4, 2, 6], [3, 5, 1]


def test_check_1_accepts_the_cross_mask_and_names_each_mistake():
    right = key_padding_mask(SRC_1)[:, None, :].expand(3, 5, 6)
    ch11.check_1.solution(right, SRC_1, TGT_1)
    tgt_pads = key_padding_mask(TGT_1)
    wrong = {
        "bool tensor": right.int(),
        r"bool tensor \(True = blocked\); got a str": "right",
        "transposed": right.transpose(1, 2),
        r"shape should be \(N, T, S\)": right[:, 0],
        "polarity is flipped": ~right,
        "never causal": right | ch11.cross_triangle(5, 6),
        "hide keys, not queries": right | tgt_pads[:, :, None],
        "source's padding that counts": tgt_pads[:, :, None].expand(3, 5, 6),
        "expand it over the target rows": right[:, :1],
        "those are the target's lengths": key_padding_mask(TGT_1, 6)[:, None, :].expand(3, 5, 6),
        "the pads come after": right.flip(-1),
        "off by one": key_padding_mask([n + 1 for n in SRC_1], 7)[:, None, :6].expand(3, 5, 6),
        "block exactly the source pads": right.clone().fill_(False),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch11.check_1(answer, SRC_1, TGT_1)


@pytest.fixture(scope="module")
def batch():
    src, tgt, masks, _, _ = ch11.toy_batch()
    return ch11.toy_transformer(), src, tgt, masks


def test_check_2_accepts_the_call_and_names_each_mistake(batch):
    model, src, tgt, masks = batch
    correct = ch11.routed("correct", masks)
    ch11.check_2.solution(correct, *batch)
    ch11.check_2.solution({**correct, "tgt_is_causal": True}, *batch)       # a true hint is fine
    without = {name: {k: v for k, v in correct.items() if k != name} for name in correct}
    float_causal = nn.Transformer.generate_square_subsequent_mask(4)
    per_head = {"memory_mask": masks.cross.repeat_interleave(2, 0), "src_mask": masks.encoder.repeat_interleave(2, 0)}
    for other_style in ({**correct, "tgt_mask": float_causal},                          # float causal mask
                        {**without["memory_key_padding_mask"], "memory_mask": per_head["memory_mask"]},
                        {**without["src_key_padding_mask"], "src_mask": per_head["src_mask"]},
                        {**without["tgt_key_padding_mask"], "tgt_mask": masks.decoder.repeat_interleave(2, 0)}):
        ch11.check_2.solution(other_style, *batch)
    wrong = {
        "give a dict": list(correct.values()),
        "no mask argument named 'memory_padding_mask'": {**correct, "memory_padding_mask": masks.src_key_padding_mask},
        "a hint about tgt_mask, not a mask": ch11.routed("tgt_is_causal=True, no tgt_mask", masks),
        "row i is read as target query i's mask": ch11.routed("padding mask as memory_mask", masks),
        "hides real source words: .* never causal": ch11.routed("causal mask on cross-attention", masks),
        "src_mask is the encoder's": ch11.routed("padding mask as src_mask", masks),
        "^cross-attention still reads the source pads": without["memory_key_padding_mask"],
        "encoder still reads the source pads": without["src_key_padding_mask"],
        "decoder still sees the future": without["tgt_mask"],
        "still reads the target pads: the real tokens are safe only": without["tgt_key_padding_mask"],
        "cross-attention hides some keys .* polarity": {**correct,
                                                        "memory_key_padding_mask": ~masks.src_key_padding_mask},
        "decoder's self-attention hides some keys .* polarity": {**correct, "tgt_mask": masks.tgt_mask.T},
        "a float mask is added": {**correct, "tgt_mask": torch.tril(torch.ones(4, 4))},
        "refuses these arguments": {**correct, "tgt_key_padding_mask": masks.src_key_padding_mask},
        "refuses these arguments in training mode": {**correct, "tgt_mask": masks.decoder},   # the fast path takes it
        "leave src_is_causal and memory_is_causal off": {**correct, "src_is_causal": True},
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch11.check_2(answer, *batch)


def test_check_3_accepts_labels_and_shift_and_names_each_mistake():
    targets = torch.tensor([[30, 31, 32, 2], [33, 2, 1, 1], [34, 35, 2, 1]])
    labels = targets.masked_fill(targets == 1, -100)
    shifted = torch.cat([torch.full((3, 1), 2), targets[:, :-1]], 1)
    ch11.check_3.solution((labels, shifted), targets, 1, 2)
    ch11.check_3.solution([labels, shifted], targets, 1, 2)                  # a list is fine too
    wrong = {
        "two tensors": labels,
        "order is swapped": (shifted, labels),
        "labels stay in place": (torch.cat([labels[:, 1:], torch.full((3, 1), -100)], 1), shifted),
        "torch.long tensor": (labels.float(), shifted),
        "targets' shape": (labels[:, :3], shifted),
        "still hold the pad id": (targets, shifted),
        "mark only the pads": (targets.masked_fill(targets == 2, -100), shifted),
        "not shifted": (labels, targets),
        "hold -100: -100 is a mark for the loss, not a token id":        # names the mistake, not the pad id
            (labels, torch.cat([torch.full((3, 1), 2), labels[:, :-1]], 1)),
        "shift to the left": (labels, torch.cat([targets[:, 1:], torch.full((3, 1), 1)], 1)),
        "decoder start token": (labels, torch.cat([torch.full((3, 1), 1), targets[:, :-1]], 1)),
        "must be the pad id": (labels, shifted.masked_fill(shifted == 1, 0)),
        "shifted one place to the right": (labels, torch.cat([torch.full((3, 2), 2), targets[:, :-2]], 1)),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch11.check_3(answer, targets, 1, 2)


# ---- the Japanese edition: the same checks, the summary and the refusal speak Japanese ----

def test_the_outcome_holds_the_summarys_numbers():
    left = ch11.encoder_decoder_outcome(3, 4, "left", "causal mask on cross-attention")
    assert left.dead_rows == {"encoder": [], "decoder": [], "cross": [0, 1]}
    assert left.hidden_rows["cross"] == [2, 3] and left.leaks["cross"] == 0
    assert "no visible key in rows 0, 1" in left.panels[2].title.en       # each title in both languages
    assert "行 0, 1 に見えるキーなし" in left.panels[2].title.ja
    forgotten = ch11.encoder_decoder_outcome(routing="memory_key_padding_mask forgotten")
    assert forgotten.moved_items == [0, 2, 3] and forgotten.moved_positions == [0, 1, 2, 3]
    assert forgotten.leaks["cross"] > 0 and forgotten.leaks["encoder"] == 0
    assert not ch11.encoder_decoder_outcome().moved_items
    with pytest.raises(ValueError, match="routing must be one of"):
        ch11.encoder_decoder_outcome(routing="x")


def test_the_summary_speaks_japanese_and_english_is_unchanged():
    english = ch11.encoder_decoder_view(routing="memory_key_padding_mask forgotten").summary
    assert english == ("source 3 real + 2 pads, target 4 real + 0 pads, right padding, memory_key_padding_mask "
                       "forgotten: cross-attention reads the source pads; cross-attention: weight on blocked cells "
                       "(up to 0.25); real target outputs move in items [0, 2, 3] (item 0 at positions [0, 1, 2, 3]), "
                       "up to 0.65")
    with speaking("ja"):
        japanese = ch11.encoder_decoder_view(routing="memory_key_padding_mask forgotten")
        assert japanese.summary == (
            "ソースは実トークン 3 + パッド 2、ターゲットは実トークン 4 + パッド 0、右パディング、"
            "memory_key_padding_mask を忘れる：クロスアテンションがソースのパッドを読む。クロスアテンション："
            "遮断されたセルに重み（最大 0.25）。ターゲットの実トークンの出力が、サンプル [0, 2, 3] で最大 0.65 動く"
            "（サンプル 0 では位置 [0, 1, 2, 3]）")
        assert japanese.panels[2].title.ja.endswith("遮断されたセルに重み（最大 0.25）")   # drawn in Japanese
        correct = ch11.encoder_decoder_view().summary
        assert "正しい渡し方：誤りはない。ターゲットの実トークンの出力はどれも動かない" in correct
        left = ch11.encoder_decoder_view(padding_side="left", routing="causal mask on cross-attention").summary
        assert ("左パディング、クロスアテンションに因果マスク：ターゲットのクエリ i はソースの語 0..i しか読めない。"
                "クロスアテンション：行 2, 3 で許されたキーに重みなし、行 0, 1 に見えるキーなし") in left
        hint = ch11.encoder_decoder_view(routing="tgt_is_causal=True, no tgt_mask").summary
        assert "マスクではなくヒントなので" in hint and "デコーダの自己アテンション：遮断されたセルに重み" in hint
        with pytest.raises(ValueError, match="^nn.Transformer が RuntimeError を送出する："):
            ch11.encoder_decoder_view(routing="padding mask as src_mask")
        box = ch11.encoder_decoder_explorer()
        assert box.summary.value.startswith("ソースは実トークン 3 + パッド 2")
        box.controls["routing"].value = "padding mask as src_mask"
        assert box.summary.value.startswith("<b>この組み合わせは不可：</b>nn.Transformer が RuntimeError を送出する")
    assert ch11.encoder_decoder_view(routing="memory_key_padding_mask forgotten").summary == english   # not cached


def test_each_note_is_one_value_in_both_languages():
    """A table's notes are made once, each in both languages: in the panel's title (both languages) and in the
    Japanese summary, with the same numbers (no list of English notes to keep in step with a Japanese one)."""
    several = 0
    for padding_side in ch11.PADDING_SIDES:
        for routing in ch11.ROUTINGS:
            try:
                outcome = ch11.encoder_decoder_outcome(3, 4, padding_side, routing)
            except ValueError:   # refused by nn.Transformer: no tables, no notes
                continue
            with speaking("ja"):
                japanese = ch11.encoder_decoder_view(3, 4, padding_side, routing).summary
            for table, panel in zip(ch11.TABLES, outcome.panels, strict=True):
                notes = ch11._notes(outcome, table)
                assert all(isinstance(note, Bilingual) for note in notes)
                several += len(notes) > 1
                for note in notes:
                    assert note.en in panel.title.en and note.ja in panel.title.ja, (routing, table, note)
                    assert note.ja in japanese, (routing, table, note)
                    assert re.findall(r"\d[\d.]*", note.en) == re.findall(r"\d[\d.]*", note.ja), note
    assert several, "some table has two notes or more, in the order both languages list them"


def test_check_1_hints_in_japanese():
    right = key_padding_mask(SRC_1)[:, None, :].expand(3, 5, 6)
    tgt_pads = key_padding_mask(TGT_1)
    wrong = {
        "bool テンソル（True = 遮断）にすること": right.int(),
        "にすること。渡されたのは str である": "right",
        "行と列が逆になっている（形状が転置されている）": right.transpose(1, 2),
        r"形状は \(N, T, S\)": right[:, 0],
        "極性が逆である": ~right,
        "決して因果的ではない": right | ch11.cross_triangle(5, 6),
        "隠すのはクエリではなくキー": right | tgt_pads[:, :, None],
        "意味を持つのはソースのパディング": tgt_pads[:, :, None].expand(3, 5, 6),
        "expand すること": right[:, :1],
        "それはターゲットの長さ": key_padding_mask(TGT_1, 6)[:, None, :].expand(3, 5, 6),
        "右パディングである": right.flip(-1),
        "1 つずれている": key_padding_mask([n + 1 for n in SRC_1], 7)[:, None, :6].expand(3, 5, 6),
        "過不足なく遮断すること": right.clone().fill_(False),
    }
    with speaking("ja"):
        for hint, answer in wrong.items():
            with pytest.raises(Mistake, match=hint):
                ch11.check_1(answer, SRC_1, TGT_1)


def test_check_2_hints_in_japanese(batch):
    model, src, tgt, masks = batch
    correct = ch11.routed("correct", masks)
    without = {name: {k: v for k, v in correct.items() if k != name} for name in correct}
    wrong = {
        "キーワード引数の dict": list(correct.values()),
        "'memory_padding_mask' という名前のマスク引数はない": {**correct,
                                                             "memory_padding_mask": masks.src_key_padding_mask},
        "tgt_mask についてのヒント": ch11.routed("tgt_is_causal=True, no tgt_mask", masks),
        "ターゲットのクエリ i のマスクとして読まれる": ch11.routed("padding mask as memory_mask", masks),
        "ソースの実トークンを隠している": ch11.routed("causal mask on cross-attention", masks),
        "src_mask はエンコーダの": ch11.routed("padding mask as src_mask", masks),
        "^クロスアテンションがまだソースのパッドを読んでいる$": without["memory_key_padding_mask"],
        "^エンコーダがまだソースのパッドを読んでいる$": without["src_key_padding_mask"],
        "^デコーダにまだ未来が見えている$": without["tgt_mask"],
        "右パディングでパッドがその未来に来るから": without["tgt_key_padding_mask"],
        "クロスアテンションが、参照してよいキーの一部を隠し": {**correct,
                                                   "memory_key_padding_mask": ~masks.src_key_padding_mask},
        "デコーダの自己アテンションが、参照してよいキーの一部を隠し": {**correct, "tgt_mask": masks.tgt_mask.T},
        "^tgt_mask の float マスクはスコアに加算される": {**correct, "tgt_mask": torch.tril(torch.ones(4, 4))},
        "^nn.Transformer が学習モードでこの引数を受け付けない（": {**correct, "tgt_mask": masks.decoder},
        "src_is_causal と memory_is_causal は指定しないこと": {**correct, "src_is_causal": True},
    }
    with speaking("ja"):
        for hint, answer in wrong.items():
            with pytest.raises(Mistake, match=hint):
                ch11.check_2(answer, *batch)


def test_check_3_hints_in_japanese():
    targets = torch.tensor([[30, 31, 32, 2], [33, 2, 1, 1], [34, 35, 2, 1]])
    labels = targets.masked_fill(targets == 1, -100)
    shifted = torch.cat([torch.full((3, 1), 2), targets[:, :-1]], 1)
    wrong = {
        "2 つのテンソルの組": labels,
        "順序が逆である": (shifted, labels),
        "labels は位置をずらさない": (torch.cat([labels[:, 1:], torch.full((3, 1), -100)], 1), shifted),
        "torch.long テンソルにすること": (labels.float(), shifted),
        r"ターゲットと同じ \(N, T\) = \(3, 4\)": (labels[:, :3], shifted),
        "パッド ID が残っている": (targets, shifted),
        "パッドだけを -100 にすること": (targets.masked_fill(targets == 2, -100), shifted),
        "シフトされていない": (labels, targets),
        "-100 は損失のための目印であり": (labels, torch.cat([torch.full((3, 1), 2), labels[:, :-1]], 1)),
        "左へのシフト": (labels, torch.cat([targets[:, 1:], torch.full((3, 1), 1)], 1)),
        "デコーダの開始トークンでなければならない": (labels, torch.cat([torch.full((3, 1), 1), targets[:, :-1]], 1)),
        "パッド ID でなければならない": (labels, shifted.masked_fill(shifted == 1, 0)),
        "1 つ右にずらしたもの": (labels, torch.cat([torch.full((3, 2), 2), targets[:, :-2]], 1)),
    }
    with speaking("ja"):
        for hint, answer in wrong.items():
            with pytest.raises(Mistake, match=hint):
                ch11.check_3(answer, targets, 1, 2)


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind(batch):
    right = key_padding_mask(SRC_1)[:, None, :].expand(3, 5, 6)
    accepts_every_form(ch11.check_1, right, SRC_1, TGT_1)
    refuses_the_wrong_kind(ch11.check_1, right.numpy().astype(np.int64), "a numpy int64 array of shape (3, 5, 6)",
                           "numpy の int64 配列（形状 (3, 5, 6)）", SRC_1, TGT_1)
    correct = ch11.routed("correct", batch[3])
    for name, form in (("numpy arrays", {k: v.numpy() for k, v in correct.items()}),
                       ("nested lists", {k: v.tolist() for k, v in correct.items()})):
        try:
            ch11.check_2.solution(form, *batch)
        except Mistake as mistake:
            pytest.fail(f"check 2 refused the right masks as {name}: {mistake.en}")
    refuses_the_wrong_kind(ch11.check_2, {**correct, "src_key_padding_mask": "pads"}, "a str", "str", *batch)
    targets = torch.tensor([[30, 31, 32, 2], [33, 2, 1, 1], [34, 35, 2, 1]])
    labels = targets.masked_fill(targets == 1, -100)
    shifted = torch.cat([torch.full((3, 1), 2), targets[:, :-1]], 1)
    for name, form in forms(labels).items():
        try:
            ch11.check_3.solution((form, forms(shifted)[name]), targets, 1, 2)
        except Mistake as mistake:
            pytest.fail(f"check 3 refused the right pair as {name}s: {mistake.en}")
    refuses_the_wrong_kind(ch11.check_3, ("labels", shifted), "a str", "str", targets, 1, 2)
    with pytest.raises(Mistake, match="torch.long tensor"):                  # the dtype is still judged
        ch11.check_3((labels.numpy().astype(np.float32), shifted), targets, 1, 2)
