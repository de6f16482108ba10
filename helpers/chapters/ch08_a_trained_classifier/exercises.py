"""Chapter 8's exercise checks: each computes the expected answer from the problem's data (the sentence, the
trained models, the test set) and raises Mistake with a hint that names the likely mistake, never the answer."""

from __future__ import annotations

from collections.abc import Sequence

from helpers.chapters.ch08_a_trained_classifier.data import Example, grammar_problem, label_of
from helpers.chapters.ch08_a_trained_classifier.model import Classifier
from helpers.chapters.ch08_a_trained_classifier.training import accuracy_at, flipped_lengths
from helpers.exercises import Mistake, as_int, as_numbers, exercise, wrong_kind

GRAMMAR = ("a sentence is '<cls>', then one clause or two joined by けど; a clause is "
           "noun (と noun)* が [とても] 好き|嫌い [じゃない]")
GRAMMAR_JA = ("文は '<cls>' の後に節が 1 つ、または「けど」でつないだ 2 つの節が続く。節は "
              "名詞 (と 名詞)* が [とても] 好き|嫌い [じゃない]")


def _model(model: object, name: str) -> Classifier:
    if not isinstance(model, Classifier):
        raise TypeError(f"{name} must be a trained ch08.Classifier, got {type(model).__name__}")
    return model


def _sentence(tokens: object, name: str) -> list[str]:
    if not isinstance(tokens, list | tuple) or not all(isinstance(t, str) for t in tokens) \
            or grammar_problem(tokens) is not None:
        raise ValueError(f"{name} must be a sentence of the task (a list of tokens starting with '<cls>'), "
                         f"got {tokens!r}")
    return list(tokens)


@exercise
def check_1(answer: object, sentence: Sequence[str]) -> None:
    """Exercise 1: a sentence with exactly the words of `sentence` and the opposite label."""
    sentence = _sentence(sentence, "sentence")
    if not isinstance(answer, list | tuple) or not all(isinstance(t, str) for t in answer):
        raise Mistake("give a list of tokens (strings), starting with '<cls>'",
                      "'<cls>' で始まるトークン（文字列）のリストを渡すこと")
    answer = list(answer)
    if answer[:1] != ["<cls>"]:
        raise Mistake("a sentence of the task starts with '<cls>'", "課題の文は '<cls>' で始まる")
    if sorted(answer) != sorted(sentence):
        raise Mistake("use exactly the same words as sentence_1, each as often: only their order may change",
                      "sentence_1 とまったく同じ単語を、同じ回数ずつ使うこと。変えてよいのは順序だけである")
    problem = grammar_problem(answer)
    if problem is not None:
        raise Mistake(f"not a sentence of the task: {problem}. ({GRAMMAR})",
                      f"課題の文になっていない。{problem}（{GRAMMAR_JA}）")
    if label_of(answer) == label_of(sentence):
        raise Mistake("the label did not flip: the feeling of the LAST clause decides it, and yours is still "
                      "sentence_1's",
                      "ラベルが反転していない。ラベルを決めるのは最後の節の感情であり、書いた文では"
                      "それがまだ sentence_1 と同じである")


@exercise
def check_2(answer: object, unmasked_model: Classifier, sentence: Sequence[str], reference: int = 20) -> None:
    """Exercise 2: at how many pad lengths, from the sentence's own length to 48, does the unmasked model's
    prediction differ from its prediction at `reference` (20)?"""
    model, sentence = _model(unmasked_model, "unmasked_model"), _sentence(sentence, "sentence")
    lengths = range(len(sentence), 49)
    flipped = flipped_lengths(model, sentence, lengths, reference=reference)
    answer = as_int(answer, Mistake("give a count, an int", "個数を int で渡すこと"))
    if answer == len(flipped):
        return
    if answer == len(lengths) - len(flipped):
        raise Mistake(f"that counts the lengths whose prediction AGREES with the one at {reference}",
                      f"それは予測が長さ {reference} のときと一致する長さを数えている")
    if answer == len([P for P in flipped if P > len(sentence)]):
        raise Mistake("start at the sentence's own length: no pad at all counts too",
                      "文そのものの長さから数え始めること。パッドがまったくない場合も数に入る")
    if answer == 0:
        raise Mistake("0 is what the masked model gives; the question is about unmasked_model",
                      "0 はマスクありのモデルの答えである。問われているのは unmasked_model である")
    raise Mistake(f"count the pad lengths P from len(sentence_2) to 48 (both included) whose prediction "
                  f"differs from the one at {reference}, with ch08.predict(unmasked_model, [sentence_2], pad_to=P)",
                  f"len(sentence_2) から 48 まで（両端を含む）のパディング長 P のうち、予測が長さ {reference} の"
                  "ときと異なるものを、ch08.predict(unmasked_model, [sentence_2], pad_to=P) で数えること")


@exercise
def check_3(answer: object, masked_model: Classifier, test_set: Sequence[Example],
            unmasked_model: Classifier | None = None) -> None:
    """Exercise 3: the masked model's test accuracy WITHOUT its mask, padded to 20 and to 32, rounded to 2 decimals."""
    model = _model(masked_model, "masked_model")
    if not isinstance(test_set, Sequence) or not all(isinstance(e, Example) for e in test_set):
        raise TypeError(f"test_set must be a list of ch08.Example, got {type(test_set).__name__}")
    pair = Mistake("answer_3 must be a pair of numbers (accuracy at 20, accuracy at 32), e.g. (0.5, 0.5)",
                   "answer_3 は 2 つの数の組（長さ 20 での正解率、長さ 32 での正解率）、たとえば (0.5, 0.5) に"
                   "すること")
    accuracies = as_numbers(answer, pair)
    if len(accuracies) != 2:
        raise wrong_kind(pair, answer)
    answer = accuracies

    def near(accuracies: Sequence[float]) -> bool:
        # rounded to 2 decimals: within 0.005, plus a little for a float32 mean that sits on a half (0.655)
        return all(abs(a - e) <= 0.006 for a, e in zip(answer, accuracies, strict=True))

    lengths = (20, 32)
    right = [accuracy_at(model, test_set, P, key_mask=False) for P in lengths]
    if near(right):
        return
    if any(a > 1 for a in answer):
        raise Mistake("give each accuracy as a fraction between 0 and 1, not a percentage or a count",
                      "正解率はそれぞれ 0 から 1 の間の割合で渡すこと。百分率や個数ではない")
    if near(right[::-1]):
        raise Mistake("the two accuracies are in the wrong order: first the one padded to 20, then the one padded "
                      "to 32",
                      "2 つの正解率の順序が逆である。先に長さ 20 までパディングしたときの正解率、次に長さ 32 の"
                      "ときの正解率を並べること")
    if near([1 - a for a in right]):
        raise Mistake("those are error rates (the share of wrong predictions): give the share of predictions that "
                      "match the labels",
                      "それは誤り率（予測が外れた割合）である。予測がラベルと一致した割合を渡すこと")
    if near([accuracy_at(model, test_set, P, key_mask=True) for P in lengths]):
        raise Mistake("those are the accuracies WITH the mask: pass mask=torch.ones_like(ids_P, dtype=torch.bool), "
                      "so that every key is visible",
                      "それはマスクありで実行したときの正解率である。すべてのキーが見えるように "
                      "mask=torch.ones_like(ids_P, dtype=torch.bool) を渡すこと")
    if unmasked_model is not None:
        other = _model(unmasked_model, "unmasked_model")
        if any(near([accuracy_at(other, test_set, P, key_mask=k) for P in lengths]) for k in (None, False)):
            raise Mistake("those are the unmasked model's accuracies; the exercise runs masked_model without its mask",
                          "それはマスクなしのモデルの正解率である。"
                          "この確認問題では masked_model をマスクなしで実行する")
    raise Mistake("run masked_model on the whole test set padded to 20, then to 32, each time with an all-True "
                  "mask, and compare the argmax of the logits with the labels",
                  "テストセット全体を長さ 20、次に 32 までパディングし、どちらもすべて True のマスクで masked_model "
                  "を実行して、ロジットの argmax をラベルと比べること")
