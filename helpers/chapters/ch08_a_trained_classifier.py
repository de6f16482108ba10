"""Chapter 8: a tiny copy of the book's Transformer classifier, a synthetic Japanese sentiment task, training, explorer.

The model follows the structure of the book's sentiment classifier (Ogawa, "つくりながら学ぶ! PyTorchによる発展
ディープラーニング", chapter 7, a public repository: YutaroOgawa/pytorch_advanced): embedding, sinusoidal positional
encoding (the embedding scaled by sqrt(d_model)), two pre-norm encoder blocks with a single-head attention that
masks with masked_fill(mask == 0, -1e9), a feed-forward net, and a linear head on position 0 (<cls>).
The code is our own. Differences: the embedding is learned (the book loads frozen word vectors), no dropout,
and a far smaller size (d_model 32, feed-forward 64).

The explorer (at the end): the two trained classifiers on one sentence, padded to a chosen length, with or
without the key mask: predictions, P(positive), and the <cls> row of each block's attention.
"""

from __future__ import annotations

import functools
import html
import math
import os
import random
from collections.abc import Callable, Sequence
from typing import NamedTuple

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn

from helpers.explorer import Explorer, Panel, View, explorer
from helpers.training import Adam, deterministic

# --- the data: synthetic Japanese sentiment ---

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
        return "a clause is empty (けど at the start or the end?)"
    i = 0
    while True:
        if i >= len(words) or words[i] not in NOUN_SET:
            return f"a clause must start with a noun, and と must be followed by a noun: {' '.join(words)!r}"
        i += 1
        if i < len(words) and words[i] == "と":
            i += 1
            continue
        break
    rest = list(words[i:])
    if rest[:1] != ["が"]:
        return f"the nouns of a clause are followed by が: {' '.join(words)!r}"
    rest = rest[1:]
    if rest[:1] == ["とても"]:
        rest = rest[1:]
    if rest[:1] not in (["好き"], ["嫌い"]):
        return f"after が (and an optional とても) comes 好き or 嫌い: {' '.join(words)!r}"
    if rest[1:] not in ([], ["じゃない"]):
        return f"a clause ends with 好き or 嫌い, or with じゃない after it: {' '.join(words)!r}"
    return None


def grammar_problem(tokens: Sequence[str]) -> str | None:
    """Why tokens is not a sentence of the task (<cls>, then one clause, or two joined by けど), or None."""
    if list(tokens[:1]) != ["<cls>"]:
        return "a sentence starts with '<cls>'"
    words = list(tokens[1:])
    if words.count("けど") > 1:
        return "at most one けど: a sentence has one or two clauses"
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


# --- the model: the book's structure, small ---

def positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """(max_len, d_model) sinusoids: sin at even features, cos at odd ones (Vaswani et al.)."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * frequency)
    pe[:, 1::2] = torch.cos(position * frequency)
    return pe


PAD_ROWS = ("leave", "uniform", "zero")  # what to do with the pad query rows (the pad key columns are masked)


class Attention(nn.Module):
    """Single-head attention as in the book: masked_fill(mask == 0, -1e9), softmax, weights @ v, out."""

    def __init__(self, d_model: int):
        super().__init__()
        self.q_linear, self.k_linear, self.v_linear = (nn.Linear(d_model, d_model) for _ in range(3))
        self.out = nn.Linear(d_model, d_model)
        self.d_k = d_model

    def forward(self, x: torch.Tensor, mask: torch.Tensor, pad_rows: str = "leave") -> tuple[torch.Tensor, ...]:
        """x (N, S, d), mask (N, S) bool, True = real token (the book's convention); returns (output, weights)."""
        q, k, v = self.q_linear(x), self.k_linear(x), self.v_linear(x)
        scores = q @ k.transpose(1, 2) / math.sqrt(self.d_k)          # (N, S, S)
        mask = mask.unsqueeze(1)                                      # (N, 1, S): every query row, the same keys
        if pad_rows == "uniform":
            mask = mask & mask.transpose(1, 2)                        # pad rows fully masked: 1/S each
        weights = F.softmax(scores.masked_fill(mask == 0, -1e9), dim=-1)
        if pad_rows == "zero":
            weights = weights * mask.transpose(1, 2)                  # pad rows set to 0 after softmax
        return self.out(weights @ v), weights


class Block(nn.Module):
    """The book's TransformerBlock (pre-norm): x + attn(norm(x)), then + ff(norm(.)). No dropout."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.norm_1, self.norm_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor, pad_rows: str = "leave") -> tuple[torch.Tensor, ...]:
        output, weights = self.attn(self.norm_1(x), mask, pad_rows)
        x = x + output
        return x + self.ff(self.norm_2(x)), weights


class Classifier(nn.Module):
    """Embedding * sqrt(d) + positions, 2 blocks, a linear head on position 0 (<cls>). Returns logits and weights."""

    def __init__(self, d_model: int = 32, d_ff: int = 64, max_len: int = 64, masked: bool = True):
        super().__init__()
        self.masked = masked          # False: the model never passes the mask (every key visible, pads too)
        self.d_model = d_model
        self.embed = nn.Embedding(len(VOCAB), d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)   # x sqrt(d) below: about 1, like the positions
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)
        self.blocks = nn.ModuleList([Block(d_model, d_ff), Block(d_model, d_ff)])
        self.head = nn.Linear(d_model, 2)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """(N, S) ids -> (N, S, d): embedding * sqrt(d) + positional encoding, as in the book."""
        if ids.shape[1] > self.pe.shape[0]:
            raise ValueError(f"ids has {ids.shape[1]} positions; this model encodes at most {self.pe.shape[0]}")
        return self.embed(ids) * math.sqrt(self.d_model) + self.pe[: ids.shape[1]]

    def forward(self, ids: torch.Tensor, *, x: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                pad_rows: str = "leave") -> tuple[torch.Tensor, list[torch.Tensor]]:
        """ids (N, S) -> logits (N, 2) and each block's weights (N, S, S).

        x: embeddings to use instead of embed_tokens(ids) (e.g. with junk at the pads).
        mask: override the key mask, bool (N, S), True = real (default: ids != <pad> if self.masked, else all True).
        """
        if pad_rows not in PAD_ROWS:
            raise ValueError(f"pad_rows must be one of {PAD_ROWS}, got {pad_rows!r}")
        if mask is None:
            mask = ids != PAD_ID if self.masked else torch.ones_like(ids, dtype=torch.bool)
        h = self.embed_tokens(ids) if x is None else x
        weights = []
        for block in self.blocks:
            h, w = block(h, mask, pad_rows)
            weights.append(w)
        return self.head(h[:, 0]), weights


# --- training ---

class History(NamedTuple):
    step_loss: list[float]    # training loss of every batch
    loss: list[float]         # mean training loss per epoch
    train_acc: list[float]    # accuracy on the epoch's training batches (while it learns)
    test_acc: list[float]     # accuracy on the test set after each epoch (padded as in training)


class Trained(NamedTuple):
    model: Classifier
    history: History


TRAIN_SIZE, TEST_SIZE = 1000, 400
SEED, EPOCHS, BATCH, LR = 2, 5, 32, 3e-3


@functools.cache
def datasets() -> tuple[list[Example], list[Example]]:
    """The chapter's train set (1000 sentences, seed 0) and test set (400, seed 1, two-clause sentences with twins)."""
    return make_dataset(TRAIN_SIZE, 0), make_dataset(TEST_SIZE, 1, twins=True)


def predict(model: Classifier, sentences: Sequence[Sequence[str]], pad_to: int | None = None) -> torch.Tensor:
    """P(positive) per sentence (N,), all padded to pad_to (default: the longest) in one batch."""
    with torch.no_grad():
        logits, _ = model(encode(sentences, pad_to))
    return logits.softmax(-1)[:, POSITIVE]


def predict_padded(model: Classifier, sentences: Sequence[Sequence[str]], pad_to: int) -> torch.Tensor:
    """P(positive) per sentence, each padded to max(its length, pad_to); pad_to=0: each sentence alone, unpadded.

    Sentences that end up with the same length run together in one batch.
    """
    lengths = [max(len(s), pad_to) for s in sentences]
    p = torch.empty(len(sentences))
    for n in sorted(set(lengths)):
        rows = [i for i, m in enumerate(lengths) if m == n]
        p[rows] = predict(model, [sentences[i] for i in rows], n)
    return p


def accuracy(model: Classifier, examples: Sequence[Example], pad_to: int | None = None) -> float:
    """Accuracy on examples, all padded to pad_to (default: the longest) in one batch."""
    p = predict(model, [e.tokens for e in examples], pad_to)
    return ((p > 0.5).long() == torch.tensor([e.label for e in examples])).float().mean().item()


def flipped_lengths(model: Classifier, sentence: Sequence[str], lengths: Sequence[int],
                    reference: int = MAX_LEN) -> list[int]:
    """The pad lengths among `lengths` at which the model's prediction for `sentence` (alone in its batch)
    differs from its prediction when the sentence is padded to `reference`."""
    if not isinstance(reference, int) or reference < len(sentence):
        raise ValueError(f"reference must be an int >= the sentence's length {len(sentence)}, got {reference!r}")
    at_reference = bool(predict(model, [sentence], reference) > 0.5)
    return [P for P in lengths if bool(predict(model, [sentence], P) > 0.5) != at_reference]


def accuracy_at(model: Classifier, examples: Sequence[Example], pad_to: int,
                key_mask: bool | None = None) -> float:
    """Accuracy on examples padded to pad_to in one batch. key_mask: None = as the model was trained,
    True = the book's key mask, False = every key visible (no mask)."""
    if key_mask is not None and not isinstance(key_mask, bool):
        raise TypeError(f"key_mask must be None, True or False, got {type(key_mask).__name__}")
    ids = encode([e.tokens for e in examples], pad_to)
    mask = None if key_mask is None else ids != PAD_ID if key_mask else torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        logits, _ = model(ids, mask=mask)
    return (logits.argmax(-1) == torch.tensor([e.label for e in examples])).float().mean().item()


def train(masked: bool, *, epochs: int = EPOCHS, seed: int = SEED, pad_to: int = MAX_LEN,
          progress: Callable[[], None] | None = None, report: Callable[[str], None] | None = None) -> Trained:
    """Train a Classifier: Adam (learning rate falling linearly to 0), cross-entropy on the <cls> logits,
    batches of 32 in a seeded order.

    masked=True: the book's key mask, each batch padded to its longest sentence.
    masked=False: no mask; every sentence padded to pad_to (MAX_LEN = 20), always the same length.
    progress() is called after every batch, report(line) once per epoch. Deterministic run to run.
    """
    with deterministic():
        torch.manual_seed(seed)
        model = Classifier(masked=masked)
        return _fit(model, epochs, seed, None if masked else pad_to, progress, report)


def _fit(model: Classifier, epochs: int, seed: int, pad_to: int | None,
         progress: Callable[[], None] | None, report: Callable[[str], None] | None) -> Trained:
    """train()'s loop; callers hold training.deterministic() around it. It uses no global random state (the
    batch order has its own generator), so two _fit calls can run at the same time in two threads and give
    what they give one after the other."""
    train_set, test_set = datasets()
    steps = epochs * math.ceil(len(train_set) / BATCH)
    history = History([], [], [], [])
    optimizer = Adam(model.parameters())
    order = torch.Generator().manual_seed(seed)
    for epoch in range(epochs):
        model.train()
        total, correct = 0.0, 0
        perm = torch.randperm(len(train_set), generator=order).tolist()
        for start in range(0, len(perm), BATCH):
            batch = [train_set[i] for i in perm[start:start + BATCH]]
            labels = torch.tensor([e.label for e in batch])
            logits, _ = model(encode([e.tokens for e in batch], pad_to))
            loss = F.cross_entropy(logits, labels)
            loss.backward()
            optimizer.step(lr=LR * (1 - optimizer.t / steps))
            history.step_loss.append(loss.item())
            total += loss.item() * len(batch)
            correct += int((logits.argmax(-1) == labels).sum())
            if progress is not None:
                progress()
        model.eval()
        history.loss.append(total / len(train_set))
        history.train_acc.append(correct / len(train_set))
        history.test_acc.append(accuracy(model, test_set, pad_to))
        if report is not None:
            report(epoch_line(history, epoch, epochs))
    model.requires_grad_(False)
    return Trained(model, history)


def epoch_line(history: History, epoch: int, epochs: int = EPOCHS) -> str:
    """One line of the training report: loss and accuracies after epoch `epoch` (0-based)."""
    return (f"epoch {epoch + 1}/{epochs}: loss {history.loss[epoch]:.2f}, train accuracy "
            f"{history.train_acc[epoch]:.2f}, test accuracy {history.test_acc[epoch]:.2f}")


def train_both(progress: Callable[[bool], None] | None = None) -> tuple[Trained, Trained]:
    """(masked, unmasked): train(True) and train(False), run at the same time in two threads.

    On two cores this takes about 60% of the time of one after the other: PyTorch releases Python's lock
    (the GIL) inside its operations, so the threads overlap. The numbers are the same, bit for bit
    (tests/chapters/test_ch08_a_trained_classifier.py): each thread runs train()'s computation on its own model.
    progress(masked) is called after every batch of that training.
    """
    from concurrent.futures import ThreadPoolExecutor

    with deterministic():
        models = {}
        for masked in (True, False):   # one after the other: parameter init draws from the global generator
            torch.manual_seed(SEED)
            models[masked] = Classifier(masked=masked)
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = {masked: pool.submit(_fit, model, EPOCHS, SEED, None if masked else MAX_LEN,
                                        functools.partial(progress, masked) if progress else None, None)
                    for masked, model in models.items()}
            return runs[True].result(), runs[False].result()


_TRAINED: dict[bool, Trained] = {}


def in_jupyterlab() -> bool:
    """True in a kernel started by a Jupyter server (JupyterLab, Notebook 7), which sets JPY_SESSION_NAME;
    False under nbval, nbclient and plain Python."""
    return "JPY_SESSION_NAME" in os.environ


def trained_pair(*, verbose: bool = False) -> tuple[Trained, Trained]:
    """The chapter's two models (masked, unmasked), trained at once on the first call (train_both), then reused.

    verbose=True (for the first call, in the notebook): each model's epochs, one line each, and in JupyterLab
    a tqdm progress bar per model.
    """
    if not _TRAINED:
        bars = {}
        if verbose and in_jupyterlab():
            from tqdm.notebook import tqdm  # a widget: only where a browser shows it, never in stored outputs

            bars = {m: tqdm(total=EPOCHS * math.ceil(TRAIN_SIZE / BATCH), desc="masked" if m else "unmasked")
                    for m in (True, False)}
        _TRAINED[True], _TRAINED[False] = train_both(lambda m: bars[m].update() if bars else None)
        for bar in bars.values():
            bar.close()
        if verbose:
            for m in (True, False):
                for epoch in range(EPOCHS):
                    print(f"{'masked' if m else 'unmasked':8}", epoch_line(_TRAINED[m].history, epoch))
    return _TRAINED[True], _TRAINED[False]


def trained(masked: bool) -> Trained:
    """The masked or the unmasked model of trained_pair()."""
    return trained_pair()[0 if masked else 1]


# --- the explorer ---

# Test sentences to pick from (without <cls>): short and long, negated or not, one clause or two.
SENTENCES = (
    "犬 が 好き",
    "猫 が 嫌い じゃない",
    "鳥 と 魚 が とても 好き じゃない",
    "馬 が 嫌い けど 犬 が 好き",
    "犬 が 好き けど 馬 が 嫌い",
    "魚 が とても 嫌い じゃない けど 鳥 と 猫 が 好き じゃない",
    "鳥 と 猫 が 好き じゃない けど 魚 が とても 嫌い じゃない",
    "犬 と 猫 と 鳥 が とても 好き じゃない けど 魚 と 馬 と 猫 が とても 嫌い",
)
MASK_MODES = ("as trained", "on for both", "off for both")  # the key mask at inference
PAD_MAX = 32


def sentence_label(sentence: str) -> str:
    """The dropdown's label: the sentence, its English gloss and its true label."""
    tokens = sentence.split()
    gloss = " ".join(GLOSS[t] for t in tokens)
    feeling = "positive" if label_of(tokens) == POSITIVE else "negative"
    return f"{sentence}  ({gloss}: {feeling})"


def _run(model: Classifier, tokens: list[str], pad_to: int, masked: bool) -> tuple[float, torch.Tensor]:
    """P(positive) and the <cls> rows (2, pad_to) of the two blocks, the mask on or off."""
    ids = encode([tokens], pad_to)
    mask = ids != PAD_ID if masked else torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad(), deterministic():  # one thread: 2 threads on a busy 2-core machine are 10x slower
        logits, weights = model(ids, mask=mask)
    return logits.softmax(-1)[0, POSITIVE].item(), torch.stack([w[0, 0] for w in weights])


@functools.cache
def _unpadded(sentence: str, masked_model: bool) -> float:
    """P(positive) of a trained model on the sentence alone (no pads), as trained: the reference."""
    tokens = ["<cls>", *sentence.split()]
    return _run(trained(masked_model).model, tokens, len(tokens), masked_model)[0]


def classifier_view(sentence: str = SENTENCES[1], pad_to: int = 20, mask: str = "as trained") -> View:
    """Both trained models on `sentence` padded to `pad_to`: one table of the <cls> attention rows, and a summary."""
    if mask not in MASK_MODES:
        raise ValueError(f"mask must be one of {list(MASK_MODES)}, got {mask!r}")
    tokens = ["<cls>", *sentence.split()]
    if not isinstance(pad_to, int) or not len(tokens) <= pad_to <= PAD_MAX:
        raise ValueError(f"this sentence has {len(tokens)} tokens with <cls>: pad it to a length from "
                         f"{len(tokens)} to {PAD_MAX}, not {pad_to}")
    label = label_of(tokens)
    cols = tokens + ["<pad>"] * (pad_to - len(tokens))
    pad = torch.tensor([c == "<pad>" for c in cols])
    rows, matrices, hidden, parts, alert = [], [], [], [], False
    for name, masked_model in (("masked", True), ("unmasked", False)):
        model = trained(masked_model).model
        use_mask = masked_model if mask == "as trained" else mask == "on for both"
        p, cls_rows = _run(model, tokens, pad_to, use_mask)
        p_alone = _unpadded(sentence, masked_model)
        verdict = "positive" if p > 0.5 else "negative"
        moved = (p > 0.5) != (p_alone > 0.5)
        alert |= (p > 0.5) != bool(label)
        parts.append(f"{name} model ({'with' if use_mask else 'without'} mask): {verdict}, P(positive) {p:.2f} "
                     f"({'CHANGED from' if moved else 'same as'} its unpadded {p_alone:.2f})")
        rows += [f"{name} · block 1", f"{name} · block 2"]
        matrices.append(cls_rows)
        hidden += [pad if use_mask else torch.zeros_like(pad)] * 2
    truth = "positive" if label else "negative"
    panel = Panel(torch.cat(matrices), rows, cols, masked=torch.stack(hidden), alert=alert,
                  title=f"<cls> attention, padded to {pad_to}, mask {mask}", xlabel="key", ylabel="")
    return View((panel,), f"pad to {pad_to}, mask {mask}: " + "; ".join(parts) + f". True label: {truth}",
                caption="each row: the <cls> query's weights over the keys    hatched: masked pad keys (weight 0)")


def classifier_explorer() -> Explorer:
    """Sentence, pad length and the mask at inference -> both trained models' predictions and <cls> attention."""
    controls = {
        "sentence": widgets.Dropdown(options=[(sentence_label(s), s) for s in SENTENCES], value=SENTENCES[1],
                                     description="sentence", layout=widgets.Layout(width="46em")),
        "pad_to": widgets.IntSlider(value=20, min=4, max=PAD_MAX, description="pad to"),
        "mask": widgets.ToggleButtons(options=MASK_MODES, value="as trained", description="mask"),
    }
    return explorer(controls, classifier_view)


def highlight_html(tokens: list[str], weights: torch.Tensor, title: str = "") -> str:
    """Tokens on a red background as dark as their weight (the book's attention highlight); the weight on hover.

    Unlike the book, the colour is not rescaled to the row's maximum: a weight of 0 is white, 1 full red.
    """
    spans = []
    for token, w in zip(tokens, weights.tolist(), strict=True):
        shade = int(255 * (1 - w))
        spans.append(f'<span title="{w:.3f}" style="background:rgb(255,{shade},{shade});padding:0 0.15em;'
                     f'margin-right:0.15em">{html.escape(token)}</span>')
    head = f"<b>{html.escape(title)}</b><br>" if title else ""
    return f'<div style="font-size:15px;line-height:1.8">{head}{"".join(spans)}</div>'


EXPLORERS = (classifier_explorer,)
