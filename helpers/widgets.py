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
from collections.abc import Callable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from IPython.display import display
from matplotlib.figure import Figure

from helpers.plots import show_weights

Draw = Callable[..., tuple[Figure, str]]


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
        summary.value = html.escape(text)
        with out:
            out.clear_output(wait=True)
            display(fig)
        plt.close(fig)

    for control in controls.values():
        control.observe(refresh, names="value")
    box = widgets.VBox([widgets.HBox(list(controls.values())), summary, out]).add_class("explorer")
    box.refresh = refresh  # type: ignore[attr-defined]
    refresh()
    return box


# --- chapter 2: softmax on masked rows ---

# --- chapter 3: does the pad row matter ---

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

# --- chapter 6: mask pitfalls ---
