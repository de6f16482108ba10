"""Chapter 9's running example: batched greedy generation with helpers.tiny_lm.

The model is trained in a few seconds on counting lines ("3 5 7 9 1 3 5 . . . . ."); `trained_model()`
trains it once per process (seeded, one thread, deterministic), so the notebook and the explorer share it.
`batched()` generates the padded batch for one choice of padding side, position ids, mask and KV cache,
once per combination (cached): the explorer (helpers/explorers/generation.py) only builds tables from it.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import torch
from torch import nn

from helpers.tiny_lm import PAD_ID, TOKENS, Generation, TinyLM, generate
from helpers.training import Adam, deterministic

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
    """Full-batch AdamW on next-token cross-entropy, seeded, on one thread with deterministic kernels:
    every run is the same. The optimizer is helpers.training.Adam, torch.optim.AdamW's update written out."""
    torch.manual_seed(seed)
    optimizer, losses = Adam(model.parameters(), weight_decay=0.01), []   # 0.01: torch.optim.AdamW's default
    with deterministic():
        for _ in range(steps):
            logits = model(corpus[:, :-1]).logits                       # predict token t + 1 from tokens <= t
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), corpus[:, 1:].flatten())
            loss.backward()
            optimizer.step(lr)
            losses.append(loss.item())
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
