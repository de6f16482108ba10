"""The data: a synthetic Japanese sentiment task, its grammar, and the encodings."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

import torch

from helpers.language import say

NOUNS = ("犬", "猫", "鳥", "魚", "馬")                # dog, cat, bird, fish, horse
GLOSS = {"犬": "dog", "猫": "cat", "鳥": "bird", "魚": "fish", "馬": "horse", "と": "and", "が": "(subject)",
         "とても": "very", "好き": "like", "嫌い": "dislike", "じゃない": "not", "けど": "but"}
SPECIALS = ("<unk>", "<pad>", "<cls>")
VOCAB = {token: i for i, token in enumerate(SPECIALS + tuple(GLOSS))}
PAD_ID = VOCAB["<pad>"]
MAX_LEN = 20      # the longest sentence, <cls> included
POSITIVE = 1      # the label, and the logit's index, of a positive sentence (0: negative)


class Example(NamedTuple):
    tokens: tuple[str, ...]   # starts with <cls>
    label: int                # 1 = positive, 0 = negative


def clause(rng: random.Random) -> tuple[list[str], int]:
    """One clause, e.g. 犬 と 猫 が とても 好き じゃない ('not very fond of dogs and cats'), and its feeling."""
    nouns = rng.sample(NOUNS, rng.randint(1, 3))
    words = [w for noun in nouns for w in ("と", noun)][1:] + ["が"]
    if rng.random() < 0.5:
        words.append("とても")
    liked = rng.random() < 0.5
    words.append("好き" if liked else "嫌い")
    negated = rng.random() < 0.5
    if negated:
        words.append("じゃない")
    return words, int(liked != negated)


def make_example(rng: random.Random, two_clauses: bool) -> tuple[Example, Example | None]:
    """A sentence <cls> clause [けど clause]; its label is the feeling of the LAST clause.

    For two clauses, also returns the twin: the same clauses in the other order (same words, maybe another label).
    """
    words_1, feeling_1 = clause(rng)
    if not two_clauses:
        return Example(("<cls>", *words_1), feeling_1), None
    words_2, feeling_2 = clause(rng)
    return (Example(("<cls>", *words_1, "けど", *words_2), feeling_2),
            Example(("<cls>", *words_2, "けど", *words_1), feeling_1))


def make_dataset(n: int, seed: int, twins: bool = False) -> list[Example]:
    """n sentences (half with two clauses), seeded. twins=True: every two-clause sentence comes with its twin."""
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    rng = random.Random(seed)
    examples: list[Example] = []
    while len(examples) < n:
        example, twin = make_example(rng, two_clauses=len(examples) % 4 >= 2)
        examples.append(example)
        if twins and twin is not None and len(examples) < n:
            examples.append(twin)
    return examples


def label_of(tokens: Sequence[str]) -> int:
    """The task's rule, read off the tokens: the feeling (好き 1, 嫌い 0) of the last clause, flipped by じゃない."""
    feelings = [i for i, t in enumerate(tokens) if t in ("好き", "嫌い")]
    if not feelings:
        raise ValueError(f"tokens must hold 好き or 嫌い (a feeling), got {' '.join(tokens)!r}")
    last = feelings[-1]
    negated = last + 1 < len(tokens) and tokens[last + 1] == "じゃない"
    return int((tokens[last] == "好き") != negated)


NOUN_SET = frozenset(NOUNS)


def _clause_problem(words: Sequence[str]) -> str | None:
    """Why words is not a clause noun (と noun)* が [とても] 好き|嫌い [じゃない], or None if it is one."""
    if not words:
        return say("a clause is empty (けど at the start or the end?)", "節が空である（文頭か文末に「けど」がある？）")
    i = 0
    while True:
        if i >= len(words) or words[i] not in NOUN_SET:
            text = " ".join(words)
            return say(f"a clause must start with a noun, and と must be followed by a noun: {text!r}",
                       f"節は名詞で始まり、「と」の後には名詞が続かなければならない：{text!r}")
        i += 1
        if i < len(words) and words[i] == "と":
            i += 1
            continue
        break
    rest = list(words[i:])
    if rest[:1] != ["が"]:
        return say(f"the nouns of a clause are followed by が: {' '.join(words)!r}",
                   f"節の名詞の後には「が」が続く：{' '.join(words)!r}")
    rest = rest[1:]
    if rest[:1] == ["とても"]:
        rest = rest[1:]
    if rest[:1] not in (["好き"], ["嫌い"]):
        return say(f"after が (and an optional とても) comes 好き or 嫌い: {' '.join(words)!r}",
                   f"「が」（と、省略できる「とても」）の後には「好き」か「嫌い」が来る：{' '.join(words)!r}")
    if rest[1:] not in ([], ["じゃない"]):
        return say(f"a clause ends with 好き or 嫌い, or with じゃない after it: {' '.join(words)!r}",
                   f"節は「好き」か「嫌い」で終わるか、その後の「じゃない」で終わる：{' '.join(words)!r}")
    return None


def grammar_problem(tokens: Sequence[str]) -> str | None:
    """Why tokens is not a sentence of the task (<cls>, then one clause, or two joined by けど), or None; in the
    current language (exercise 1's hint shows it)."""
    if list(tokens[:1]) != ["<cls>"]:
        return say("a sentence starts with '<cls>'", "文は '<cls>' で始まる")
    words = list(tokens[1:])
    if words.count("けど") > 1:
        return say("at most one けど: a sentence has one or two clauses",
                   "「けど」は 1 つまで。文の節は 1 つか 2 つである")
    if "けど" in words:
        cut = words.index("けど")
        clauses = [words[:cut], words[cut + 1:]]
    else:
        clauses = [words]
    for words_of_clause in clauses:
        problem = _clause_problem(words_of_clause)
        if problem is not None:
            return problem
    return None


def encode(sentences: Sequence[Sequence[str]], pad_to: int | None = None) -> torch.Tensor:
    """Token ids (N, S), right-padded with <pad> to pad_to (default: the longest sentence)."""
    longest = max(len(s) for s in sentences)
    S = longest if pad_to is None else pad_to
    if S < longest:
        raise ValueError(f"pad_to must be >= the longest sentence ({longest} tokens), got {pad_to}")
    unknown = sorted({t for s in sentences for t in s if t not in VOCAB})
    if unknown:
        raise ValueError(f"unknown token(s) {unknown}; the vocabulary is {list(VOCAB)}")
    return torch.tensor([[VOCAB[t] for t in s] + [PAD_ID] * (S - len(s)) for s in sentences])


def bag_of_words(sentences: Sequence[Sequence[str]]) -> torch.Tensor:
    """Word counts (N, V): what a bag-of-words model sees. Order is gone."""
    counts = torch.zeros(len(sentences), len(VOCAB))
    for i, s in enumerate(sentences):
        for t in s:
            counts[i, VOCAB[t]] += 1
    return counts

