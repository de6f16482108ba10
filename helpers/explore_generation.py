"""Chapter 9's running example and explorer: batched greedy generation with helpers.tiny_lm.

The model is trained in a few seconds on counting lines ("3 5 7 9 1 3 5 . . . . ."); `trained_model()`
trains it once per process (seeded, one thread, deterministic), so the notebook and the explorer share it.
The explorer shows, for one choice of padding side, position ids, mask and KV cache, each item's
continuation next to the one-at-a-time reference, and the attention of the newest query at one decoding step.
Every combination is computed once and cached: an update only builds the tables.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import ipywidgets as widgets
import torch
from torch import nn

from helpers.explorer import explorer
from helpers.tiny_lm import PAD_ID, TOKENS, Generation, TinyLM, generate
from helpers.views import Panel, View

PROMPTS = ("3 5", "1 2 3 4", "9 2 5 8 1")   # count by 2, by 1, by 3
STEPS = 6                                    # new tokens per prompt
SIDES = ("left", "right")
POSITIONS = {"from the mask": "mask", "naive (left edge)": "naive"}
MASKS = ("every step", "prompt only", "off")


def counting_corpus(length: int = 12, numbers: int = 7) -> torch.Tensor:
    """(30, length) ids: from each digit, count `numbers` numbers by 1, 2 or 3 (mod 10), then '.' to the end."""
    lines = [[(start + i * by) % 10 for i in range(numbers)] + [TOKENS.index(".")] * (length - numbers)
             for by in (1, 2, 3) for start in range(10)]
    return torch.tensor(lines)


def train(model: TinyLM, corpus: torch.Tensor, steps: int = 60, lr: float = 1e-2, seed: int = 0) -> list[float]:
    """Full-batch AdamW on next-token cross-entropy, on one thread with a seed: every run is the same."""
    threads = torch.get_num_threads()
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    optimizer, losses = torch.optim.AdamW(model.parameters(), lr=lr), []
    try:
        for _ in range(steps):
            logits = model(corpus[:, :-1]).logits                       # predict token t + 1 from tokens <= t
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), corpus[:, 1:].flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    return losses


class Trained(NamedTuple):
    model: TinyLM
    losses: list[float]


@cache
def trained_model(seed: int = 0, steps: int = 60) -> Trained:
    """TinyLM (seeded) trained on counting_corpus(), in eval mode. Cached: trained once per process."""
    torch.manual_seed(seed)
    model = TinyLM()
    losses = train(model, counting_corpus(), steps=steps, seed=seed)
    return Trained(model.eval(), losses)


def encode(text: str) -> list[int]:
    """'3 5' -> [3, 5]."""
    return [TOKENS.index(t) for t in text.split()]


def decode(ids: torch.Tensor | list[int], pad: str = "_") -> str:
    """[3, 5, 11] -> '3 5 _' (pads shown as `pad`)."""
    return " ".join(pad if i == PAD_ID else TOKENS[i] for i in torch.as_tensor(ids).tolist())


def padded_batch(prompts: tuple[str, ...] = PROMPTS, side: str = "left") -> tuple[torch.Tensor, torch.Tensor]:
    """ids (N, S) padded with <pad> on `side`, and the attention_mask (N, S), 1 = real token."""
    if side not in SIDES:
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    S = max(len(p.split()) for p in prompts)
    ids = torch.full((len(prompts), S), PAD_ID)
    for i, p in enumerate(prompts):
        real = torch.tensor(encode(p))
        if side == "left":
            ids[i, S - len(real):] = real
        else:
            ids[i, :len(real)] = real
    return ids, (ids != PAD_ID).long()


@cache
def reference() -> Generation:
    """Each prompt generated alone, unpadded: tokens (N, STEPS) and logits (N, STEPS, vocab)."""
    model = trained_model().model
    runs = [generate(model, torch.tensor([encode(p)]), steps=STEPS) for p in PROMPTS]
    return Generation(torch.cat([r.tokens for r in runs]), torch.cat([r.logits for r in runs]), [])


@cache
def batched(side: str, positions: str, mask: str, kv_cache: bool) -> Generation:
    """The padded batch of PROMPTS generated together (cached per combination)."""
    ids, attention_mask = padded_batch(PROMPTS, side)
    return generate(trained_model().model, ids, attention_mask, STEPS, positions=POSITIONS[positions],
                    mask=mask, cache=kv_cache)


def generation_view(padding: str = "left", positions: str = "from the mask", mask: str = "every step",
                    kv_cache: bool = True, step: int = 2) -> View:
    """Each item's continuation (probability of each chosen token; red = differs from the reference) and the
    attention of the newest query at decoding step `step` (last block, mean over heads)."""
    if padding not in SIDES or positions not in POSITIONS or mask not in MASKS:
        raise ValueError(f"padding, positions, mask must be in {SIDES}, {tuple(POSITIONS)}, {MASKS}")
    if not isinstance(step, int) or not 1 <= step <= STEPS:
        raise ValueError(f"step must be an int from 1 to {STEPS}, got {step!r}")
    run, ref = batched(padding, positions, mask, kv_cache), reference()
    ids, _ = padded_batch(PROMPTS, padding)
    rows, probs, wrong = [], [], []
    for i, prompt in enumerate(PROMPTS):                      # the reference, then this run, for each item
        for label, gen in (("alone", ref), ("batch", run)):
            rows.append(f"{label}  {prompt} → {decode(gen.tokens[i])}")
            probs.append(gen.logits[i].softmax(-1).gather(-1, gen.tokens[i][:, None])[:, 0])
            wrong.append(gen.tokens[i] != ref.tokens[i])
    wrong_rows = tuple(r for r, w in enumerate(wrong) if w.any())
    panels = [Panel(torch.stack(probs), rows, [f"+{j + 1}" for j in range(STEPS)],
                    title="continuations: each prompt alone and in the batch", framed=torch.stack(wrong),
                    frame_color="#d62728", mark="×", red_rows=wrong_rows, alert=bool(wrong_rows),
                    xlabel="new token", ylabel="")]
    seq = torch.cat([ids, run.tokens], 1)[:, :ids.shape[1] + step - 1]          # the keys at this step
    weights, pads = run.weights[step - 1], seq == PAD_ID
    leak = pads & (weights > 0.005)
    panels.append(Panel(weights, [decode(row) for row in seq], [str(j) for j in range(seq.shape[1])],
                        title=f"step {step}: the newest query's attention\n(last block, mean over heads)",
                        masked=pads, framed=leak, frame_color="#d62728", mark="!", alert=bool(leak.any()),
                        xlabel="key slot", ylabel="item (its keys)"))
    same = int((run.tokens == ref.tokens).all(1).sum())
    summary = (f"padding {padding}, positions {positions}, mask {mask}, KV cache {'on' if kv_cache else 'off'}: "
               f"{same}/{len(PROMPTS)} items match the reference; step {step}: weight on pads "
               f"{float(weights[pads].sum()):.2g}")
    return View(tuple(panels), summary, caption="numbers: the probability of each chosen token    ×: differs from "
                "the prompt alone    hatched: a pad key (_)    !: weight on a pad")


def generation_explorer() -> widgets.VBox:
    """Padding side, position ids, mask and KV cache -> continuations and the attention at one step."""
    for combination in ((s, p, m, c) for s in SIDES for p in POSITIONS for m in MASKS for c in (True, False)):
        batched(*combination)                                                  # precompute all 24 runs
    controls = {
        "padding": widgets.ToggleButtons(options=SIDES, value="left", description="padding"),
        "positions": widgets.Dropdown(options=tuple(POSITIONS), value="from the mask", description="position ids"),
        "mask": widgets.Dropdown(options=MASKS, value="every step", description="mask"),
        "kv_cache": widgets.Checkbox(value=True, description="KV cache"),
        "step": widgets.IntSlider(value=2, min=1, max=STEPS, description="step"),
    }
    return explorer(controls, generation_view)
