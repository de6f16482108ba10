"""Chapter 9's explorer: padding side, position ids, mask and KV cache -> each item's continuation next to
the one-at-a-time reference, and the attention of the newest query at one decoding step.
Every combination is generated once and cached (helpers.generation.batched): an update only builds the tables.
"""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers.explorers.base import RED, Explorer, Panel, View, explorer
from helpers.generation import MASKS, POSITIONS, PROMPTS, SIDES, STEPS, batched, decode, padded_batch, reference
from helpers.tiny_lm import PAD_ID


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
                    frame_color=RED, mark="×", red_rows=wrong_rows, alert=bool(wrong_rows),
                    xlabel="new token", ylabel="")]
    seq = torch.cat([ids, run.tokens], 1)[:, :ids.shape[1] + step - 1]          # the keys at this step
    weights, pads = run.weights[step - 1], seq == PAD_ID
    leak = pads & (weights > 0.005)
    panels.append(Panel(weights, [decode(row) for row in seq], [str(j) for j in range(seq.shape[1])],
                        title=f"step {step}: the newest query's attention\n(last block, mean over heads)",
                        masked=pads, framed=leak, frame_color=RED, mark="!", alert=bool(leak.any()),
                        xlabel="key slot", ylabel="item (its keys)"))
    same = int((run.tokens == ref.tokens).all(1).sum())
    summary = (f"padding {padding}, positions {positions}, mask {mask}, KV cache {'on' if kv_cache else 'off'}: "
               f"{same}/{len(PROMPTS)} items match the reference; step {step}: weight on pads, summed over the "
               f"{len(PROMPTS)} items: {float(weights[pads].sum()):.2g}")
    return View(tuple(panels), summary, caption="numbers: the probability of each chosen token    ×: differs from "
                "the prompt alone    hatched: a pad key (_)    !: weight on a pad")


def generation_explorer() -> Explorer:
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
