"""Chapter 4: nn.MultiheadAttention's key_padding_mask on the PAD=1000 experiment's batch, and its explorer."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers.explorer import Explorer, Panel, View, explorer

KPM_LENGTHS = (4, 3, 5)  # the chapter-4 batch: 1 2 3 4 | 5 6 7 | 8 9 10 11 12


def kpm_batch(pad: float = 1000) -> torch.Tensor:
    """The chapter-4 batch, shape (3, 5, 1): 1..4, 5..7 and 8..12, padded to length 5 with `pad`."""
    data = torch.full((3, 5), float(pad))
    start = 1
    for i, n in enumerate(KPM_LENGTHS):
        data[i, :n] = torch.arange(start, start + n, dtype=torch.float32)
        start += n
    return data.unsqueeze(-1)


def _kpm_module(seed: int) -> torch.nn.MultiheadAttention:
    """nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True) initialised from `seed`."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(seed)
        return torch.nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True)


def kpm_view(seed: int = 0, pad: float = 1000, masked: bool = True, item: int = 0) -> View:
    """Chapter 4's PAD experiment: the weights of one batch item, with or without key_padding_mask."""
    real = {float(v) for v in range(1, 13)}
    if float(pad) in real:
        raise ValueError(f"PAD={pad:g} is also a real value in the data (1 to 12): data == PAD would hide "
                         "a real token. Pick a PAD value that never occurs in real data.")
    data = kpm_batch(pad)
    kpm = (data == pad)[:, :, 0]
    mha = _kpm_module(seed)
    with torch.no_grad():
        _, weights = mha(data, data, data, key_padding_mask=kpm if masked else None)
    w_q, w_k, _ = mha.in_proj_weight.detach().flatten().tolist()
    n = KPM_LENGTHS[item]
    labels = [f"{v:g}" for v in data[item, :n, 0].tolist()] + ["PAD"] * (5 - n)
    panel = Panel(weights[item], labels, labels, masked=kpm[item] if masked else None,
                  title=f"item {item}, seed {seed}, PAD={pad:g}, mask {'on' if masked else 'off'}")
    wins = "largest" if w_q * w_k > 0 else "smallest"
    sign = f"w_q·w_k = {w_q * w_k:+.3f}: a positive query favours the {wins} key"
    if n == 5:
        on_pad = "item 2 has no pad key"
    else:
        on_pad = f"weight on the pad column(s), mean over real query rows = {weights[item, :n, n:].sum(-1).mean():.3f}"
        if (weights[item, :, n:] == 0).all():
            on_pad += " (exactly 0 in every row)"
    return View((panel,), f"seed {seed} ({sign}); item {item}, mask {'on' if masked else 'off'}: {on_pad}")


def kpm_explorer() -> Explorer:
    """Seed, PAD value, mask on/off and batch item -> the weights heatmap of chapter 4's experiment."""
    pads = [("1000", 1000), ("100", 100), ("13", 13), ("0", 0), ("-1000", -1000), ("7 (a real value!)", 7)]
    controls = {
        "seed": widgets.IntSlider(value=0, min=0, max=9, description="seed"),
        "pad": widgets.Dropdown(options=pads, value=1000, description="PAD"),
        "masked": widgets.Checkbox(value=True, description="key_padding_mask"),
        "item": widgets.ToggleButtons(options=[0, 1, 2], value=0, description="batch item"),
    }
    return explorer(controls, kpm_view)


EXPLORERS = (kpm_explorer,)
