"""Chapter 7's code (helpers.chapters.ch07_dead_rows_and_fast_paths): the fast-path spy, the explorer (what each
code path returns for rows with no visible key and for pad rows), and the exercise checks."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from helpers.chapters import ch07_dead_rows_and_fast_paths as ch07
from helpers.chapters.ch07_dead_rows_and_fast_paths import (
    FAST_MODES,
    FAST_PATHS,
    FAST_TOKENS,
    MASK_DTYPES,
    fast_batch,
    fast_output,
    fast_path_spy,
    fast_paths_explorer,
    fast_paths_view,
    fast_run,
    fast_setup,
    merge_heads,
    split_heads,
)
from helpers.exercises import Mistake
from helpers.explorer import view_html
from helpers.language import speaking
from helpers.masks import causal_mask, fill_value, key_padding_mask
from tests.chapters import accepts_every_form, refuses_the_wrong_kind

MANUAL_INF, MANUAL_MIN, SDPA, MHA_WEIGHTS, MHA, ENCODER = FAST_PATHS
TRAINING, EVAL_GRAD, NO_GRAD, FROZEN = FAST_MODES
BIAS = "zero, shows as out_proj.bias"


def test_spy_counts_and_restores():
    original = torch._native_multi_head_attention
    mha = fast_setup().mha.eval()
    x, kpm = fast_batch("left")
    with torch.no_grad(), fast_path_spy() as calls:
        mha(x, x, x, key_padding_mask=kpm)
        mha.train()
        mha(x, x, x, key_padding_mask=kpm)
    mha.eval()
    assert calls == {"native MHA": 1} and torch._native_multi_head_attention is original
    with pytest.raises(RuntimeError), fast_path_spy():
        raise RuntimeError("inside")
    assert torch._native_multi_head_attention is original


@pytest.mark.parametrize(
    ("path", "mode", "masks", "expected", "ran"),
    [
        (MANUAL_INF, NO_GRAD, "bool", "NaN", "no fast path"),
        (MANUAL_MIN, TRAINING, "bool", "finite: the plain average of all 5 values", "no fast path"),
        (SDPA, EVAL_GRAD, "bool", BIAS, "no fast path"),
        (MHA_WEIGHTS, TRAINING, "bool", "NaN", "no fast path"),      # need_weights=True off the fast path: NaN
        (MHA_WEIGHTS, NO_GRAD, "bool", "NaN", "fast path: native MHA"),   # need_weights=True ON the fast path
        (MHA_WEIGHTS, NO_GRAD, "float", "NaN", "no fast path"),
        (MHA, TRAINING, "bool", BIAS, "no fast path"),
        (MHA, EVAL_GRAD, "bool", BIAS, "no fast path"),
        (MHA, NO_GRAD, "bool", "NaN", "fast path: native MHA"),
        (MHA, FROZEN, "bool", "NaN", "fast path: native MHA"),       # frozen parameters, grad on: the fast path
        (MHA, NO_GRAD, "float", BIAS, "no fast path"),                # float masks turn MHA's fast path off
        (MHA, FROZEN, "float", BIAS, "no fast path"),
        (ENCODER, EVAL_GRAD, "bool", "ordinary values", "no fast path"),
        (ENCODER, NO_GRAD, "bool", "NaN", "fast path: fused encoder layer"),
        (ENCODER, NO_GRAD, "float", "NaN", "fast path: fused encoder layer"),   # float masks do not matter here
        (ENCODER, FROZEN, "bool", "NaN", "fast path: fused encoder layer"),
    ],
)
def test_dead_rows_per_path_mode_and_mask_dtype(path, mode, masks, expected, ran):
    summary = fast_paths_view(path, "left", mode, True, masks).summary
    assert f"rows with no visible key [0, 1] -> {expected}" in summary and summary.endswith(f"({ran})")
    assert fast_run(path, "left", mode, True, masks).ran == ran


@pytest.mark.parametrize(
    ("padding", "mode", "causal", "masks", "zeros"),
    [
        ("right", NO_GRAD, False, "bool", True),
        ("right", NO_GRAD, False, "float", True),   # a float key_padding_mask is packed too
        ("right", FROZEN, False, "bool", True),     # nothing for autograd to record: same fast path
        ("right", EVAL_GRAD, False, "bool", False),
        ("right", TRAINING, False, "bool", False),
        ("right", NO_GRAD, True, "bool", False),    # a causal mask as well: no nested tensor
        ("left", NO_GRAD, False, "bool", False),    # left padding: no nested tensor
    ],
)
def test_encoder_zeros_only_on_its_nested_tensor_path(padding, mode, causal, masks, zeros):
    out, ran = fast_run(ENCODER, padding, mode, causal, masks)
    _, kpm = fast_batch(padding)
    assert (out[0][kpm[0]] == 0).all().item() is zeros
    assert ("nested tensor" in ran) is zeros
    assert ("-> exact zeros" in fast_paths_view(ENCODER, padding, mode, causal, masks).summary) is zeros


def test_paths_agree_on_rows_with_a_visible_key():
    for padding, causal in itertools.product(FAST_TOKENS, [True, False]):
        reference = fast_output(MHA, padding, TRAINING, causal)
        live = torch.ones(2, 5, dtype=torch.bool)
        if causal and padding == "left":
            live[0, :2] = False
        for path, mode, masks in itertools.product(FAST_PATHS[:-1], FAST_MODES, MASK_DTYPES):
            out = fast_output(path, padding, mode, causal, masks)
            assert (out[live] - reference[live]).abs().max() < 1e-5, (path, mode, padding, causal, masks)


def test_finite_fill_dead_row_is_the_average_of_all_values():
    x, _ = fast_batch("left")
    mha = fast_setup().mha
    with torch.no_grad():
        v = split_heads(mha, x)[2]
        average = merge_heads(mha, v.mean(-2, keepdim=True).expand_as(v))
    for masks in MASK_DTYPES:   # replaced, or added (float32 finfo.min rounds these scores away)
        out = fast_output(MANUAL_MIN, "left", NO_GRAD, True, masks)
        assert (out[0, :2] - average[0, :2]).abs().max() < 1e-5


def test_modules_are_left_in_eval_with_trainable_parameters():
    fast_output(MHA, "left", TRAINING, True)
    fast_output(ENCODER, "right", FROZEN, False)
    setup = fast_setup()
    for module in (setup.mha, setup.encoder):
        assert not module.training and all(p.requires_grad for p in module.parameters())


def test_view_marks_dead_rows_and_pads():
    view = fast_paths_view()
    (panel,) = view.panels
    assert panel.red_rows == (0, 1) and panel.alert
    assert view.summary == ("MHA, need_weights=False, eval + no_grad, bool masks, left padding + causal: "
                            "rows with no visible key [0, 1] -> NaN (fast path: native MHA)")
    html = view_html(view)
    assert html.count('class="masked framed"') == 8   # 2 dead pad rows x 4 features
    right = fast_paths_view(padding="right")
    assert right.panels[0].red_rows == () and "no row without a visible key; pad rows [3, 4]" in right.summary


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": "torch.matmul"}, "path must be one of"),
        ({"padding": "middle"}, "padding must be one of"),
        ({"mode": "inference"}, "mode must be one of"),
        ({"masks": "int"}, "masks must be one of"),
    ],
)
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fast_paths_view(**kwargs)


def test_explorer_updates():
    box = fast_paths_explorer()
    path, padding, mode, causal, masks = box.controls.values()
    summary = box.summary
    assert summary.value.endswith("[0, 1] -&gt; NaN (fast path: native MHA)")
    masks.value = "float"
    assert summary.value.endswith("[0, 1] -&gt; zero, shows as out_proj.bias (no fast path)")
    masks.value, mode.value = "bool", EVAL_GRAD
    assert summary.value.endswith("[0, 1] -&gt; zero, shows as out_proj.bias (no fast path)")
    path.value, padding.value, causal.value, mode.value = ENCODER, "right", False, FROZEN
    assert summary.value.endswith("pad rows [3, 4] -&gt; exact zeros (fast path: nested tensor + fused encoder layer)")


# ---- the exercise checks ----------------------------------------------------------------------------------------

LENGTHS = [2, 4, 1]


def dead_rows(kpm, attn_mask):
    return (kpm[:, None, :] | attn_mask).all(-1)


def test_check_1_accepts_dead_rows_and_names_each_mistake():
    ch07.check_1.solution(dead_rows, LENGTHS)
    wrong = {
        "should be a function": dead_rows(key_padding_mask(LENGTHS, side="left"), causal_mask(4)),
        "bool tensor": lambda kpm, attn_mask: dead_rows(kpm, attn_mask).int(),
        "shape": lambda kpm, attn_mask: kpm[:, None, :] | attn_mask,
        "you marked the pad positions": lambda kpm, attn_mask: kpm,          # passes under left padding + causal
        "ALL its keys": lambda kpm, attn_mask: (kpm[:, None, :] | attn_mask).any(-1),
        "polarity is reversed": lambda kpm, attn_mask: ~dead_rows(kpm, attn_mask),
        "your function raised TypeError": lambda kpm: kpm,
        "some rows are wrong": lambda kpm, attn_mask: dead_rows(kpm, attn_mask) ^ (torch.arange(kpm.shape[1]) == 3),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch07.check_1(answer, LENGTHS)
    with pytest.raises(Mistake, match="right padding"):     # "the pads" passes the left-padded case, not this one
        ch07.check_1(lambda kpm, attn_mask: kpm, LENGTHS)
    all_false = {   # each marks no row; LENGTHS has no all-pad item, so the hint must not speak of one
        "all-pad items only": lambda kpm, attn_mask: kpm.all(-1, keepdim=True).expand_as(kpm),
        "& instead of |": lambda kpm, attn_mask: (kpm[:, None, :] & attn_mask).all(-1),
        "the attention mask alone": lambda kpm, attn_mask: attn_mask.all(-1).expand(kpm.shape),
    }
    for name, answer in all_false.items():
        with pytest.raises(Mistake, match=r"^with left padding \+ causal you marked no row, yet some rows have no "
                                          r"visible key: .*EITHER mask .*\(combine the two with \|\)") as caught:
            ch07.check_1(answer, LENGTHS)
        assert "all-pad" not in str(caught.value), name


def test_check_2_accepts_replacement_and_names_each_mistake():
    ch07.check_2.solution(lambda scores, blocked: scores.masked_fill(blocked, torch.finfo(scores.dtype).min))
    wrong = {
        "should be a function": torch.zeros(3, 3),
        # fixed fills: one number in every dtype (float32 and bfloat16 real scores of -1e6 lie below it)
        "float32 .*-1,000,000: your fill is the same fixed number": lambda scores, blocked: scores.masked_fill(
            blocked, -1e4),
        "float32 .*-1,000,000: your fill is the same fixed number in every": lambda scores, blocked: (
            scores.masked_fill(blocked, -60000.0)),
        "float32 .*your fill is float16's lowest number": lambda scores, blocked: scores.masked_fill(
            blocked, torch.finfo(torch.float16).min),
        # half of the dtype's own finfo.min: fine in float32, but float16's real score of -50000 lies below it
        "float16 .*-50,000: half of the dtype's lowest number": lambda scores, blocked: scores.masked_fill(
            blocked, torch.finfo(scores.dtype).min / 2),
        # a fill per dtype that is too high only in bfloat16
        "bfloat16 .*row 2.*below every real score": lambda scores, blocked: scores.masked_fill(
            blocked, -1e5 if scores.dtype == torch.bfloat16 else torch.finfo(scores.dtype).min),
        "raised RuntimeError": lambda scores, blocked: scores.masked_fill(blocked, -1e9),        # no float16
        "float32 the row with no visible key became NaN": lambda scores, blocked: scores.masked_fill(
            blocked, float("-inf")),
        # added in the scores' own dtype: fine in float32, overflows to -inf in float16 (-30 + finfo.min)
        "float16 the row with no visible key became NaN": lambda scores, blocked: scores + blocked.to(
            scores.dtype) * torch.finfo(scores.dtype).min,
        "keep the scores' dtype": lambda scores, blocked: scores.float().masked_fill(blocked, -3e38),
        "visible scores changed": lambda scores, blocked: (scores * 2).masked_fill(blocked, torch.finfo(
            scores.dtype).min),
        "scores' shape": lambda scores, blocked: scores[0],
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint) as caught:
            ch07.check_2(answer)
        assert "finfo" not in str(caught.value)                       # a hint, not the answer
    # equivalent ways to write the right answer pass too
    ch07.check_2.solution(lambda scores, blocked: torch.where(blocked, torch.finfo(scores.dtype).min, scores))
    ch07.check_2.solution(lambda scores, blocked: scores.masked_fill(blocked, fill_value("min", scores.dtype)))


def test_check_3_accepts_the_bottom_right_mask_and_hints_without_answering():
    ones = torch.ones(2, 5, dtype=torch.bool)
    ch07.check_3.solution(ones.tril(diagonal=3), 2, 5)
    wrong = {
        "bool tensor": ones.tril(diagonal=3).int(),
        "shape": ones.tril(diagonal=3).T,
        "MHA's polarity": ~ones.tril(diagonal=3),
        "top-left triangle": ones.tril(),
        "see itself": ones.tril(diagonal=2),
        "that is the future": ones.tril(diagonal=4),
        "may see all of them": ones.tril(diagonal=3) & torch.tensor([False, True, True, True, True]),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint) as caught:
            ch07.check_3(answer, 2, 5)
        assert "position 3" not in str(caught.value) and "tril(" not in str(caught.value)   # a hint, not the answer


def test_checks_name_bad_problem_data():
    with pytest.raises(TypeError, match="lengths must be"):
        ch07.check_1(dead_rows, 4)
    with pytest.raises(ValueError, match="L must be at most S"):
        ch07.check_3(torch.ones(6, 5, dtype=torch.bool), 6, 5)


def test_encoder_fast_path_conditions_match_the_source():
    # norm_first=True: no nested tensor (PyTorch warns at construction), but each layer's fused kernel still runs
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
    with pytest.warns(UserWarning, match="norm_first was True"):
        encoder = nn.TransformerEncoder(layer, 1).eval()
    x, kpm = torch.randn(2, 5, 8), key_padding_mask([3, 5])
    with torch.no_grad(), fast_path_spy() as calls:
        encoder(x, src_key_padding_mask=kpm)
    assert calls == {"fused encoder layer": 1}


# --- the Japanese edition ---

def test_the_japanese_edition_names_the_paths_in_japanese():
    from collections import Counter

    with speaking("ja"):
        assert ch07.fast_paths_ran(Counter({"fused encoder layer": 2, "nested tensor": 1})) == \
            "高速パス：ネステッドテンソル + 融合エンコーダ層"
        assert ch07.ran_words() == "高速パスなし" and ch07.ran_words("native MHA") == "高速パス：ネイティブ MHA"
        assert fast_run(MHA, "left", "eval + no_grad", True).ran == "高速パス：ネイティブ MHA"   # cached, still ja
        assert ch07.label("slow path") == "低速パス" and ch07.label("training") == "学習モード"
        view = fast_paths_view()
        assert view.summary == ("MHA (need_weights=False)、評価モード + no_grad、bool マスク、左パディング + 因果："
                                "見えるキーのない行 [0, 1] → NaN（高速パス：ネイティブ MHA）")
        assert view.panels[0].title == ("MHA (need_weights=False)\n"
                                        "評価モード + no_grad、bool マスク、左パディング + 因果\n"
                                        "高速パス：ネイティブ MHA")
        assert fast_paths_view(MANUAL_MIN, "left", "eval + no_grad", True).summary.startswith(
            "手書き：finfo.min で埋めてソフトマックス、")
        right = fast_paths_view(ENCODER, "right", "eval, grad on", False)
        assert right.summary.endswith("見えるキーのない行はない。パッド行 [3, 4] → 普通の値（高速パスなし）")
        box = ch07.fast_paths_explorer()
        assert box.controls["mode"]._options_labels[1] == "評価モード、勾配あり"
        assert box.controls["mode"].value == "eval + no_grad" and box.controls["padding"].value == "left"
        box.controls["mode"].value = "eval, grad on"
        assert box.summary.value.endswith("→ 0（出力は out_proj.bias）（高速パスなし）")
    assert fast_run(MHA, "left", "eval + no_grad", True).ran == "fast path: native MHA"
    assert ch07.label("slow path") == "slow path"
    with pytest.raises(ValueError, match="text must be one of"):
        ch07.label("very fast path")
    with pytest.raises(ValueError, match="kernels must be among"):
        ch07.ran_words("flash")


def test_the_japanese_edition_hears_japanese_hints():
    ones = torch.ones(2, 5, dtype=torch.bool)
    wrong_1 = {
        "^answer_1 は関数": dead_rows(key_padding_mask(LENGTHS, side="left"), causal_mask(4)),
        "^左パディング \\+ 因果のとき、どの行にも印が付いていないが、見えるキーのない行がある。.*\\| で合わせる":
            lambda kpm, attn_mask: (kpm[:, None, :] & attn_mask).all(-1),
        "^右パディング \\+ 因果のとき、パッド位置に印を付けている": lambda kpm, attn_mask: kpm,
        "「すべて」のキー": lambda kpm, attn_mask: (kpm[:, None, :] | attn_mask).any(-1),
        "極性が逆": lambda kpm, attn_mask: ~dead_rows(kpm, attn_mask),
        "^左パディング \\+ 因果のとき、書いた関数で TypeError が発生した（": lambda kpm: kpm,
        "いくつかの行が違う": lambda kpm, attn_mask: dead_rows(kpm, attn_mask) ^ (torch.arange(kpm.shape[1]) == 3),
        "^bool テンソルを返すこと": lambda kpm, attn_mask: dead_rows(kpm, attn_mask).int(),
        r"形状 \(N, L\) = \(3, 4\) を返すこと": lambda kpm, attn_mask: kpm[:, None, :] | attn_mask,
    }
    wrong_2 = {
        "^torch.float32 で、実トークンのスコア -1,000,000 がある行 2 において.*同じ固定の数":
            lambda scores, blocked: scores.masked_fill(blocked, -1e4),
        "float16 の最小の数": lambda scores, blocked: scores.masked_fill(blocked, torch.finfo(torch.float16).min),
        "^torch.float16 で.*最小の数の半分": lambda scores, blocked: scores.masked_fill(
            blocked, torch.finfo(scores.dtype).min / 2),
        "^torch.bfloat16 で.*どの実トークンのスコアよりも": lambda scores, blocked: scores.masked_fill(
            blocked, -1e5 if scores.dtype == torch.bfloat16 else torch.finfo(scores.dtype).min),
        "^torch.float16 のとき、書いた関数で RuntimeError が発生した（":
            lambda scores, blocked: scores.masked_fill(blocked, -1e9),
        "0/0 になるのはどの埋め値か": lambda scores, blocked: scores.masked_fill(blocked, float("-inf")),
        "端に近い数に何かを足す":
            lambda scores, blocked: scores + blocked.to(scores.dtype) * torch.finfo(scores.dtype).min,
        "dtype を保つこと": lambda scores, blocked: scores.float().masked_fill(blocked, -3e38),
        "見えるスコアが変わった":
            lambda scores, blocked: (scores * 2).masked_fill(blocked, torch.finfo(scores.dtype).min),
        r"同じ形状 \(3, 3\) のテンソル": lambda scores, blocked: scores[0],
    }
    wrong_3 = {
        "bool テンソルで、True = 参照してよい": ones.tril(diagonal=3).int(),
        r"形状は \(L, S\) = \(2, 5\) で": ones.tril(diagonal=3).T,
        "MHA の極性": ~ones.tril(diagonal=3),
        "左上の三角形": ones.tril(),
        "自分自身も見え": ones.tril(diagonal=2),
        "それは未来である": ones.tril(diagonal=4),
        "すべて参照してよい": ones.tril(diagonal=3) & torch.tensor([False, True, True, True, True]),
    }
    with speaking("ja"):
        for hint, answer in wrong_1.items():
            with pytest.raises(Mistake, match=hint):
                ch07.check_1(answer, LENGTHS)
        for hint, answer in wrong_2.items():
            with pytest.raises(Mistake, match=hint) as caught:
                ch07.check_2(answer)
            assert "finfo" not in str(caught.value)
        for hint, answer in wrong_3.items():
            with pytest.raises(Mistake, match=hint) as caught:
                ch07.check_3(answer, 2, 5)
            assert "位置 3" not in str(caught.value) and "tril(" not in str(caught.value)


def test_every_japanese_view_needs_the_same_glyphs():
    """The static explorer ships one web font per distinct set of CJK characters in the views' panels: with one
    set (TITLE_LEGEND_JA in the caption holds every character a title can show), the Japanese edition's file
    stays within its budget."""
    from helpers import cjk_font

    sets = set()
    with speaking("ja"):
        for setting in itertools.product(FAST_PATHS, ch07.FAST_TOKENS, ch07.FAST_MODES, (True, False),
                                         ("bool", "float")):
            view = fast_paths_view(*setting)
            text = "".join("".join(p.rows) + "".join(p.cols) + p.title for p in view.panels) + view.caption
            sets.add(frozenset(c for c in text if cjk_font._is_cjk(c)))
    assert len(sets) == 1


def test_padded_pads_by_display_width():
    """A Japanese character takes 2 columns, so the table's next column lines up in both editions; ASCII text is
    padded exactly as f"{text:Ns}" pads it (the English table stays byte-identical)."""
    assert ch07.width("slow path") == 9 and ch07.width("低速パス") == 8 and ch07.width("MHA、学習モード") == 15
    assert ch07.width("（０）") == 6 and ch07.width("") == 0                      # full-width (F) counts 2 too
    for text in ("slow path", "function", "MHA, eval + no_grad, float masks (finfo.min)", ""):
        assert ch07.padded(text, 45) == f"{text:45s}"
    assert ch07.padded("低速パス", 10) == "低速パス  " and ch07.padded("関数", 10) == "関数" + " " * 6
    assert ch07.padded("高速パス：融合エンコーダ層", 10) == "高速パス：融合エンコーダ層"   # wider: unchanged
    rows = [ch07.padded(t, 12) + "|" for t in ("低速パス", "fast path", "関数")]
    assert {ch07.width(r) for r in rows} == {13}                                  # the "|" column lines up
    with pytest.raises(ValueError, match="columns must be"):
        ch07.padded("x", -1)
    with pytest.raises(TypeError, match="text must be a string"):
        ch07.width(3)


def test_the_table_rows_and_path_names_are_japanese_words_in_the_japanese_edition():
    with speaking("ja"):
        assert ch07.label("MHA, eval + no_grad") == "MHA、評価モード + no_grad"
        assert ch07.label("manual masked_fill(-inf) + softmax") == "手書きの masked_fill(-inf) + ソフトマックス"
        assert ch07.label("F.scaled_dot_product_attention") == "F.scaled_dot_product_attention"
        for english, japanese in ch07.LABELS_JA.items():
            assert ", " not in japanese or english == japanese, japanese   # no ASCII comma between Japanese words
            assert "softmax" not in japanese.replace("masked_fill", ""), japanese   # ソフトマックス in Japanese
    assert ch07.label("MHA, eval + no_grad") == "MHA, eval + no_grad"


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    right = torch.ones(2, 5, dtype=torch.bool).tril(diagonal=3)
    accepts_every_form(ch07.check_3, right, 2, 5)
    refuses_the_wrong_kind(ch07.check_3, right.numpy().astype(np.uint8), "a numpy uint8 array of shape (2, 5)",
                           "numpy の uint8 配列（形状 (2, 5)）", 2, 5)


def test_a_verdict_line_is_said_in_the_current_language():
    assert ch07.verdict("pads all zero:", True) == "pads all zero: True"
    assert ch07.verdict("item 0 all NaN:", torch.tensor(False)) == "item 0 all NaN: False"
    with speaking("ja"):
        assert ch07.verdict("pads all zero:", True) == "パッドがすべて 0：はい"
        assert ch07.verdict("item 0 all NaN:", False) == "サンプル 0 がすべて NaN：いいえ"
        assert ch07.label("right padding, float key_padding_mask") == "右パディング、float key_padding_mask"
    with pytest.raises(ValueError, match="ends in ':'"):
        ch07.verdict("1 head", True)
