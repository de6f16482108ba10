"""Chapter 13: window conventions, prefix-LM, spans, sinks, chunk masks, chunked prefill, the mask explorer and the
exercise checks (helpers/chapters/ch13_windows_prefixes_and_chunks.py)."""

import itertools

import numpy as np
import pytest
import torch

from helpers.chapters import ch09_batched_generation as ch09
from helpers.chapters import ch13_windows_prefixes_and_chunks as ch13
from helpers.chapters.ch07_dead_rows_and_fast_paths import width
from helpers.chapters.ch10_packing_and_the_cost_of_padding import sliding_window_mod
from helpers.checks import expected_mask, receptive_field
from helpers.exercises import Mistake
from helpers.explorer import view_html
from helpers.language import speaking
from helpers.masks import causal_mask
from tests.chapters import accepts_every_form, refuses_the_wrong_kind


def brute_window(n, keys):
    return torch.tensor([[not (0 <= i - j < keys) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize(("n", "width"), list(itertools.product((1, 2, 5, 9), (1, 2, 3, 9, 12))))
def test_window_conventions_count_keys(n, width):
    keys = ch13.window_mask(n, width)
    assert torch.equal(keys, brute_window(n, width))
    assert torch.equal(ch13.window_mask(n, width, "left"), brute_window(n, width + 1))
    assert torch.equal(ch13.window_mask(n, width - 1, "left"), keys)       # the same window, the other convention
    assert ch13.keys_per_query(keys).tolist() == [min(i + 1, width) for i in range(n)]
    assert torch.equal(ch13.transformers_window_mask(n, width), keys)
    assert torch.equal(ch13.flash_attn_mask(n, n, (width - 1, 0), causal=True), keys)
    assert torch.equal(ch13.mod_mask(sliding_window_mod(width), n), keys)


def test_window_edges():
    assert torch.equal(ch13.window_mask(5, 1), ~torch.eye(5, dtype=torch.bool))         # w = 1: itself only
    assert torch.equal(ch13.window_mask(5, 0, "left"), ~torch.eye(5, dtype=torch.bool))
    assert torch.equal(ch13.window_mask(5, 5), causal_mask(5))                           # w >= S: the triangle
    assert torch.equal(ch13.window_mask(5, 50), causal_mask(5))
    assert ch13.keys_seen(10, 4, "left") == 5 and ch13.keys_seen(2, 4, "left") == 3 and ch13.keys_seen(0, 3) == 1
    assert torch.equal(ch13.window_mask(8, 3), expected_mask("sliding_window", 8, window=3))


def test_flash_attn_rule_from_its_documentation():
    assert not ch13.flash_attn_mask(4, 6).any()                                          # (-1, -1): no limit
    # causal aligned bottom-right: seqlen_q = 2, seqlen_k = 5 keeps 1 1 1 1 0 / 1 1 1 1 1 (the docstring's example)
    assert (~ch13.flash_attn_mask(2, 5, causal=True)).int().tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    assert (~ch13.flash_attn_mask(5, 2, causal=True)).int().tolist() == [[0, 0], [0, 0], [0, 0], [1, 0], [1, 1]]
    both_ways = ~ch13.flash_attn_mask(7, 7, (2, 1))
    assert both_ways[3].int().tolist() == [0, 1, 1, 1, 1, 0, 0]
    assert torch.equal(ch13.flash_attn_mask(8, 8, (2, 2), causal=True), ch13.window_mask(8, 3))  # transformers'


def test_prefix_edges():
    assert torch.equal(ch13.prefix_mask(6, 0), causal_mask(6)) and torch.equal(ch13.prefix_mask(6, 1), causal_mask(6))
    assert not ch13.prefix_mask(6, 6).any()                                              # all prefix: bidirectional
    blocked = ch13.prefix_mask(6, 3)
    assert not blocked[:3, :3].any() and torch.equal(blocked[3:], causal_mask(6)[3:])
    for p in range(7):
        assert torch.equal(ch13.mod_mask(ch13.prefix_mod(p), 6), ch13.prefix_mask(6, p))


def test_spans_are_bidirectional_inside_and_never_see_a_later_span():
    groups = torch.tensor([0, 0, -1, 1, 1, 1, -1])
    spans = ch13.span_mask(groups)
    assert not spans[0, 1] and not spans[3, 5] and spans[0, 3:].all() and not spans[3:6, :2].any()
    assert torch.equal(ch13.mod_mask(ch13.span_mod(groups), 7), spans)
    assert torch.equal(ch13.span_mask(torch.full((5,), -1)), causal_mask(5))             # no span: causal
    assert torch.equal(ch13.span_mask(torch.zeros(4, dtype=torch.long)), torch.zeros(4, 4, dtype=torch.bool))


@pytest.mark.parametrize(("sinks", "width"), list(itertools.product((0, 1, 3, 8, 12), (1, 2, 4, 8))))
def test_sinks_plus_window(sinks, width):
    n = 8
    blocked = ch13.sink_window_mask(n, sinks, width)
    expected = torch.tensor([[not (j <= i and (j < sinks or i - j < width)) for j in range(n)] for i in range(n)])
    assert torch.equal(blocked, expected)
    assert torch.equal(ch13.mod_mask(ch13.sink_window_mod(sinks, width), n), blocked)
    assert ch13.keys_per_query(blocked).tolist() == [min(i + 1, width + min(sinks, max(0, i - width + 1)))
                                                     for i in range(n)]
    if sinks >= n:                                   # every token is a sink: the causal triangle
        assert torch.equal(blocked, causal_mask(n))


def test_chunk_mask_is_the_bottom_rows_of_the_full_mask():
    for chunk, cached in itertools.product((1, 2, 5), (0, 1, 4)):
        total = chunk + cached
        assert torch.equal(ch13.chunk_mask(chunk, cached), causal_mask(total)[cached:])
        assert torch.equal(ch13.chunk_mask(chunk, cached, window=3), ch13.window_mask(total, 3)[cached:])
        assert torch.equal(ch13.mod_mask(ch13.chunk_mod(cached, 3), chunk, total), ch13.window_mask(total, 3)[cached:])
    assert ch13.chunk_mask(1, 6).tolist() == [[False] * 7]                               # a decode step sees all


def test_full_mask_combines_window_prefix_and_sinks():
    blocked = ch13.full_mask(8, 3, prefix=3, sinks=1)
    assert not blocked[:3, :3].any()                     # the prefix, both ways
    assert not blocked[7, 0] and blocked[7, 1] and (~blocked[7]).sum() == 4   # a sink + the window
    assert torch.equal(ch13.full_mask(8, None), causal_mask(8))
    assert torch.equal(ch13.full_mask(8, 3), ch13.window_mask(8, 3))
    for w, p, k in itertools.product((1, 3, 10), (0, 4, 10), (0, 2)):
        assert torch.equal(ch13.mod_mask(ch13.full_mod(w, p, k), 10), ch13.full_mask(10, w, p, k))


@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    return ch09.TinyLM().eval()


PROMPT = torch.tensor([ch09.encode("3 5 7 9 1 3 5 7 9 1 3 5")])


def test_chunked_prefill_matches_one_pass(lm):
    with torch.no_grad():
        reference = lm(PROMPT).logits
    one = ch13.prefill(lm, PROMPT)
    assert (one - reference).abs().max() < 1e-6
    for size in (1, 3, 4, 5, 12, 20):
        assert (ch13.prefill(lm, PROMPT, size) - one).abs().max() < 1e-5
    for bug in ("top-left", "cache forgotten"):
        assert (ch13.prefill(lm, PROMPT, 4, mask=bug)[:, 4:] - one[:, 4:]).abs().max() > 0.01
        assert (ch13.prefill(lm, PROMPT, 12, mask=bug) - one).abs().max() < 1e-5        # one chunk: no cache, right


def test_windowed_prefill_and_a_rolling_cache(lm):
    windowed = ch13.prefill(lm, PROMPT, window=3)
    for size, keep in itertools.product((1, 4, 5), (None, 2, 5)):
        assert (ch13.prefill(lm, PROMPT, size, window=3, keep=keep) - windowed).abs().max() < 1e-5
    assert (ch13.prefill(lm, PROMPT, 4, window=3, keep=1) - windowed).abs().max() > 0.01
    assert (ch13.prefill(lm, PROMPT, window=12) - ch13.prefill(lm, PROMPT)).abs().max() < 1e-6   # w >= L: causal


def test_mask_view_and_explorer():
    view = ch13.mask_view()
    assert "query 9 sees 3 key(s) in 1 layer and reaches 5 position(s) in 2 layer(s) = 2·(3−1)+1" in view.summary
    assert "window spellings agree" in view.summary and view.summary.count(": True") == 2
    assert len(view.panels) == 4 and "last chunk: 2 x 10" in view.summary
    html = view_html(view)
    assert html.count('class="masked') == int(ch13.full_mask(10, 3).sum() + receptive_field(ch13.full_mask(10, 3), 2)
                                               .sum() + ch13.full_mask(10, 3)[8:].sum())
    assert "reaches 10 position(s) in 1 layer(s)" in ch13.mask_view(width=10, layers=1).summary
    assert "sees 5 key(s)" in ch13.mask_view(sinks=2).summary
    assert "0 cell(s) a top-left" in ch13.mask_view(chunk=10).summary
    box = ch13.mask_explorer()
    before = box.summary.value
    box.controls["width"].value = 4
    assert box.summary.value != before and "reaches 7 position(s) in 2 layer(s)" in box.summary.value
    box.controls["layers"].value = 4
    assert "reaches 10 position(s) in 4 layer(s)" in box.summary.value
    box.controls["prefix"].value = 10
    assert "whole mask as one mask_mod: True" in box.summary.value


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: ch13.window_mask(5, 0), ValueError, "width must be an int >= 1"),
    (lambda: ch13.window_mask(5, -1, "left"), ValueError, "width must be an int >= 0"),
    (lambda: ch13.window_mask(5, 2.0), TypeError, "width must be an int"),
    (lambda: ch13.window_mask(0, 2), ValueError, "length must be an int >= 1"),
    (lambda: ch13.window_mask(5, 2, "inclusive"), ValueError, "convention must be one of"),
    (lambda: ch13.flash_attn_mask(4, 4, [2, 0]), TypeError, "window_size must be a tuple"),
    (lambda: ch13.flash_attn_mask(4, 4, (-2, 0)), ValueError, "window_size's entries must be an int >= -1"),
    (lambda: ch13.flash_attn_mask(4, 4, causal=1), TypeError, "causal must be a bool"),
    (lambda: ch13.prefix_mask(4, 5), ValueError, "prefix must be at most length=4"),
    (lambda: ch13.prefix_mask(4, -1), ValueError, "prefix must be an int >= 0"),
    (lambda: ch13.span_mask([0, 0, -1]), TypeError, "groups must be a non-empty 1-D integer tensor"),
    (lambda: ch13.span_mask(torch.tensor([0, -2])), ValueError, "groups must hold -1"),
    (lambda: ch13.sink_window_mask(4, -1, 2), ValueError, "sinks must be an int >= 0"),
    (lambda: ch13.sink_window_mod(1, 0), ValueError, "width must be an int >= 1"),
    (lambda: ch13.chunk_mask(0, 3), ValueError, "chunk must be an int >= 1"),
    (lambda: ch13.chunk_mask(2, -1), ValueError, "cached must be an int >= 0"),
    (lambda: ch13.chunk_mask(2, 3, window=0), ValueError, "window must be an int >= 1"),
    (lambda: ch13.keys_per_query(torch.zeros(3, 3)), TypeError, "blocked must be a bool tensor"),
    (lambda: ch13.mod_mask("causal", 3), TypeError, "mask_mod must be a function"),
    (lambda: ch13.prefill(None, PROMPT), TypeError, "model must be chapter 9's TinyLM"),
    (lambda: ch13.mask_view(width=0), ValueError, "width must be an int from 1 to 10"),
    (lambda: ch13.mask_view(layers=5), ValueError, "layers must be an int from 1 to 4"),
])
def test_bad_input_is_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_prefill_refuses_bad_arguments(lm):
    with pytest.raises(ValueError, match="ids must be an int64 tensor"):
        ch13.prefill(lm, PROMPT[0])
    with pytest.raises(ValueError, match="at most the model's max_len=16"):
        ch13.prefill(lm, torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="mask must be one of"):
        ch13.prefill(lm, PROMPT, 4, mask="bottom-left")
    with pytest.raises(ValueError, match="keep must be an int >= 1"):
        ch13.prefill(lm, PROMPT, 4, keep=0)


# --- the exercises ---

def test_check_1_accepts_the_counts_and_names_each_mistake():
    ch13.check_1.solution((5, 3), 4, (10, 2))
    for hint, answer in {"tuple of ints": 5, "one count per query": (5,), "with the query itself": (4, 3),
                         "nothing to the right": (9, 3), "fewer keys behind": (5, 5),
                         "wrong order": (3, 5), "count again": (6, 3), "query itself is missing": (4, 2),
                         "whole past": (11, 3), "positions count from 0": (5, 2),
                         "tuple of ints, one per query; got a tuple": (5.5, 3.0)}.items():
        with pytest.raises(Mistake, match=hint):
            ch13.check_1(answer, 4, (10, 2))
    for right in ([5, 3], torch.tensor([5, 3]), (np.int64(5), np.int64(3)), tuple(torch.tensor([5, 3]))):
        ch13.check_1(right, 4, (10, 2))                                                  # other styles, accepted
    with pytest.raises(Mistake, match="tuple of ints"):
        ch13.check_1(torch.tensor([5.0, 3.5]), 4, (10, 2))


def test_check_2_accepts_the_chunk_mask_and_names_each_mistake():
    right = ch13.chunk_mask(3, 5, 4)
    ch13.check_2.solution(right, 3, 5, 4)
    top_left = ~torch.ones(3, 8, dtype=torch.bool).tril() | (torch.arange(3)[:, None] - torch.arange(8) >= 4)
    forgotten = right.clone()
    forgotten[:, :5] = True
    future = right.clone()
    future[0, 6] = False
    behind = torch.arange(3)[:, None] + 4 - torch.arange(8)                             # queries read as 4, 5, 6
    shifted = (behind < 0) | (behind >= 4)
    own_blocked = right.clone()
    own_blocked[:, 5:] = True
    for hint, answer in {"bool tensor": right.int(), "one row per query": ch13.window_mask(8, 4),
                         "polarity is flipped": ~right, "aligned top-left": top_left,
                         "cached columns are blocked": forgotten, "window is missing": ch13.chunk_mask(3, 5),
                         "off by one": ch13.chunk_mask(3, 5, 5), "after its own position": future,
                         "cannot see its own key": shifted, "a query cannot see its own": own_blocked}.items():
        with pytest.raises(Mistake, match=hint):
            ch13.check_2(answer, 3, 5, 4)
    ch13.check_2(ch13.window_mask(8, 4)[5:], 3, 5, 4)                                   # the full mask's last rows
    assert ch13.check_2.__doc__.startswith("Exercise 2")


def test_check_3_accepts_the_mask_mod_and_names_each_mistake():
    ch13.check_3.solution(ch13.sink_window_mod)
    wrong = {
        "return a mask_mod": lambda s, w: None,
        "are tensors": lambda s, w: (lambda b, h, q, kv: (kv <= q) and (q - kv < w)),
        "bool tensor": lambda s, w: (lambda b, h, q, kv: ((kv <= q) & (q - kv < w)).int()),
        "polarity is flipped": lambda s, w: (lambda b, h, q, kv: ~((kv <= q) & ((kv < s) | (q - kv < w)))),
        "sees a later sink": lambda s, w: (lambda b, h, q, kv: (kv < s) | ((kv <= q) & (q - kv < w))),
        "later token through the window": lambda s, w: (lambda b, h, q, kv: (kv <= q) & (kv < s) | (q - kv < w)),
        "swapped": lambda s, w: (lambda b, h, q, kv: (kv <= q) & ((kv < w) | (q - kv < s))),
        "cuts no key": lambda s, w: (lambda b, h, q, kv: (kv <= q) & ((kv < s) | (kv - q < w))),
        "sink AND in the window": lambda s, w: (lambda b, h, q, kv: (kv <= q) & (kv < s) & (q - kv < w)),
        "whatever sinks and width": lambda s, w: ch13.sink_window_mod(2, 3),
        "four arguments": lambda s, w: (lambda q, kv: (kv <= q) & ((kv < s) | (q - kv < w))),
        "sinks are missing": lambda s, w: (lambda b, h, q, kv: (kv <= q) & (q - kv < w)),
        "window is off by one": lambda s, w: (lambda b, h, q, kv: (kv <= q) & ((kv < s) | (q - kv <= w))),
        "sinks are off by one": lambda s, w: (lambda b, h, q, kv: (kv <= q) & ((kv <= s) | (q - kv < w))),
        "cannot see itself": lambda s, w: (lambda b, h, q, kv: (kv < q) & ((kv < s) | (q - kv < w))),
        "raised TypeError": lambda s: None,
        "give a function": 3,
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch13.check_3(answer)
    ch13.check_3(lambda s, w: (lambda b, h, q, kv: torch.logical_and(kv <= q, torch.logical_or(kv < s, q - kv < w))))
    ch13.check_3(lambda s, w: (lambda b, h, q, kv: torch.where(kv < s, kv <= q, (q - kv >= 0) & (q - kv < w))))


# --- the Japanese edition: the same checks and explorer speak Japanese ---

def test_the_checks_give_their_hints_in_japanese():
    with speaking("ja"):
        for hint, answer in {"^window_size\\[0\\] を、クエリ自身を含めたキーの数として読んでいる。": (4, 3),
                             "^クエリ自身が抜けている。": (4, 2), "^位置は 0 から数える。": (5, 2),
                             "^クエリ 1 つにつき 1 つ、int のタプルで答えること。渡されたのは int である$": 5,
                             "全部で 2 個答えること$": (5,)}.items():
            with pytest.raises(Mistake, match=hint):
                ch13.check_1(answer, 4, (10, 2))
        right = ch13.chunk_mask(3, 5, 4)
        top_left = ~torch.ones(3, 8, dtype=torch.bool).tril() | (torch.arange(3)[:, None] - torch.arange(8) >= 4)
        for hint, answer in {"^極性が逆である。True は遮断を意味": ~right, "^左上に揃えている。": top_left,
                             "^ウィンドウが抜けている。": ch13.chunk_mask(3, 5),
                             "渡された形状は \\(8, 8\\) である$": ch13.window_mask(8, 4)}.items():
            with pytest.raises(Mistake, match=hint):
                ch13.check_2(answer, 3, 5, 4)
        for hint, answer in {
            "^極性が逆である。mask_mod では True が「参照してよい」":
                lambda s, w: (lambda b, h, q, kv: ~((kv <= q) & ((kv < s) | (q - kv < w)))),
            "^q_idx と kv_idx はテンソルである。": lambda s, w: (lambda b, h, q, kv: (kv <= q) and (q - kv < w)),
            "^sinks と width が入れ替わっている。":
                lambda s, w: (lambda b, h, q, kv: (kv <= q) & ((kv < w) | (q - kv < s))),
            "^sinks=2、width=2 のとき、自分より後のシンクを見るクエリがある。":
                lambda s, w: (lambda b, h, q, kv: (kv < s) | ((kv <= q) & (q - kv < w))),
            "^\\(sinks=1, width=3\\) で呼んだとき、書いた関数で TypeError が発生した（": lambda s: None,
        }.items():
            with pytest.raises(Mistake, match=hint):
                ch13.check_3(answer)
    with pytest.raises(Mistake, match="^called with \\(sinks=1, width=3\\), your function raised TypeError"):
        ch13.check_3(lambda s: None)                                     # English again after the block


def test_the_explorer_summary_in_japanese_and_english_unchanged():
    english = ch13.mask_view().summary
    with speaking("ja"):
        summary = ch13.mask_view().summary
        assert summary.startswith("ウィンドウ 3（キーの数、自分自身を含む）、プレフィックス 0、シンク 0："
                                  "クエリ 9 は 1 層で 3 個のキーを見て、2 層で 5 個の位置に届く（= 2·(3−1)+1）。")
        assert "）は一致する。マスク全体を 1 つの mask_mod で書くと同じマスクになる。" in summary
        assert summary.endswith("最後のチャンクは 2 × 10 で、左上揃えにすると 9 個のセルを誤る")
        assert "1 層で 5 個のキーを見て、2 層で 7 個の位置に届く。" in ch13.mask_view(sinks=2).summary   # no formula
        box = ch13.mask_explorer()
        box.controls["width"].value = 4
        assert "2 層で 7 個の位置に届く（= 2·(4−1)+1）" in box.summary.value
    assert english == ch13.mask_view().summary and english.startswith("window 3 (keys, itself included)")


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    accepts_every_form(ch13.check_1, (5, 3), 4, (10, 2))              # np.array([5, 3]) was refused
    ch13.check_1.solution(np.array([5.0, 3.0]), 4, (10, 2))           # whole floats are counts too
    right = ch13.chunk_mask(3, 5, 4)
    accepts_every_form(ch13.check_2, right, 3, 5, 4)
    refuses_the_wrong_kind(ch13.check_1, 5, "an int", "int", 4, (10, 2))
    refuses_the_wrong_kind(ch13.check_1, np.array([5.5, 3.0]), "a numpy float64 array of shape (2,)",
                           "numpy の float64 配列（形状 (2,)）", 4, (10, 2))
    refuses_the_wrong_kind(ch13.check_2, right.int(), "a torch.int32 tensor of shape (3, 8)",
                           "torch.int32 のテンソル（形状 (3, 8)）", 3, 5, 4)


def test_step_1s_table_rows_are_said_in_the_current_language():
    name = "flash-attn window_size=(w, 0), causal=True"
    assert ch13.spelling_line(3, name, 4) == f"w = 3: {name:<48} query 4 sees 4 keys"
    with speaking("ja"):
        line = ch13.spelling_line(3, "mask_mod q_idx - kv_idx < w (chapter 10)", 3)
        assert line.startswith("w = 3：mask_mod の q_idx - kv_idx < w（第 10 章）")
        assert line.endswith("クエリ 4 が見るキーは 3 個")
        lines = [ch13.spelling_line(3, s, 3) for s in ch13.SPELLINGS_JA]
        assert len({width(line[:line.index("クエリ")]) for line in lines}) == 1   # the last column lines up
    with pytest.raises(ValueError, match="spelling must be one of"):
        ch13.spelling_line(3, "a window", 3)
