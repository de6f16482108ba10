"""Chapter 8 (helpers.chapters.ch08_a_trained_classifier): the synthetic task, the book-style classifier, its
training and its explorer."""

import numpy as np
import pytest
import torch

from helpers import chapters
from helpers.chapters import ch08_a_trained_classifier as ch08
from helpers.exercises import Mistake
from helpers.explorer import REFUSED, REFUSED_JA, view_html
from helpers.language import speaking
from tests.chapters import accepts_every_form, refuses_the_wrong_kind


def test_label_rule_and_twins():
    assert ch08.label_of(["<cls>", "犬", "が", "好き"]) == 1
    assert ch08.label_of(["<cls>", "犬", "が", "好き", "じゃない"]) == 0
    assert ch08.label_of(["<cls>", "犬", "が", "嫌い", "じゃない", "けど", "猫", "が", "嫌い"]) == 0
    with pytest.raises(ValueError, match="must hold 好き or 嫌い"):
        ch08.label_of(["<cls>", "犬"])
    train_set, test_set = ch08.datasets()
    assert len(train_set) == ch08.TRAIN_SIZE and len(test_set) == ch08.TEST_SIZE
    assert all(e.tokens[0] == "<cls>" and ch08.label_of(e.tokens) == e.label for e in train_set + test_set)
    assert {len(e.tokens) for e in train_set} == set(range(4, ch08.MAX_LEN + 1))
    # the test set's twins: same bag of words, and some of them with opposite labels
    bags = ch08.bag_of_words([e.tokens for e in test_set])
    twins = [i for i in range(len(test_set) - 1)
             if torch.equal(bags[i], bags[i + 1]) and test_set[i].tokens != test_set[i + 1].tokens]
    assert len(twins) > 50 and any(test_set[i].label != test_set[i + 1].label for i in twins)
    assert ch08.make_dataset(10, 3) == ch08.make_dataset(10, 3)        # seeded


def test_encode_pads_right_and_refuses_bad_input():
    ids = ch08.encode([["<cls>", "犬"], ["<cls>", "猫", "が"]], pad_to=5)
    assert ids.tolist() == [[2, 3, 1, 1, 1], [2, 4, 9, 1, 1]]          # <cls> = 2, <pad> = 1, right padding
    with pytest.raises(ValueError, match="pad_to must be >= the longest sentence"):
        ch08.encode([["<cls>", "犬", "が"]], pad_to=2)
    with pytest.raises(ValueError, match="unknown token"):
        ch08.encode([["<cls>", "dog"]])


def test_attention_pad_rows_policies():
    torch.manual_seed(0)
    attn = ch08.Attention(8)
    x = torch.randn(2, 5, 8)
    mask = torch.tensor([[True, True, True, False, False], [True] * 5])
    outs = {p: attn(x, mask, p) for p in ch08.PAD_ROWS}
    real = mask
    for p in ("uniform", "zero"):
        assert torch.equal(outs[p][0][real], outs["leave"][0][real])             # real rows: unchanged
    assert (outs["leave"][1][:, :, 3:][0] == 0).all()                            # pad key columns: 0
    assert (outs["uniform"][1][0, 3:] == 0.2).all() and (outs["zero"][1][0, 3:] == 0).all()
    with pytest.raises(ValueError, match="pad_rows must be one of"):
        ch08.Classifier()(torch.ones(1, 3, dtype=torch.long), pad_rows="drop")


def test_training_is_deterministic_and_restores_settings():
    threads, flag = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    a = ch08.train(True, epochs=1)
    b = ch08.train(True, epochs=1)
    assert a.history == b.history
    assert all(torch.equal(p, q) for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values(),
                                                  strict=True))
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == (threads, flag)
    assert len(a.history.step_loss) == -(-ch08.TRAIN_SIZE // ch08.BATCH)


@pytest.mark.slow   # trains twice (~5 s): in make test, not in make unit
def test_training_both_at_once_gives_the_same_numbers():
    """train_both runs the two trainings in two threads: the same models and histories as one after the other.
    trained_pair() trains through train_both on its first call, then caches the pair for the tests below."""
    threads, flag = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    both = ch08.trained_pair()
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == (threads, flag)
    for masked, run in zip((True, False), both, strict=True):
        alone = ch08.train(masked)
        assert run.history == alone.history and run.model.masked == masked
        assert all(torch.equal(p, q) for p, q in zip(run.model.state_dict().values(),
                                                      alone.model.state_dict().values(), strict=True))


def test_trained_models_masked_invariant_unmasked_not():
    masked, unmasked = ch08.trained(True), ch08.trained(False)
    assert ch08.trained(True) is masked                                    # cached: trained once
    assert masked.history.test_acc[-1] >= 0.98 and unmasked.history.test_acc[-1] >= 0.95
    sentences = [e.tokens for e in ch08.datasets()[1][:60]]
    p20 = ch08.predict(masked.model, sentences, 20)
    assert torch.equal(ch08.predict(masked.model, sentences, 32), p20)
    alone = ch08.predict_padded(masked.model, sentences, 0)
    assert torch.equal(alone > 0.5, p20 > 0.5) and (alone - p20).abs().max() < 1e-5
    u20 = ch08.predict(unmasked.model, sentences, 20)
    assert (ch08.predict(unmasked.model, sentences, 48) - u20).abs().max() > 0.01


def test_classifier_view_and_explorer():
    view = ch08.classifier_view(ch08.SENTENCES[1], pad_to=12, mask="as trained")
    panel = view.panels[0]
    assert panel.matrix.shape == (4, 12) and list(panel.cols[:5]) == ["<cls>", "猫", "が", "嫌い", "じゃない"]
    assert panel.masked[:2, 5:].all() and not panel.masked[2:].any()             # masked model: pads hatched
    assert (panel.matrix[:2, 5:] == 0).all() and (panel.matrix[2:, 5:] > 0).all()
    assert view.summary.startswith("pad to 12, mask as trained: masked model (with mask): positive")
    assert "True label: positive" in view.summary and view_html(view).count('class="masked"') == 14
    off = ch08.classifier_view(ch08.SENTENCES[1], pad_to=12, mask="off for both")
    assert not off.panels[0].masked.any() and "masked model (without mask)" in off.summary
    with pytest.raises(ValueError, match="pad it to a length from 5 to 32"):
        ch08.classifier_view(ch08.SENTENCES[1], pad_to=4)
    with pytest.raises(ValueError, match="mask must be one of"):
        ch08.classifier_view(mask="sometimes")

    box = ch08.classifier_explorer()
    assert chapters.explorers("08") == (ch08.classifier_explorer,)
    controls = {c.description: c for c in box.controls.values()}
    assert set(controls) == {"sentence", "pad to", "mask"}
    before = box.summary.value
    controls["pad to"].value = 24
    assert box.summary.value != before and box.summary.value.startswith("pad to 24, mask as trained")
    controls["sentence"].value = ch08.SENTENCES[7]
    controls["pad to"].value = 10
    assert box.summary.value.startswith(REFUSED) and box.tables.value == ""


def test_highlight_html_escapes_and_shades():
    html = ch08.highlight_html(["<cls>", "犬"], torch.tensor([1.0, 0.0]), title="a & b")
    assert "&lt;cls&gt;" in html and "a &amp; b" in html
    assert "rgb(255,0,0)" in html and "rgb(255,255,255)" in html


SENTENCE_1 = ["<cls>", "猫", "が", "好き", "けど", "鳥", "が", "とても", "嫌い"]


def test_check_1_accepts_the_swapped_clauses_and_names_each_mistake():
    ch08.check_1.solution(["<cls>", "鳥", "が", "とても", "嫌い", "けど", "猫", "が", "好き"], SENTENCE_1)
    wrong = {
        "list of tokens": "<cls> 鳥 が とても 嫌い けど 猫 が 好き",
        "starts with '<cls>'": SENTENCE_1[1:] + ["<cls>"],
        "exactly the same words": ["<cls>", "鳥", "が", "とても", "好き", "けど", "猫", "が", "好き"],
        "not a sentence of the task": ["<cls>", "猫", "が", "好き", "鳥", "が", "とても", "嫌い", "けど"],
        "LAST clause": ["<cls>", "鳥", "が", "好き", "けど", "猫", "が", "とても", "嫌い"],
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch08.check_1(answer, SENTENCE_1)


def test_check_2_counts_the_flips_and_names_each_mistake():
    unmasked = ch08.trained(False).model
    sentence = ch08.datasets()[1][50].tokens
    flipped = ch08.flipped_lengths(unmasked, sentence, range(len(sentence), 49), reference=20)
    assert len(sentence) in flipped and 0 < len(flipped) < 39 - len(flipped)   # the hints below can be told apart
    ch08.check_2.solution(len(flipped), unmasked, sentence)
    wrong = {"an int": len(flipped) + 0.5, "AGREES": 39 - len(flipped), "own length": len(flipped) - 1,
             "masked model gives": 0, "both included": len(flipped) + 5}
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch08.check_2(answer, unmasked, sentence)


def test_check_3_accepts_the_accuracies_without_the_mask_and_names_each_mistake():
    masked, unmasked = ch08.trained(True).model, ch08.trained(False).model
    test_set = ch08.datasets()[1]
    without = [ch08.accuracy_at(masked, test_set, P, key_mask=False) for P in (20, 32)]
    with_mask = [ch08.accuracy_at(masked, test_set, P, key_mask=True) for P in (20, 32)]
    other = [ch08.accuracy_at(unmasked, test_set, P) for P in (20, 32)]
    assert max(without) < 0.9 and min(with_mask) > 0.95 and abs(max(other) - max(with_mask)) > 0.005
    ch08.check_3.solution(tuple(round(a, 2) for a in without), masked, test_set, unmasked)
    wrong = {"pair of numbers": 0.66, "percentage": tuple(100 * a for a in without),
             "WITH the mask": tuple(round(a, 2) for a in with_mask),
             "unmasked model's": tuple(round(a, 2) for a in other), "all-True": (0.5, 0.5),
             "wrong order: first the one padded to 20": tuple(round(a, 2) for a in without[::-1]),
             "error rates": tuple(round(1 - a, 2) for a in without)}
    assert round(without[0], 2) != round(without[1], 2)      # else the swapped pair would be the right one
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch08.check_3(answer, masked, test_set, unmasked)


# --- the Japanese edition ---

def test_the_japanese_edition_reads_a_japanese_explorer():
    with speaking("ja"):
        view = ch08.classifier_view(ch08.SENTENCES[1], pad_to=12, mask="as trained")
        assert view.summary.startswith("長さ 12 までパディング、マスクは学習時のまま。"
                                       "マスクありのモデル（推論時はマスクあり）は肯定")
        assert view.summary.endswith("。正解ラベル：肯定") and "肯定の確率 1.00" in view.summary
        assert "マスクなしのモデル（推論時はマスクなし）" in ch08.classifier_view(
            ch08.SENTENCES[1], pad_to=12, mask="off for both").summary
        assert ch08.sentence_label(ch08.SENTENCES[1]) == "猫 が 嫌い じゃない（肯定）"     # no English gloss
        with pytest.raises(ValueError, match="パディングする長さは 5 から 32 までで、4 にはできない"):
            ch08.classifier_view(ch08.SENTENCES[1], pad_to=4)
        box = ch08.classifier_explorer()
        controls = {c.description: c for c in box.controls.values()}
        assert set(controls) == {"文", "長さ", "マスク"}
        assert controls["マスク"].options == (("学習時のまま", "as trained"), ("両方でオン", "on for both"),
                                           ("両方でオフ", "off for both")) or list(controls["マスク"]._options_labels) \
            == ["学習時のまま", "両方でオン", "両方でオフ"]
        controls["文"].value = ch08.SENTENCES[7]
        controls["長さ"].value = 10
        assert box.summary.value.startswith(REFUSED_JA + "この文は &lt;cls&gt; を含めて 19 トークンある")
    assert ch08.classifier_view(ch08.SENTENCES[1], pad_to=12).summary.startswith("pad to 12, mask as trained")


def test_the_japanese_edition_hears_japanese_hints():
    masked, unmasked = ch08.trained(True).model, ch08.trained(False).model
    sentence = ch08.datasets()[1][50].tokens
    flipped = ch08.flipped_lengths(unmasked, sentence, range(len(sentence), 49), reference=20)
    test_set = ch08.datasets()[1]
    with_mask = [ch08.accuracy_at(masked, test_set, P, key_mask=True) for P in (20, 32)]
    other = [ch08.accuracy_at(unmasked, test_set, P) for P in (20, 32)]
    wrong_1 = {
        "トークン（文字列）のリスト": "<cls> 鳥 が とても 嫌い けど 猫 が 好き",
        "^課題の文は '<cls>' で始まる$": SENTENCE_1[1:] + ["<cls>"],
        "同じ回数ずつ": ["<cls>", "鳥", "が", "とても", "好き", "けど", "猫", "が", "好き"],
        r"^課題の文になっていない。節は「好き」か「嫌い」で終わるか、その後の「じゃない」で終わる：'猫 が 好き 鳥 が "
        r"とても 嫌い'（文は '<cls>' の後に":
            ["<cls>", "猫", "が", "好き", "鳥", "が", "とても", "嫌い", "けど"],
        "最後の節の感情": ["<cls>", "鳥", "が", "好き", "けど", "猫", "が", "とても", "嫌い"],
    }
    wrong_2 = {"個数を int で": len(flipped) + 0.5, "一致する": 39 - len(flipped),
               "文そのものの長さ": len(flipped) - 1, "マスクありのモデルの答え": 0, "両端を含む": len(flipped) + 5}
    wrong_3 = {"2 つの数の組": 0.66, "百分率": (66.0, 70.0),
               "マスクありで実行したときの正解率": tuple(round(a, 2) for a in with_mask),
               "マスクなしのモデルの正解率": tuple(round(a, 2) for a in other), "すべて True のマスク": (0.5, 0.5),
               "^2 つの正解率の順序が逆である。": (0.66, 0.65), "^それは誤り率（予測が外れた割合）である": (0.35, 0.34)}
    with speaking("ja"):
        for hint, answer in wrong_1.items():
            with pytest.raises(Mistake, match=hint):
                ch08.check_1(answer, SENTENCE_1)
        for hint, answer in wrong_2.items():
            with pytest.raises(Mistake, match=hint):
                ch08.check_2(answer, unmasked, sentence)
        for hint, answer in wrong_3.items():
            with pytest.raises(Mistake, match=hint):
                ch08.check_3(answer, masked, test_set, unmasked)


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    masked, unmasked = ch08.trained(True).model, ch08.trained(False).model
    sentence = ch08.datasets()[1][50].tokens
    flipped = ch08.flipped_lengths(unmasked, sentence, range(len(sentence), 49), reference=20)
    accepts_every_form(ch08.check_2, len(flipped), unmasked, sentence)
    test_set = ch08.datasets()[1]
    without = tuple(round(ch08.accuracy_at(masked, test_set, P, key_mask=False), 2) for P in (20, 32))
    accepts_every_form(ch08.check_3, without, masked, test_set)
    refuses_the_wrong_kind(ch08.check_2, True, "a bool", "bool", unmasked, sentence)
    refuses_the_wrong_kind(ch08.check_2, str(len(flipped)), "a str", "str", unmasked, sentence)
    refuses_the_wrong_kind(ch08.check_3, (without[0], None), "a tuple of length 2 holding a NoneType",
                           "NoneType を含む tuple（長さ 2）", masked, test_set)
    refuses_the_wrong_kind(ch08.check_3, np.array(without * 2), "a numpy float64 array of shape (4,)",
                           "numpy の float64 配列（形状 (4,)）", masked, test_set)
