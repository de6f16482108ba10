"""Training both classifiers (in two threads), predictions and accuracies."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F

from helpers.chapters.ch08_a_trained_classifier.data import (
    MAX_LEN,
    PAD_ID,
    POSITIVE,
    Example,
    encode,
    make_dataset,
)
from helpers.chapters.ch08_a_trained_classifier.model import Classifier
from helpers.training import Adam, deterministic


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

