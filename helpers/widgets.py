"""Explorers: small ipywidgets apps that recompute a chapter's table live.

Every explorer is built by `explorer(controls, draw)`:
- `controls` maps a keyword name to an ipywidgets control;
- `draw(**values)` returns `(figure, summary)`: a matplotlib Figure and a one-line text summary
  of the numbers shown (browser tests read it from the `.explorer-summary` element);
- a ValueError from `draw` (an impossible combination, e.g. every token padded) is shown as a
  message inside the widget: no traceback, no NaN plot.
Each chapter draws a static figure with the same `draw` function first, for readers who can't run it.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import Image, display
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox
from PIL import Image as PILImage

from helpers.attention import attention_steps
from helpers.plots import format_cell, show_weights

Draw = Callable[..., tuple[Figure, str]]


def figure_png(fig: Figure, pad_inches: float = 0.1, room_inches: float = 0.5) -> bytes:
    """fig as PNG, cropped to its ink plus pad_inches: what bbox_inches="tight" gives, with one render instead of two.

    The canvas gets room_inches on every side, for labels that stick out of the figure; if ink still
    reaches the edge, this falls back to savefig(bbox_inches="tight").
    """
    width, height = fig.get_size_inches()
    room = Bbox.from_extents(-room_inches, -room_inches, width + room_inches, height + room_inches)
    raw = io.BytesIO()
    fig.savefig(raw, format="rgba", dpi=fig.dpi, bbox_inches=room)
    shape = (round(room.height * fig.dpi), round(room.width * fig.dpi), 4)
    rgba = np.frombuffer(raw.getbuffer(), dtype=np.uint8)
    background = np.round(np.array(to_rgba(fig.get_facecolor())) * 255).astype(np.uint8)
    ink = (rgba.reshape(shape) != background).any(axis=-1) if rgba.size == np.prod(shape) else None
    if ink is None or not ink.any() or ink[0].any() or ink[-1].any() or ink[:, 0].any() or ink[:, -1].any():
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight", pad_inches=pad_inches)
        return buffer.getvalue()
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    pad = round(pad_inches * fig.dpi)
    crop = rgba.reshape(shape)[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    framed = np.empty((crop.shape[0] + 2 * pad, crop.shape[1] + 2 * pad, 4), dtype=np.uint8)
    framed[:] = background
    framed[pad:pad + crop.shape[0], pad:pad + crop.shape[1]] = crop
    buffer = io.BytesIO()
    PILImage.fromarray(framed, "RGBA").save(buffer, format="png", compress_level=1)  # fast; size matters little here
    return buffer.getvalue()


def explorer(controls: dict[str, widgets.ValueWidget], draw: Draw) -> widgets.VBox:
    """Wire controls to draw(); returns the widget (its .refresh() redraws, for tests and benchmarks)."""
    summary = widgets.HTML().add_class("explorer-summary")
    out = widgets.Output().add_class("explorer-figure")

    def refresh(_change: object = None) -> None:
        values = {name: control.value for name, control in controls.items()}
        try:
            fig, text = draw(**values)
        except ValueError as error:
            summary.value = f"<b>Not possible:</b> {html.escape(str(error))}"
            out.clear_output()
            return
        try:
            png = figure_png(fig)
        finally:
            plt.close(fig)
        summary.value = html.escape(text)
        with out:
            out.clear_output(wait=True)
            display(Image(data=png, format="png"))

    for control in controls.values():
        control.observe(refresh, names="value")
    row = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))  # wrap, don't squeeze
    box = widgets.VBox([row, summary, out]).add_class("explorer")
    box.refresh = refresh  # type: ignore[attr-defined]
    refresh()
    return box


# --- chapter 1: the pad question (the running toy, reused by chapters 2 and 3, and its explorer) ---

WORDS = ("犬", "猫", "鳥", "魚", "馬")  # dog, cat, bird, fish, horse
VOCAB = {"<unk>": 0, "<pad>": 1} | {word: i + 2 for i, word in enumerate(WORDS)}
PAD_ID = VOCAB["<pad>"]
D_MODEL = 4


def toy_tokens(n_pads: int = 2, length: int = 5) -> list[str]:
    """The running sentence: the first `length - n_pads` of 犬 猫 鳥 魚 馬, then `n_pads` '<pad>'."""
    if not isinstance(length, int) or not 1 <= length <= len(WORDS):
        raise ValueError(f"length must be an int from 1 to {len(WORDS)}, got {length!r}")
    if not isinstance(n_pads, int) or isinstance(n_pads, bool) or not 0 <= n_pads <= length:
        raise ValueError(f"n_pads must be an int from 0 to {length}, got {n_pads!r}")
    return list(WORDS[: length - n_pads]) + ["<pad>"] * n_pads


def toy_params(seed: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Embedding table (7, 4) and W_q, W_k, W_v (4, 4): seeded randn rounded to one decimal."""
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(len(VOCAB), D_MODEL, generator=g).round(decimals=1)
    W_q, W_k, W_v = (torch.randn(D_MODEL, D_MODEL, generator=g).round(decimals=1) for _ in range(3))
    return table, W_q, W_k, W_v


def toy_qkv(tokens: list[str]) -> tuple[torch.Tensor, ...]:
    """ids (1, S), embeddings x (1, S, 4) and q, k, v (1, S, 4) of `tokens`, built as in chapter 1."""
    table, W_q, W_k, W_v = toy_params()
    ids = torch.tensor([[VOCAB[t] for t in tokens]])
    x = table[ids]
    return ids, x, x @ W_q, x @ W_k, x @ W_v


def _align(text: str, width: int, left: bool = False) -> str:
    """Pad to `width` terminal columns; 犬 猫 鳥 are two columns wide."""
    import unicodedata

    used = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
    gap = " " * max(width - used, 0)
    return text + gap if left else gap + text


def print_table(matrix: torch.Tensor, rows: list[str], cols: list[str], fmt: str = ".2f") -> None:
    """Print an (L, S) table with token labels; -1e9, -inf and NaN in short form (as in show_weights)."""
    if matrix.dim() != 2 or matrix.shape != (len(rows), len(cols)):
        raise ValueError(f"matrix must be 2-D ({len(rows)}, {len(cols)}) to match the labels, "
                         f"got {tuple(matrix.shape)}")
    print(_align("", 6, left=True) + "".join(_align(c, 8) for c in cols))
    for label, row in zip(rows, matrix.tolist(), strict=True):
        print(_align(label, 6, left=True) + "".join(_align(format_cell(v, fmt), 8) for v in row))


def question_cells(tokens: list[str]) -> torch.Tensor:
    """Bool (S, S): the '?' cells of the book's mask, pad query rows x real key columns."""
    pad = torch.tensor([t == "<pad>" for t in tokens])
    return pad[:, None] & ~pad[None, :]


def draw_pad_cells(n_pads: int = 2) -> tuple[Figure, str]:
    """The book's masked score table for 5 tokens with `n_pads` pads: -1e9 cells hatched, '?' cells framed."""
    tokens = toy_tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError("every token is <pad>: no real word is left to look at. "
                         "A batch never holds an empty sentence; keep at least one word.")
    ids, _, q, k, _ = toy_qkv(tokens)
    mask = (ids != PAD_ID).unsqueeze(1)                       # the book's mask, (1, 1, S), True = real key
    scores = q @ k.transpose(-2, -1) / D_MODEL ** 0.5
    masked_scores = scores.masked_fill(mask == 0, -1e9)[0]
    hidden = (mask == 0)[0].expand(len(tokens), -1)
    unsure = question_cells(tokens)
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    show_weights(masked_scores, tokens, tokens, ax=ax, masked=hidden, title="scores after masked_fill(-1e9)")
    for i, j in unsure.nonzero().tolist():
        ax.add_patch(plt.Rectangle((j - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor="#e66100", linewidth=2.5))
        ax.text(j + 0.3, i - 0.22, "?", color="#e66100", fontsize=13, ha="center", va="center")
    fig.text(0.5, 0.015, "hatched: set to -1e9    orange ?: pad query x real key, left as it was",
             ha="center", fontsize=10, color="#404040")
    fig.subplots_adjust(left=0.16, right=0.97, top=0.80, bottom=0.09)
    changed = int((masked_scores != scores[0]).sum())
    return fig, (f"{n_pads} pad(s): {changed} cells set to -1e9 (the pad columns), "
                 f"{int(unsure.sum())} '?' cells (pad query rows x real key columns) keep their scores")


def pad_cells_explorer() -> widgets.VBox:
    """Number of pads -> which cells the book's mask sets to -1e9 and which stay '?'."""
    controls = {"n_pads": widgets.IntSlider(value=2, min=0, max=5, description="pads")}
    return explorer(controls, draw_pad_cells)


# --- chapter 2: softmax on masked rows ---

FILLS = {"-1e9": -1e9, "-1e4": -1e4, "finfo.min": "min", "-inf": "-inf"}  # label -> attention_steps fill
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def draw_softmax(n_pads: int = 2, fill: str = "-1e9", dtype: str = "float32",
                 mask_pad_rows: bool = False) -> tuple[Figure, str]:
    """Masked scores and softmax weights of the toy, for a fill value, a dtype and a pad-row choice."""
    tokens = toy_tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError("every token is <pad>: every row would be fully masked and no word is left. "
                         "Keep at least one word.")
    if fill not in FILLS or dtype not in DTYPES:
        raise ValueError(f"fill must be one of {list(FILLS)} and dtype one of {list(DTYPES)}, got {fill!r}, {dtype!r}")
    _, _, q, k, v = (t[0] for t in toy_qkv(tokens))
    q, k, v = (t.to(DTYPES[dtype]) for t in (q, k, v))
    pad = torch.tensor([t == "<pad>" for t in tokens])
    pad_rows = pad[:, None] if mask_pad_rows else None
    try:
        steps = attention_steps(q, k, v, key_padding_mask=pad, attn_mask=pad_rows, fill=FILLS[fill])
    except ValueError as error:  # e.g. -1e9 in float16: masked_fill itself raises an overflow error there
        raise ValueError(f"{error}. In PyTorch, masked_fill(-1e9) on a float16 tensor raises an overflow error.") \
            from None
    hidden = pad[None, :] | (pad[:, None] if mask_pad_rows else False)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 4.0))
    nan_rows = bool(steps.weights.isnan().any())
    show_weights(steps.masked_scores, tokens, tokens, ax=left, masked=hidden, title=f"scores, {dtype}, fill {fill}")
    show_weights(steps.weights, tokens, tokens, ax=right,  # no hatching here: it is the slow part of a redraw
                 title="weights: NaN rows!" if nan_rows else "weights = softmax(row)")
    right.set_ylabel("")
    fig.subplots_adjust(left=0.09, right=0.99, top=0.80, bottom=0.03, wspace=0.25)

    real_rows = steps.weights[~pad]
    pad_rows_w = steps.weights[pad]
    if not n_pads:
        rows_text = "no pad rows"
    elif pad_rows_w.isnan().all():
        rows_text = "pad rows are NaN on purpose: a row of -inf gives -inf - (-inf) = NaN"
    elif (pad_rows_w == pad_rows_w[0, 0]).all():
        rows_text = f"pad rows: every weight {pad_rows_w[0, 0].item():.4f} (1/{len(tokens)}: a constant row is uniform)"
    else:
        rows_text = "pad rows: ordinary distributions over the real words"
    keys_text = f"real rows give the pad keys weight {real_rows[:, pad].max().item():g}" if n_pads else "no pad keys"
    return fig, f"{dtype}, fill {fill}, {n_pads} pad(s), pad rows {'masked' if mask_pad_rows else 'kept'}: " \
                f"{keys_text}; {rows_text}"


def softmax_explorer() -> widgets.VBox:
    """Pads, fill value, dtype and pad-row masking -> the masked scores and the weights, live."""
    controls = {
        "n_pads": widgets.IntSlider(value=2, min=0, max=5, description="pads"),
        "fill": widgets.Dropdown(options=list(FILLS), value="-1e9", description="fill"),
        "dtype": widgets.Dropdown(options=list(DTYPES), value="float32", description="dtype"),
        "mask_pad_rows": widgets.Checkbox(value=False, description="mask pad rows too"),
    }
    return explorer(controls, draw_softmax)


# --- chapter 3: does the pad row matter ---

POLICIES = {  # how a layer treats the pad query rows (the pad key columns are always masked)
    "leave": "leave them (the book)",
    "uniform": "mask them too: 1/5",
    "zero": "zero them after softmax",
    "-inf": "mask them with -inf: NaN",
}
JUNK = ("none", "random x1000", "zeros", "NaN")  # what replaces the pad rows between the layers


def layer2_params(seed: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W_q, W_k, W_v (4, 4) of chapter 3's second layer: seeded randn rounded to one decimal."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(D_MODEL, D_MODEL, generator=g).round(decimals=1) for _ in range(3))


def attention_layer(h: torch.Tensor, W: tuple[torch.Tensor, ...], pad: torch.Tensor,
                    policy: str = "leave") -> tuple[torch.Tensor, torch.Tensor]:
    """h + weights @ v for h (N, S, d) and pad (N, S), True = pad; returns (output, weights)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {list(POLICIES)}, got {policy!r}")
    q, k, v = h @ W[0], h @ W[1], h @ W[2]
    rows = pad.unsqueeze(-1)                                     # (N, S, 1): the pad query rows
    if policy == "leave":
        weights = attention_steps(q, k, v, key_padding_mask=pad).weights
    elif policy == "zero":
        weights = attention_steps(q, k, v, key_padding_mask=pad).weights * ~rows
    else:
        fill = -1e9 if policy == "uniform" else "-inf"
        weights = attention_steps(q, k, v, key_padding_mask=pad, attn_mask=rows, fill=fill).weights
    return h + weights @ v, weights


_LAYER1: dict[tuple[str, int], tuple[torch.Tensor, ...]] = {}  # the explorer recomputes only what a control changes


def _layer1(policy: str, n_pads: int) -> tuple[torch.Tensor, ...]:
    """pad, layer 1's output under `policy`, the book's layer-2 output without junk, and W2 (cached)."""
    if (policy, n_pads) not in _LAYER1:
        ids, x, *_ = toy_qkv(toy_tokens(n_pads))
        _, *W1 = toy_params()
        W2 = layer2_params()
        pad = ids == PAD_ID
        h1, _ = attention_layer(x, W1, pad, policy)
        reference = attention_layer(attention_layer(x, W1, pad)[0], W2, pad)[0]   # the book, no junk
        _LAYER1[policy, n_pads] = (pad, h1, reference, W2)
    return _LAYER1[policy, n_pads]


def draw_pad_rows(policy: str = "leave", junk: str = "random x1000", n_pads: int = 2) -> tuple[Figure, str]:
    """Two layers with a pad-row policy and junk in the pad rows between them, against the book without junk."""
    tokens = toy_tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError("every token is <pad>: there is no real token whose output could be checked. "
                         "Keep at least one word.")
    if junk not in JUNK:
        raise ValueError(f"junk must be one of {list(JUNK)}, got {junk!r}")
    pad, h1, reference, W2 = _layer1(policy, n_pads)
    g = torch.Generator().manual_seed(0)
    replacement = {"none": h1, "random x1000": torch.randn(h1.shape, generator=g) * 1000,
                   "zeros": torch.zeros(h1.shape), "NaN": torch.full(h1.shape, float("nan"))}[junk]
    h1_junk = torch.where(pad.unsqueeze(-1), replacement, h1)
    h2_junk, w2_junk = attention_layer(h1_junk, W2, pad, policy)
    diff = (h2_junk - reference).abs()[0]

    fig, (left, right) = plt.subplots(1, 2, figsize=(8.6, 4.0), width_ratios=(5, 4))
    show_weights(w2_junk[0], tokens, tokens, ax=left, masked=pad[0],
                 title="layer 2 weights" + ("" if junk == "none" else f", pad rows = {junk}"))
    show_weights(diff, tokens, ["d0", "d1", "d2", "d3"], ax=right, fmt=".2g", title="|output - book's, no junk|")
    right.set_xlabel("feature")
    right.set_ylabel("")
    fig.subplots_adjust(left=0.1, right=0.99, top=0.80, bottom=0.03, wspace=0.3)

    real_diff = diff[~pad[0]].max().item()
    text = f"policy {policy}, junk {junk}, {n_pads} pad(s): real rows max |change| = {real_diff:g}"
    if n_pads:
        text += f"; pad rows max |change| = {diff[pad[0]].max().item():g}"
    if real_diff != real_diff and policy == "-inf" and junk == "none":
        text += ". The -inf pad rows are NaN after layer 1, and in layer 2 a NaN value weighted 0 gives 0 x NaN = NaN"
    elif real_diff != real_diff:
        text += ". NaN reached the real rows: a pad value weighted 0 gives 0 x NaN = NaN"
    return fig, text


def pad_rows_explorer() -> widgets.VBox:
    """Pad-row policy, junk in the pad rows and number of pads -> does anything reach the real tokens?"""
    controls = {
        "policy": widgets.Dropdown(options=[(label, key) for key, label in POLICIES.items()], value="leave",
                                   description="pad rows"),
        "junk": widgets.Dropdown(options=list(JUNK), value="random x1000", description="junk"),
        "n_pads": widgets.IntSlider(value=2, min=0, max=5, description="pads"),
    }
    return explorer(controls, draw_pad_rows)


# --- chapter 4: key_padding_mask ---

KPM_LENGTHS = (4, 3, 5)  # the chapter-4 batch: 1 2 3 4 | 5 6 7 | 8 9 10 11 12


def kpm_batch(pad: float = 1000) -> torch.Tensor:
    """The chapter-4 batch, shape (3, 5, 1): 1..4, 5..7 and 8..12, padded to length 5 with `pad`."""
    data = torch.full((3, 5), float(pad))
    start = 1
    for i, n in enumerate(KPM_LENGTHS):
        data[i, :n] = torch.arange(start, start + n, dtype=torch.float32)
        start += n
    return data.unsqueeze(-1)


def kpm_module(seed: int) -> torch.nn.MultiheadAttention:
    """nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True) initialised from `seed`."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(seed)
        return torch.nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True)


def draw_kpm_experiment(seed: int = 0, pad: float = 1000, masked: bool = True, item: int = 0) -> tuple[Figure, str]:
    """Chapter 4's PAD experiment: the weights of one batch item, with or without key_padding_mask."""
    real = {float(v) for v in range(1, 13)}
    if float(pad) in real:
        raise ValueError(f"PAD={pad:g} is also a real value in the data (1 to 12): data == PAD would hide "
                         "a real token. Pick a PAD value that never occurs in real data.")
    data = kpm_batch(pad)
    kpm = (data == pad)[:, :, 0]
    mha = kpm_module(seed)
    with torch.no_grad():
        _, weights = mha(data, data, data, key_padding_mask=kpm if masked else None)
    w_q, w_k, _ = mha.in_proj_weight.detach().flatten().tolist()
    n = KPM_LENGTHS[item]
    labels = [f"{v:g}" for v in data[item, :n, 0].tolist()] + ["PAD"] * (5 - n)
    fig, ax = plt.subplots(figsize=(5.4, 4.6))
    show_weights(weights[item], labels, labels, ax=ax, masked=kpm[item] if masked else None,
                 title=f"item {item}, seed {seed}, PAD={pad:g}, mask {'on' if masked else 'off'}")
    fig.subplots_adjust(left=0.16, right=0.98, top=0.80, bottom=0.03)  # fixed margins: tight_layout is slow
    wins = "largest" if w_q * w_k > 0 else "smallest"
    sign = f"w_q·w_k = {w_q * w_k:+.3f}: a positive query favours the {wins} key"
    if n == 5:
        on_pad = "item 2 has no pad key"
    else:
        on_pad = f"weight on the pad column(s), mean over real query rows = {weights[item, :n, n:].sum(-1).mean():.3f}"
        if (weights[item, :, n:] == 0).all():
            on_pad += " (exactly 0 in every row)"
    return fig, f"seed {seed} ({sign}); item {item}, mask {'on' if masked else 'off'}: {on_pad}"


def kpm_explorer() -> widgets.VBox:
    """Seed, PAD value, mask on/off and batch item -> the weights heatmap of chapter 4's experiment."""
    pads = [("1000", 1000), ("100", 100), ("13", 13), ("0", 0), ("-1000", -1000), ("7 (a real value!)", 7)]
    controls = {
        "seed": widgets.IntSlider(value=0, min=0, max=9, description="seed"),
        "pad": widgets.Dropdown(options=pads, value=1000, description="PAD"),
        "masked": widgets.Checkbox(value=True, description="key_padding_mask"),
        "item": widgets.ToggleButtons(options=[0, 1, 2], value=0, description="batch item"),
    }
    return explorer(controls, draw_kpm_experiment)


# --- chapter 5: attn_mask and causality ---

CAUSAL_SEQUENCES = {  # in the drop-down's order
    "right-padded": ["犬", "猫", "鳥", "<pad>", "<pad>"],
    "no padding": ["犬", "猫", "鳥", "魚", "馬"],
    "left-padded": ["<pad>", "<pad>", "犬", "猫", "鳥"],
}


def causal_toy(seed: int = 0) -> tuple[torch.nn.MultiheadAttention, dict[str, torch.Tensor]]:
    """Chapter 5's seeded nn.MultiheadAttention(4, 2 heads) and a 4-number vector for each token."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mha = torch.nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True)
        names = ["犬", "猫", "鳥", "魚", "馬", "<pad>"]
        table = dict(zip(names, torch.randn(len(names), 4), strict=True))
    return mha, table


_CAUSAL_TOY = causal_toy()


def draw_causal_edit(sequence: str = "right-padded", causal: bool = True, padding: bool = True,
                     edit: int = 1) -> tuple[Figure, str]:
    """Weights of one sequence under the chosen masks, and which outputs move when token `edit` changes."""
    if sequence not in CAUSAL_SEQUENCES:
        raise ValueError(f"sequence must be one of {list(CAUSAL_SEQUENCES)}, got {sequence!r}")
    tokens = CAUSAL_SEQUENCES[sequence]
    L = len(tokens)
    if not 0 <= edit < L:
        raise ValueError(f"edit must be a position from 0 to {L - 1}, got {edit}")
    pad = torch.tensor([[t == "<pad>" for t in tokens]])                 # (1, S)
    attn_mask = torch.ones(L, L, dtype=torch.bool).triu(1) if causal else None
    key_padding_mask = pad if padding else None
    hidden = torch.zeros(L, L, dtype=torch.bool)
    if causal:
        hidden |= attn_mask
    if padding:
        hidden |= pad
    blind = hidden.all(-1).nonzero().flatten().tolist()
    if blind:
        raise ValueError(f"query {blind[0]} ({tokens[blind[0]]}) would see no key at all: every key it may look at "
                         "is padding or in its future, and nn.MultiheadAttention returns NaN for such a row. "
                         "Pad on the right, or switch one of the masks off.")
    mha, table = _CAUSAL_TOY
    x = torch.stack([table[t] for t in tokens])[None]                     # (1, L, 4)
    edited = x.clone()
    edited[0, edit] += 1.0
    with torch.no_grad():
        output, weights = mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
        output2, _ = mha(edited, edited, edited, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    same = (output2 == output)[0].all(-1)                                  # (L,) exactly unchanged

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    masks = " + ".join(m for m, on in (("causal", causal), ("key padding", padding)) if on) or "no mask"
    rows = [f"{t} {'same' if s else 'CHANGED'}" for t, s in zip(tokens, same.tolist(), strict=True)]
    show_weights(weights[0], rows, tokens, ax=ax, masked=hidden,
                 title=f"{masks}: weights (mean of 2 heads)\nrows: does that output change if {tokens[edit]} "
                       f"(key {edit}) is edited?")
    ax.set_ylabel("query (its output)")
    ax.get_xticklabels()[edit].set_color("tab:red")
    for label, s in zip(ax.get_yticklabels(), same.tolist(), strict=True):
        label.set_color("black" if s else "tab:red")
    fig.subplots_adjust(left=0.25, right=0.98, top=0.76, bottom=0.03)
    moved = [i for i in range(L) if not same[i]]
    kept = [i for i in range(L) if same[i]]
    summary = (f"{sequence}, {masks}: editing token {edit} ({tokens[edit]}) changes the outputs at positions "
               f"{moved or 'none'}; exactly unchanged: {kept or 'none'}")
    return fig, summary


def causal_explorer() -> widgets.VBox:
    """Masks on/off, a sequence and a token to edit -> the weights, and which outputs that edit changes."""
    controls = {
        "sequence": widgets.Dropdown(options=list(CAUSAL_SEQUENCES), value="right-padded", description="sequence"),
        "causal": widgets.Checkbox(value=True, description="causal attn_mask"),
        "padding": widgets.Checkbox(value=True, description="key_padding_mask"),
        "edit": widgets.IntSlider(value=1, min=0, max=4, description="edit token"),
    }
    return explorer(controls, draw_causal_edit)


# --- chapter 6: mask pitfalls ---

CH6_TOKENS = {"none": ["犬", "猫", "鳥", "牛", "馬"], "right": ["犬", "猫", "鳥", "<pad>", "<pad>"],
              "left": ["<pad>", "<pad>", "犬", "猫", "鳥"]}
CH6_CONVENTIONS = ("MHA bool (True = blocked)", "SDPA bool (True = may attend)", "HF 0/1 (1 = keep)",
                   "HF 0/1 cast to float", "additive float (0 / -inf)")
CH6_APIS = ("nn.MultiheadAttention", "F.scaled_dot_product_attention", "masked_fill(mask, -inf) + softmax")


def ch6_intended(padding: str) -> torch.Tensor:
    """The constraint every convention expresses: (5, 5) bool, True = blocked (causal, plus the pad keys)."""
    from helpers.masks import causal_mask
    if padding not in CH6_TOKENS:
        raise ValueError(f"padding must be one of {list(CH6_TOKENS)}, got {padding!r}")
    pad = torch.tensor([t == "<pad>" for t in CH6_TOKENS[padding]])
    return causal_mask(5) | pad                     # (L, S): pad keys blocked in every row


def ch6_express(blocked: torch.Tensor, convention: str) -> torch.Tensor:
    """The same constraint written in one convention."""
    from helpers.masks import to_additive_mask, to_sdpa_mask
    return {
        "MHA bool (True = blocked)": lambda: blocked,
        "SDPA bool (True = may attend)": lambda: to_sdpa_mask(blocked),
        "HF 0/1 (1 = keep)": lambda: (~blocked).long(),
        "HF 0/1 cast to float": lambda: (~blocked).float(),
        "additive float (0 / -inf)": lambda: to_additive_mask(blocked, fill="-inf"),
    }[convention]()


def ch6_convert(mask: torch.Tensor, convention: str, api: str) -> torch.Tensor:
    """The fix: read `mask` in its own convention (True = blocked), then write it in the API's."""
    from helpers.masks import from_hf_attention_mask, to_sdpa_mask
    if convention == "HF 0/1 cast to float":
        raise ValueError("a float 0/1 mask is ambiguous (additive? keep-flags?): "
                         "from_hf_attention_mask refuses it; keep HF masks as integers")
    blocked = {"MHA bool (True = blocked)": lambda: mask, "SDPA bool (True = may attend)": lambda: to_sdpa_mask(mask),
               "HF 0/1 (1 = keep)": lambda: from_hf_attention_mask(mask),
               "additive float (0 / -inf)": lambda: mask != 0}[convention]()
    return to_sdpa_mask(blocked) if api == "F.scaled_dot_product_attention" else blocked


_CH6_SETUP: list[tuple[torch.Tensor, torch.nn.MultiheadAttention]] = []  # built once, on first use


def _ch6_setup() -> tuple[torch.Tensor, torch.nn.MultiheadAttention]:
    """Five fixed 4-d token vectors and a 1-head MHA whose projections are the identity (scores = x x^T / 2)."""
    if _CH6_SETUP:
        return _CH6_SETUP[0]
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(6))
    mha = torch.nn.MultiheadAttention(4, 1, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(4).repeat(3, 1))
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(torch.eye(4))
        mha.out_proj.bias.zero_()
    _CH6_SETUP.append((x, mha.eval()))
    return _CH6_SETUP[0]


def ch6_weights(mask: torch.Tensor, api: str) -> torch.Tensor:
    """The (5, 5) weights `api` computes when given `mask`; ValueError (with torch's words) if it refuses it."""
    x, mha = _ch6_setup()
    F = torch.nn.functional
    try:
        with torch.no_grad():
            if api == "nn.MultiheadAttention":
                return mha(x[None], x[None], x[None], attn_mask=mask, need_weights=True)[1][0]
            if api == "F.scaled_dot_product_attention":  # values = identity rows, so the output IS the weights
                return F.scaled_dot_product_attention(x[None], x[None], torch.eye(5)[None], attn_mask=mask)[0]
            if api == "masked_fill(mask, -inf) + softmax":
                return (x @ x.T / 2).masked_fill(mask, float("-inf")).softmax(-1)
    except (RuntimeError, AssertionError) as error:
        raise ValueError(f"{api} rejects a {str(mask.dtype).removeprefix('torch.')} mask: {error}") from None
    raise ValueError(f"api must be one of {list(CH6_APIS)}, got {api!r}")


def draw_mask_convention(convention: str = "MHA bool (True = blocked)", api: str = "F.scaled_dot_product_attention",
                         convert: bool = False, padding: str = "right", *, ax: plt.Axes | None = None
                         ) -> tuple[Figure, str]:
    """Causal + padding constraint, written in `convention`, passed to `api` (converted first if `convert`).

    Hatched cells should be blocked; a red frame marks weight on such a cell (a leak).
    """
    if convention not in CH6_CONVENTIONS:
        raise ValueError(f"convention must be one of {list(CH6_CONVENTIONS)}, got {convention!r}")
    blocked = ch6_intended(padding)
    mask = ch6_express(blocked, convention)
    weights = ch6_weights(ch6_convert(mask, convention, api) if convert else mask, api)

    used = weights.nan_to_num(0.0) > 1e-6
    future = torch.ones(5, 5, dtype=torch.bool).triu(1)
    pad_keys = blocked & ~future
    dead = blocked.all(-1)
    problems = []
    if (used & future).any():
        problems.append(f"LEAKS the future (up to {weights[future].nan_to_num(0).max():.2f})")
    if (used & pad_keys).any():
        problems.append(f"reads pad keys (up to {weights[pad_keys].nan_to_num(0).max():.2f})")
    if (~used & ~blocked).any():
        problems.append("hides allowed keys")
    verdict = "; ".join(problems) or "correct: weight only on allowed keys"
    if dead.any():
        rows = weights[dead]
        value = "NaN" if rows.isnan().all() else "0" if (rows == 0).all() else "finite"
        verdict += f"; {int(dead.sum())} rows with no visible key -> {value}"
    nan_rows = weights.isnan().all(-1) & ~dead
    if nan_rows.any():  # the API read the mask so that these rows see nothing
        n = int(nan_rows.sum())
        verdict += f"; {n} NaN row{'s' if n > 1 else ''} (no visible key as the API read the mask)"

    tokens = CH6_TOKENS[padding]
    if ax is None:  # fixed margins: tight_layout would cost a second full text layout on every update
        fig = plt.figure(figsize=(5.6, 5.0))
        ax = fig.add_axes((0.17, 0.03, 0.8, 0.7))
    show_weights(weights, tokens, tokens, ax=ax, masked=blocked)
    for i, j in (used & blocked).nonzero().tolist():  # weight on a key that should be blocked
        ax.add_patch(plt.Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False, edgecolor="red", linewidth=2.5))
    status = "WRONG: " + ", ".join(p.split(" (")[0] for p in problems) if problems else "OK"
    if weights.isnan().any():
        status += "\nNaN rows are the lesson: no visible key"
    short = convention.split(" (")[0] + " mask → " + api.split("(")[0].removeprefix("nn.").removeprefix("F.")
    ax.set_title(f"{short}{' (converted)' if convert else ''}\n{status}", fontsize=11, pad=10,
                 color="firebrick" if problems else "black")
    return ax.figure, f"{convention} -> {api}{' (converted)' if convert else ''}, {padding} padding: {verdict}"


def mask_convention_explorer() -> widgets.VBox:
    """Mask convention x API x conversion x padding side -> the weights the API really computes."""
    controls = {
        "convention": widgets.Dropdown(options=CH6_CONVENTIONS, value=CH6_CONVENTIONS[0], description="mask"),
        "api": widgets.Dropdown(options=CH6_APIS, value=CH6_APIS[1], description="passed to"),
        "convert": widgets.Checkbox(value=False, description="convert with helpers.masks"),
        "padding": widgets.ToggleButtons(options=list(CH6_TOKENS), value="right", description="padding"),
    }
    return explorer(controls, draw_mask_convention)
