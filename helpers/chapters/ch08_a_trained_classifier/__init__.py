"""Chapter 8: a tiny copy of the book's Transformer classifier, a synthetic Japanese sentiment task, training, explorer.

The model follows the structure of the book's sentiment classifier (Ogawa, "つくりながら学ぶ! PyTorchによる発展
ディープラーニング", chapter 7, a public repository: YutaroOgawa/pytorch_advanced): embedding, sinusoidal positional
encoding (the embedding scaled by sqrt(d_model)), two pre-norm encoder blocks with a single-head attention that
masks with masked_fill(mask == 0, -1e9), a feed-forward net, and a linear head on position 0 (<cls>).
The code is our own. Differences: the embedding is learned (the book loads frozen word vectors), no dropout,
and a far smaller size (d_model 32, feed-forward 64).

The explorer (at the end): the two trained classifiers on one sentence, padded to a chosen length, with or
without the key mask: predictions, P(positive), and the <cls> row of each block's attention.

The code is in five modules, all imported here: data (the task), model, training, explorer, and exercises
(the checks of the chapter's exercises: check_1, check_2, check_3).
"""

from __future__ import annotations

from helpers.chapters.ch08_a_trained_classifier.data import (
    GLOSS,
    MAX_LEN,
    NOUN_SET,
    NOUNS,
    PAD_ID,
    POSITIVE,
    SPECIALS,
    VOCAB,
    Example,
    bag_of_words,
    clause,
    encode,
    grammar_problem,
    label_of,
    make_dataset,
    make_example,
)
from helpers.chapters.ch08_a_trained_classifier.exercises import check_1, check_2, check_3
from helpers.chapters.ch08_a_trained_classifier.explorer import (
    EXPLORERS,
    FIGURES_JA,
    MASK_MODES,
    PAD_MAX,
    SENTENCES,
    classifier_explorer,
    classifier_view,
    highlight_html,
    label,
    sentence_label,
)
from helpers.chapters.ch08_a_trained_classifier.model import PAD_ROWS, Attention, Block, Classifier, positional_encoding
from helpers.chapters.ch08_a_trained_classifier.training import (
    BATCH,
    EPOCHS,
    LR,
    SEED,
    TEST_SIZE,
    TRAIN_SIZE,
    History,
    Trained,
    accuracy,
    accuracy_at,
    datasets,
    epoch_line,
    flipped_lengths,
    in_jupyterlab,
    predict,
    predict_padded,
    train,
    train_both,
    trained,
    trained_pair,
)

__all__ = [
    'Attention', 'BATCH', 'Block', 'Classifier', 'EPOCHS', 'EXPLORERS', 'Example', 'FIGURES_JA',
    'GLOSS', 'History', 'LR',
    'MASK_MODES', 'MAX_LEN', 'NOUNS', 'NOUN_SET', 'PAD_ID', 'PAD_MAX', 'PAD_ROWS', 'POSITIVE', 'SEED',
    'SENTENCES', 'SPECIALS', 'TEST_SIZE', 'TRAIN_SIZE', 'Trained', 'VOCAB', 'accuracy', 'accuracy_at',
    'bag_of_words', 'check_1', 'check_2', 'check_3', 'classifier_explorer', 'classifier_view', 'clause',
    'datasets', 'encode', 'epoch_line',
    'flipped_lengths', 'grammar_problem', 'highlight_html', 'in_jupyterlab', 'label', 'label_of', 'make_dataset',
    'make_example', 'positional_encoding', 'predict', 'predict_padded', 'sentence_label', 'train', 'train_both',
    'trained', 'trained_pair',
]
