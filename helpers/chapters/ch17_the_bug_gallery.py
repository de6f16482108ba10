"""Chapter 17: the bug gallery. Diagnose models you did not write.

Twelve real mask bugs, each rebuilt as one small module (or, for pad = eos, one collator) with three variants:
"buggy" (the bug as its thread reports it), "almost" (a plausible fix that leaves part of it) and "fixed". Every
module follows helpers.checks' convention `module(x, key_padding_mask, attn_mask[, position_ids]) -> output`,
x (N, L, E) float32, key_padding_mask bool (N, L) True = pad; each owns its mask and ignores attn_mask. The
helpers' masks (`blocked`) say True = blocked; SDPA's and transformers' bool masks say True = may attend.

`GALLERY` lists the entries (thread, chapter, symptom, what to expect); `build(key, variant)` builds one;
`diagnosis(key, variant)` runs helpers.diagnose on it (cached: the explorer only draws); `gallery_table()` is
step 2's table. The hybrid entry has its own causal depthwise convolution (chapter 16 teaches it).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn
from transformers import masking_utils
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from helpers import arguments, diagnose, language
from helpers.diagnose import CODES
from helpers.exercises import Mistake, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, say
from helpers.masks import causal_mask

E, HEADS = 8, 2
LENGTH = 8          # the longest padded length diagnose tries on the gallery's modules (its default is 16)
DOC = 4             # the packed entry's documents: 4 tokens each, back to back
WINDOW = 3          # the window entry: each query sees 3 keys, itself included
VARIANTS = ("buggy", "almost", "fixed")
ROOT = Path(__file__).resolve().parents[2]


def real_index(key_padding_mask: torch.Tensor) -> torch.Tensor:
    """Each position's index among the real tokens of its item (pads: 0), long (N, L): the position ids that
    generate builds from the mask, (mask.cumsum(-1) - 1).clamp(min=0)."""
    return ((~key_padding_mask).long().cumsum(-1) - 1).clamp(min=0)


class Layer(nn.Module):
    """One seeded self-attention layer (E = 8, 2 heads) in eager arithmetic; subclasses decide its mask. It has no
    is_causal of its own: CausalLayer says True."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(arguments.integer(seed, "seed"))
        self.qkv, self.out = nn.Linear(E, 3 * E), nn.Linear(E, E)
        self.embed_dim = E
        self.eval()

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """q, k, v from x (N, L, E): each (N, heads, L, E / heads)."""
        q, k, v = self.qkv(x).chunk(3, -1)
        return tuple(t.view(t.shape[0], t.shape[1], HEADS, -1).transpose(1, 2) for t in (q, k, v))

    def merge(self, out: torch.Tensor) -> torch.Tensor:
        """(N, heads, L, E / heads) -> the output projection, (N, L, E)."""
        return self.out(out.transpose(1, 2).reshape(out.shape[0], out.shape[2], E))

    def attend(self, x: torch.Tensor, blocked: torch.Tensor, fill: float | None = None) -> torch.Tensor:
        """Softmax attention of x on itself with `blocked` (broadcastable to (N, heads, L, L), True = blocked)
        filled with `fill` (default: the dtype's lowest finite value, so a fully blocked row is uniform)."""
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-1, -2) * (E // HEADS) ** -0.5
        scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min if fill is None else fill)
        return self.merge(scores.softmax(-1) @ v)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        return self.attend(x, self.blocked(key_padding_mask))

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        """The mask this module builds, (N, 1, L, L), True = blocked: causal and the pads."""
        return causal_mask(kpm.shape[1]) | kpm[:, None, None, :]


class CausalLayer(Layer):
    """A Layer that says it is causal (diagnose's expectation for a plain module is its is_causal)."""
    is_causal = True


# --- 1. batched generation: position ids (unslothai/unsloth #3699) ---

class SharedPositions(CausalLayer):
    """Learned absolute positions, taken as 0 … L - 1 for every item: the caller's position_ids are ignored (in
    the thread, one shared cache_position was used as every row's position ids), so a left-padded item's real
    tokens sit at the wrong positions."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.positions = nn.Embedding(2 * LENGTH + 8, E)

    def place(self, kpm: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        return torch.arange(kpm.shape[1]).expand(kpm.shape)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None,
                position_ids: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.positions(self.place(key_padding_mask, position_ids))
        return self.attend(x, self.blocked(key_padding_mask))


class PositionsIfGiven(SharedPositions):
    """Almost: the caller's position ids are used when given; without them, 0 … L - 1 again."""

    def place(self, kpm: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        return super().place(kpm, None) if position_ids is None else position_ids


class PositionsFromMask(SharedPositions):
    """Fixed: without position ids, they are counted over the real tokens, as generate does."""

    def place(self, kpm: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        return real_index(kpm) if position_ids is None else position_ids


# --- 2. pad_token = eos_token (huggingface/trl PR #6357): a collator, not a model ---

EOS, PAD = 1, 0


def collate(sequences: list[list[int]], variant: str = "buggy") -> dict[str, torch.Tensor]:
    """Right-pad token sequences (each ends with EOS = 1) into input_ids, attention_mask and labels (-100 = no
    loss). buggy: pad with EOS and mask every EOS (pad_token = eos_token; attention and labels from the ids);
    almost: pad with EOS, the attention mask from the lengths, but the labels still from the ids; fixed: the
    attention mask and the labels from the lengths, so each sequence's own EOS is trained."""
    _variant(variant)
    L = max(len(s) for s in sequences)
    pad = EOS
    ids = torch.tensor([s + [pad] * (L - len(s)) for s in sequences])
    by_length = torch.tensor([[1] * len(s) + [0] * (L - len(s)) for s in sequences])
    by_ids = (ids != pad).long()
    attention = by_ids if variant == "buggy" else by_length
    labels = ids.masked_fill((by_length if variant == "fixed" else by_ids) == 0, -100)
    return {"input_ids": ids, "attention_mask": attention, "labels": labels}


def eos_trained(batch: dict[str, torch.Tensor], sequences: list[list[int]]) -> int:
    """How many sequences have a loss on their own EOS (the last real token)."""
    return sum(int(batch["labels"][i, len(s) - 1] == EOS) for i, s in enumerate(sequences))


SEQUENCES = [[5, 6, 7, EOS], [8, 9, EOS], [5, 9, 8, 7, 6, EOS]]


def label_findings(variant: str) -> list[str]:
    """The chapter's own check for this entry (diagnose sees models, not labels): "eos-untrained" when a
    sequence's EOS gets no loss, "eos-unattended" when the attention mask hides a real EOS."""
    batch = collate(SEQUENCES, variant)
    codes = []
    if eos_trained(batch, SEQUENCES) < len(SEQUENCES):
        codes.append("eos-untrained")
    if any(int(batch["attention_mask"][i, len(s) - 1]) == 0 for i, s in enumerate(SEQUENCES)):
        codes.append("eos-unattended")
    return codes


# --- 3. a packed batch leaking across documents (alex-hh/profam #495) ---

class PackedCausal(CausalLayer):
    """Documents of DOC = 4 tokens packed back to back (counted over the real tokens); only the causal mask is
    built, so every document sees the ones before it."""

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        return super().blocked(kpm)


class PackedBidirectional(CausalLayer):
    """Almost: the block-diagonal document mask, but it replaced the causal one instead of joining it."""

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        doc = real_index(kpm) // DOC
        return (doc[:, :, None] != doc[:, None, :])[:, None] | kpm[:, None, None, :]


class PackedFixed(CausalLayer):
    """Fixed: causal and within the document."""

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        return PackedBidirectional.blocked(self, kpm) | causal_mask(kpm.shape[1])


def packed_expectation(length: int = LENGTH) -> torch.Tensor:
    """The packed entry's intended mask, bool (length, length), True = blocked: causal, within each document."""
    doc = torch.arange(length) // DOC
    return causal_mask(length) | (doc[:, None] != doc[None, :])


# --- 4. an fp16 fill that overflows (ahrefs/ocannl #548) ---

class HalfFill(CausalLayer):
    """Two attention passes computed in float16, with an additive mask built as -1e9 in float32 and cast to
    float16, where it becomes -inf. A left pad under the causal mask sees only pads: its row is all -inf, softmax
    gives NaN, and the second pass carries it into real rows (weight 0 times value NaN is NaN)."""

    def fill(self) -> float:
        return -1e9

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        blocked = self.blocked(key_padding_mask)
        h = x.half()
        for _ in range(2):
            q, k, v = self.heads_half(h)
            scores = q @ k.transpose(-1, -2) * (E // HEADS) ** -0.5
            if self.additive:     # an additive mask built in float32, cast to the compute dtype
                scores = scores + torch.zeros(blocked.shape).masked_fill(blocked, self.fill()).half()
            else:
                scores = scores.masked_fill(blocked, self.fill())
            h = self.merge_half(scores.softmax(-1) @ v)
        return h.float()

    additive = True

    def heads_half(self, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q, k, v = F.linear(h, self.qkv.weight.half(), self.qkv.bias.half()).chunk(3, -1)
        return tuple(t.view(t.shape[0], t.shape[1], HEADS, -1).transpose(1, 2) for t in (q, k, v))

    def merge_half(self, out: torch.Tensor) -> torch.Tensor:
        out = out.transpose(1, 2).reshape(out.shape[0], out.shape[2], E)
        return F.linear(out, self.out.weight.half(), self.out.bias.half())


class HalfFillFloat32Min(HalfFill):
    """Almost (ours): the fill is finfo(float32).min, the dtype the mask was built in; cast to float16 it is -inf
    too. (A cousin in bf16, NVIDIA-NeMo/Automodel PR #2658: two finfo(bf16).min planes, causal and padding, added
    into one additive mask, overflow to -inf where both mask.)"""

    def fill(self) -> float:
        return torch.finfo(torch.float32).min


class HalfFillFixed(HalfFill):
    """Fixed: masked_fill with the compute dtype's own lowest value, finfo(float16).min: a fully blocked row is
    uniform and finite."""
    additive = False

    def fill(self) -> float:
        return torch.finfo(torch.float16).min


# --- 5. dead rows with NaN gradients (lucidrains/nGPT-pytorch #11) ---

class DeadRows(CausalLayer):
    """Causal attention with the pads filled with -inf: a left pad's row is fully blocked, its softmax NaN. The
    loss reads real positions only, yet the gradients of qkv and of the output weight are NaN (only the output
    bias's stays finite)."""

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        return self.attend(x, self.blocked(key_padding_mask), fill=float("-inf"))


class DeadRowsZeroed(DeadRows):
    """Almost: the NaN outputs at the pads are zeroed (nan_to_num) after the layer. The forward is clean; the
    output projection's gradient still multiplies the NaN rows by their zero gradient, and 0 * NaN is NaN."""

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        return super().forward(x, key_padding_mask, attn_mask).nan_to_num(0.0)


class DeadRowsFixed(CausalLayer):
    """Fixed: a finite fill (finfo.min): a dead row is uniform, finite, and its gradient is finite."""


# --- 6. cross-attention made causal by a missing attribute (huggingface/transformers #48172) ---

class LibraryLayer(Layer):
    """Attention through transformers' own mask builder (masking_utils.sdpa_mask) and sdpa integration
    (sdpa_attention_forward), whose is_causal is `getattr(module, "is_causal", True)` when the mask is None."""

    def library_mask(self, kpm: torch.Tensor, function: Callable, **options: object) -> torch.Tensor | None:
        N, L = kpm.shape
        return masking_utils.sdpa_mask(batch_size=N, q_length=L, kv_length=L, mask_function=function,
                                       attention_mask=~kpm, **options)

    def library_attend(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        q, k, v = self.heads(x)
        out, _ = sdpa_attention_forward(self, q, k, v, mask, scaling=(E // HEADS) ** -0.5)   # (N, L, heads, d)
        return self.out(out.reshape(out.shape[0], out.shape[1], E))

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        mask = self.library_mask(key_padding_mask, self.mask_function(), allow_is_causal_skip=False,
                                 allow_is_bidirectional_skip=True)
        return self.library_attend(x, mask)

    def mask_function(self) -> Callable:
        return masking_utils.bidirectional_mask_function


class CrossNoFlag(LibraryLayer):
    """A cross-attention (here reading its own x, so that the checks can change it) whose class never sets
    is_causal. Nothing padded: the builder returns None and the integration's default True makes it causal."""


class CrossFlagOnConfig(LibraryLayer):
    """Almost: the flag set where the integration does not read it (a config-style `causal = False`): the module
    still has no is_causal, so it stays causal when nothing is padded."""
    causal = False


class CrossFixed(LibraryLayer):
    """Fixed: the module says what it is, is_causal = False."""
    is_causal = False


# --- 7. a bidirectional flag that did not reach the mask (huggingface/transformers #46077) ---

class FlagLost(LibraryLayer):
    """A bidirectional model: its module says is_causal = False, but the mask builder was never told, so it
    builds a causal mask whenever something is padded (nothing padded: no mask, and the module's False wins)."""
    is_causal = False

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        return self.library_attend(x, self.library_mask(key_padding_mask, masking_utils.causal_mask_function))


class FlagOnBuilderOnly(LibraryLayer):
    """Almost: the builder now builds the bidirectional mask, but the module's is_causal was left True, so with
    nothing padded (no mask) the integration runs it causal."""
    is_causal = True


class FlagFixed(LibraryLayer):
    """Fixed: the flag reaches both, the mask builder and the module's is_causal."""
    is_causal = False


# --- 8. a multi-token forward against a cache (hyprstream/hyprstream PR #1521) ---

class CachedTopLeft(SharedPositions):
    """Learned positions counted over the real tokens and a key-value cache (forward_with_cache). A step of T
    new tokens after `offset` cached ones builds its mask as tril of a (T, offset + T) matrix: top-left, so new
    token i sees keys 0 … i only, and the cached history is hidden."""

    def place(self, kpm: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        return real_index(kpm)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        return super().forward(x, key_padding_mask, attn_mask)

    def step_mask(self, T: int, offset: int) -> torch.Tensor:
        return ~torch.ones(T, offset + T, dtype=torch.bool).tril()

    def step_positions(self, T: int, offset: int) -> torch.Tensor:
        return offset + torch.arange(T)

    def forward_with_cache(self, x: torch.Tensor, cache: tuple | None) -> tuple[torch.Tensor, tuple]:
        T, offset = x.shape[1], 0 if cache is None else cache[0].shape[2]
        q, k, v = self.heads(x + self.positions(self.step_positions(T, offset)))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        scores = (q @ k.transpose(-1, -2) * (E // HEADS) ** -0.5).masked_fill(self.step_mask(T, offset), -1e9)
        return self.merge(scores.softmax(-1) @ v), (k, v)


class CachedRestartedPositions(CachedTopLeft):
    """Almost: the mask is aligned bottom-right now, but the new tokens' positions restart at 0."""

    def step_mask(self, T: int, offset: int) -> torch.Tensor:
        return causal_mask(T, offset=offset)

    def step_positions(self, T: int, offset: int) -> torch.Tensor:
        return torch.arange(T)


class CachedFixed(CachedRestartedPositions):
    """Fixed: the bottom-right mask and positions from the offset."""

    def step_positions(self, T: int, offset: int) -> torch.Tensor:
        return offset + torch.arange(T)


# --- 9. a window off by one between two conventions (huggingface/transformers #39408) ---

class WindowPlusOne(CausalLayer):
    """A causal window meant to hold WINDOW = 3 keys (the query included), passed to a kernel whose window_size
    counts the keys before the query: it sees WINDOW + 1."""

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        i = torch.arange(kpm.shape[1])
        return ((i[:, None] - i[None, :]) > self.reach()) | causal_mask(kpm.shape[1]) | kpm[:, None, None, :]

    def reach(self) -> int:
        return WINDOW


class WindowBothSides(WindowPlusOne):
    """Almost: window_size (WINDOW - 1, WINDOW - 1), the right count, but on both sides and without the causal
    flag, so each query also sees WINDOW - 1 later keys."""

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        i = torch.arange(kpm.shape[1])
        return ((i[:, None] - i[None, :]).abs() > WINDOW - 1) | kpm[:, None, None, :]


class WindowFixed(WindowPlusOne):
    """Fixed: the WINDOW - 1 keys before the query, and the causal flag."""

    def reach(self) -> int:
        return WINDOW - 1


# --- 10. a bool mask's polarity flipped between two libraries (NVIDIA/TransformerEngine #614) ---

class PolarityFlipped(CausalLayer):
    """The key padding mask in nn.MultiheadAttention's convention (True = pad) handed to SDPA, whose bool mask
    says True = may attend: the module attends to the pads only (unpadded, to nothing: SDPA returns 0)."""

    def allowed(self, kpm: torch.Tensor) -> torch.Tensor:
        return kpm[:, None, None, :] & ~causal_mask(kpm.shape[1])

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        return self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=self.allowed(key_padding_mask)))


class PolarityHalfFixed(PolarityFlipped):
    """Almost: the padding mask is inverted now, but the causal mask (the helpers' causal_mask, True = blocked)
    went in uninverted: each query may attend to the later keys only."""

    def allowed(self, kpm: torch.Tensor) -> torch.Tensor:
        return ~kpm[:, None, None, :] & causal_mask(kpm.shape[1])


class PolarityFixed(PolarityFlipped):
    """Fixed: both masks turned into SDPA's True = may attend."""

    def allowed(self, kpm: torch.Tensor) -> torch.Tensor:
        return ~kpm[:, None, None, :] & ~causal_mask(kpm.shape[1])


# --- 11. a convolution mixing pads before attention (huggingface/transformers #31540; the fix: PR #32677) ---

KERNEL = 3


class ConvMixesPads(CausalLayer):
    """A hybrid block: a causal depthwise convolution along the sequence (kernel 3, each token mixed with the 2
    before it), then masked causal attention. The convolution has no mask: a left-padded item's first real
    tokens read the pads."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.conv = nn.Conv1d(E, E, KERNEL, groups=E)

    def causal_conv(self, x: torch.Tensor) -> torch.Tensor:
        """(N, L, E) -> (N, L, E): output t mixes inputs t - 2, t - 1, t (zeros before the start)."""
        return self.conv(F.pad(x.transpose(1, 2), (KERNEL - 1, 0))).transpose(1, 2)

    def mix(self, x: torch.Tensor, kpm: torch.Tensor) -> torch.Tensor:
        return self.causal_conv(x)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        return self.attend(self.mix(x, key_padding_mask), self.blocked(key_padding_mask))


class ConvMaskedAfter(ConvMixesPads):
    """Almost: the pads are zeroed after the convolution, too late: the real tokens' outputs already hold them."""

    def mix(self, x: torch.Tensor, kpm: torch.Tensor) -> torch.Tensor:
        return self.causal_conv(x).masked_fill(kpm[..., None], 0.0)


class ConvFixed(ConvMixesPads):
    """Fixed: the pads are zeroed before the convolution (and after it), as transformers PR #32677 does for Mamba."""

    def mix(self, x: torch.Tensor, kpm: torch.Tensor) -> torch.Tensor:
        return self.causal_conv(x.masked_fill(kpm[..., None], 0.0)).masked_fill(kpm[..., None], 0.0)


# --- 12. pooling that divides by the padded length (HKUDS/LightRAG PR #3675) ---

class MeanOverPadded(Layer):
    """A bidirectional encoder whose sentence vector (added to every token's output here, so that the checks
    see it) is the mean over all L positions, pads included."""
    is_causal = False

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        return kpm[:, None, None, :]

    def pool(self, out: torch.Tensor, kpm: torch.Tensor) -> torch.Tensor:
        return out.mean(1)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        out = self.attend(x, self.blocked(key_padding_mask))
        return out + self.pool(out, key_padding_mask)[:, None]


class SumOverPadded(MeanOverPadded):
    """Almost: the pads are zeroed, but the sum is still divided by the padded length L."""

    def pool(self, out: torch.Tensor, kpm: torch.Tensor) -> torch.Tensor:
        return out.masked_fill(kpm[..., None], 0.0).sum(1) / kpm.shape[1]


class MeanFixed(MeanOverPadded):
    """Fixed: the real tokens' sum over their count."""

    def pool(self, out: torch.Tensor, kpm: torch.Tensor) -> torch.Tensor:
        real = (~kpm).float()[..., None]
        return (out * real).sum(1) / real.sum(1).clamp(min=1)


# --- the gallery ---

class Entry(NamedTuple):
    """One gallery entry: its bug, where it was reported, what the reporter saw, and how it is checked."""
    title: str
    thread: str          # repository and number
    year: int
    chapter: str         # the notebook that teaches it
    symptom: str         # what the reporter saw (in our words)
    variants: tuple      # (buggy, almost, fixed) classes; None for the collator entry
    expect: object = None        # what diagnose checks against (None: the module's is_causal)
    window: int | None = None
    dtype: torch.dtype | None = None


GALLERY: dict[str, Entry] = {
    "position ids": Entry(
        "batched generation: one set of position ids for every row", "unslothai/unsloth #3699", 2025,
        "09_batched_generation.ipynb", "the longest prompt of a left-padded batch is right, the others garbage",
        (SharedPositions, PositionsIfGiven, PositionsFromMask)),
    "pad = eos": Entry(
        "pad_token = eos_token: the EOS is masked with the pads", "huggingface/trl PR #6357", 2026,
        "12_masks_in_training.ipynb",
        "with pad_token_id == eos_token_id, masks built by matching the pad id gave the closing EOS the label -100 "
        "(the model never learns to stop) and took attention from real tokens equal to the pad id", None),
    "packing": Entry(
        "a packed batch leaking across documents", "alex-hh/profam #495", 2025,
        "10_packing_and_the_cost_of_padding.ipynb",
        "accuracy far too good on packed copies: later documents read earlier ones",
        (PackedCausal, PackedBidirectional, PackedFixed), expect=packed_expectation()),
    "fp16 fill": Entry(
        "an fp16 fill that overflows to -inf", "ahrefs/ocannl #548", 2026, "07_dead_rows_and_fast_paths.ipynb",
        "a -1e9 mask constant does not fit float16 and blocks the model at f16",
        (HalfFill, HalfFillFloat32Min, HalfFillFixed), dtype=torch.float16),
    "dead rows": Entry(
        "dead rows with NaN gradients", "lucidrains/nGPT-pytorch #11", 2024, "07_dead_rows_and_fast_paths.ipynb",
        "NaN gradients although the loss ignores the fully masked rows",
        (DeadRows, DeadRowsZeroed, DeadRowsFixed)),
    "cross-attention": Entry(
        "cross-attention made causal by a missing attribute", "huggingface/transformers #48172", 2026,
        "14_who_decides_causality.ipynb", "text tokens ignore the later image tokens unless a mask is passed",
        (CrossNoFlag, CrossFlagOnConfig, CrossFixed), expect="bidirectional"),
    "bidirectional flag": Entry(
        "a bidirectional flag that did not reach the mask", "huggingface/transformers #46077", 2026,
        "14_who_decides_causality.ipynb", "a bidirectional encoder answers differently once a batch is padded",
        (FlagLost, FlagOnBuilderOnly, FlagFixed), expect="bidirectional"),
    "cache offset": Entry(
        "a multi-token forward against a cache with the wrong offset", "hyprstream/hyprstream PR #1521", 2026,
        "15_many_tokens_against_a_cache.ipynb",
        "a prefix-cache hit with a suffix of 2+ tokens answers as if the prompt were gone",
        (CachedTopLeft, CachedRestartedPositions, CachedFixed)),
    "window": Entry(
        "a sliding window off by one between two conventions", "huggingface/transformers #39408", 2025,
        "13_windows_prefixes_and_chunks.ipynb", "flash attention and eager disagree on long inputs",
        (WindowPlusOne, WindowBothSides, WindowFixed), expect="sliding_window", window=WINDOW),
    "bool polarity": Entry(
        "a bool mask's polarity flipped between two conventions", "NVIDIA/TransformerEngine #614", 2024,
        "06_mask_conventions.ipynb", "two attention backends give different outputs for the same mask",
        (PolarityFlipped, PolarityHalfFixed, PolarityFixed)),
    "hybrid convolution": Entry(
        "a convolution that mixes pads before attention (Mamba's; here a hybrid block)",
        "huggingface/transformers #31540", 2024,
        "16_masks_outside_softmax.ipynb", "batched (padded) generation differs from one prompt at a time",
        (ConvMixesPads, ConvMaskedAfter, ConvFixed)),
    "mean pooling": Entry(
        "pooling that divides by the padded length", "HKUDS/LightRAG PR #3675", 2026,
        "08_a_trained_classifier.ipynb", "a text's embedding changes with the other texts in its batch",
        (MeanOverPadded, SumOverPadded, MeanFixed)),
}
KEYS = tuple(GALLERY)
# each entry's and each variant's name in the Japanese edition (the explorer's options and its summary line)
KEYS_JA = {"position ids": "位置 ID", "pad = eos": "パッド = EOS", "packing": "パッキング",
           "fp16 fill": "fp16 の埋め値", "dead rows": "死んだ行", "cross-attention": "クロスアテンション",
           "bidirectional flag": "双方向のフラグ", "cache offset": "キャッシュのオフセット", "window": "ウィンドウ",
           "bool polarity": "bool の極性", "hybrid convolution": "ハイブリッドの畳み込み",
           "mean pooling": "平均プーリング"}
VARIANTS_JA = {"buggy": "バグ版", "almost": "直しきれていない版", "fixed": "修正版"}  # as step 2 names them


def _key(key: object) -> str:
    if key not in GALLERY:
        raise ValueError(f"key must be one of {list(GALLERY)}, got {key!r}")
    return key   # type: ignore[return-value]


def _variant(variant: object) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    return variant   # type: ignore[return-value]


def build(key: str, variant: str = "buggy") -> nn.Module:
    """The module of one gallery entry in one variant ("buggy", "almost", "fixed"), seeded."""
    entry = GALLERY[_key(key)]
    if entry.variants is None:
        raise ValueError(f"{key!r} is a collator, not a module: use ch17.collate(sequences, variant)")
    return entry.variants[VARIANTS.index(_variant(variant))]()


def run_diagnose(key: str, module: object) -> object:
    """helpers.diagnose on a module of entry `key`, with the entry's expectation, window and dtype, at LENGTH."""
    entry = GALLERY[_key(key)]
    return diagnose(module, expect=entry.expect, window=entry.window, length=LENGTH, dtype=entry.dtype)


class Result(NamedTuple):
    """One variant's diagnosis, in portable terms: the codes (warnings included), passed, and each finding's
    part of the model and measured size as a bound."""
    codes: tuple[str, ...]
    passed: bool
    sizes: tuple[str, ...]       # per finding: "NaN", "> 1e-1", ... (the worst difference, rounded down a decade)
    report: object = None        # the Diagnosis (None for the collator entry)


def bound(message: str) -> str:
    """The first measured difference in a finding's message as a portable bound: "NaN", "> 1e-2" (the decade
    below it, floored one further so rounding noise cannot move it), or "" if the message has none."""
    if "NaN" in message.split(" Usually")[0] or "nan" in message.split(" Usually")[0]:
        return "NaN"
    found = re.search(r"(?:difference|by up to|differs? by|up to) (?:of )?([0-9.]+(?:e[-+]?[0-9]+)?)", message)
    if not found:
        return ""
    value = float(found.group(1))
    if value <= 0:
        return ""
    import math
    return f"> 1e{math.floor(math.log10(value)) - 1}"


@functools.cache
def diagnosis(key: str, variant: str) -> Result:
    """diagnose's result for one entry and variant, computed once (the explorer and the table share it)."""
    _key(key), _variant(variant)
    if GALLERY[key].variants is None:
        codes = tuple(label_findings(variant))
        return Result(codes, not codes, ("",) * len(codes))
    report = run_diagnose(key, build(key, variant))
    return Result(tuple(report.codes), report.passed, tuple(bound(f.message) for f in report.findings), report)


STORED = Path(__file__).with_name("ch17_gallery.json")


def precompute() -> dict:
    """Every entry and variant's diagnosis in JSON-ready form (codes, passed, sizes, expected and inferred masks,
    1 = blocked): what the explorer shows. `python -c "from helpers.chapters import ch17_the_bug_gallery as m;
    m.write_stored()"` writes it to STORED; the chapter's tests check that it equals a fresh run."""
    out = {}
    for key in KEYS:
        for variant in VARIANTS:
            r = diagnosis(key, variant)
            patterns = [] if r.report is None else r.report.to_dict()["patterns"][:1]
            out[f"{key}/{variant}"] = {"codes": list(r.codes), "passed": r.passed, "sizes": list(r.sizes),
                                       "patterns": [{k: p[k] for k in ("expected", "inferred")} for p in patterns]}
    return out


def write_stored() -> None:
    STORED.write_text(json.dumps(precompute(), indent=0, ensure_ascii=False) + "\n")


@functools.cache
def stored() -> dict:
    """STORED, read once."""
    return json.loads(STORED.read_text())


def gallery_table(variants: tuple[str, ...] = ("buggy", "fixed")) -> str:
    """Step 2's table, from STORED: each entry, its thread, and diagnose's codes for each variant."""
    lines = [f"{'entry':19s} {'thread':40s} " + " ".join(f"{v:48s}" for v in variants).rstrip()]
    for key, entry in GALLERY.items():
        cells = []
        for v in variants:
            r = stored()[f"{key}/{v}"]
            codes = f" ({', '.join(r['codes'])})" if r["codes"] else ""
            cells.append(("passed" if r["passed"] else "FAILED") + codes)
        thread = f"{entry.thread} ({entry.year})"
        lines.append((f"{key:19s} {thread:40s} " + " ".join(f"{c:48s}" for c in cells)).rstrip())
    return "\n".join(lines)


# --- step 1: the method, one page ---

SYMPTOMS = (
    ("a later token changes earlier outputs; loss too good", "future token perturbed", "future-leak"),
    ("a padded batch answers differently from one item", "batched row == the row alone", "pad-leak, batch-dependence"),
    ("generation breaks after a prefix-cache hit or a chunked prefill", "cached/chunked == full", "cache-mismatch"),
    ("NaN at step 0, or NaN gradients", "finite outputs, gradient check", "nan-forward, nan-gradient"),
    ("the wrong tokens are seen (window, documents, encoder)", "mask inference", "over-masking, window-mismatch, "
                                                                                  "document-leak"),
)


# --- step 3: the sweep's committed table ---

def sweep(path: Path | None = None) -> dict:
    """docs/diagnose-sweep.json: its meta and rows (one per architecture and attention implementation)."""
    return json.loads((path or ROOT / "docs" / "diagnose-sweep.json").read_text())


def sweep_summary(data: dict) -> dict[str, int]:
    """Counts from the sweep's rows: architectures, runs, built, passed, with findings (errors included)."""
    rows = data["rows"]
    built = [r for r in rows if r.get("built")]
    return {"architectures": len({r["model_type"] for r in rows}), "runs": len(rows), "built": len(built),
            "passed": sum(bool(r.get("passed")) for r in built),
            "with findings": sum(not r.get("passed") for r in built),
            "architectures passed": len({r["model_type"] for r in built if r.get("passed")})}


def sweep_failures(data: dict) -> list[tuple[str, str, str]]:
    """The built runs that did not pass: (architecture, attention, codes)."""
    return [(r["model_type"], r["attn_implementation"], ", ".join(r.get("codes") or []) or "error")
            for r in data["rows"] if r.get("built") and not r.get("passed")]


# --- the explorer ---

def _panel_mask(key: str, variant: str) -> tuple[Panel, ...]:
    """The expected against the inferred mask (from diagnose's pattern check), or, for the collator, its labels."""
    if GALLERY[key].variants is None:
        batch = collate(SEQUENCES, variant)
        trained = (batch["labels"] != -100).float()
        own_eos = torch.zeros(trained.shape, dtype=torch.bool)     # each sequence's own EOS, not the EOS pads
        for i, s in enumerate(SEQUENCES):
            own_eos[i, len(s) - 1] = True
        cols = [str(j) for j in range(trained.shape[1])]
        rows = [say(f"seq {i}", f"系列 {i}") for i in range(trained.shape[0])]
        return (Panel(trained, rows, cols, title=say("labels: 1 = trained on (own EOS framed)",
                                                     "ラベル：1 = 学習に使う（各系列の EOS を枠で示す）"),
                      masked=trained == 0, framed=own_eos, frame_color=RED, fmt=".0f",
                      xlabel=say("position", "位置"), ylabel=say("sequence", "系列")),)
    patterns = stored()[f"{key}/{variant}"]["patterns"]
    if not patterns:
        return ()
    expected, inferred = (torch.tensor(patterns[0][k], dtype=torch.bool) for k in ("expected", "inferred"))
    names = [str(i) for i in range(expected.shape[0])]
    wrong = expected != inferred
    axes = {"xlabel": say("key", "キー"), "ylabel": say("query", "クエリ")}
    return (Panel((~expected).float(), names, names, title=say("expected mask (1 = may depend)",
                                                               "期待するマスク（1 = 依存してよい）"),
                  masked=expected, fmt=".0f", **axes),
            Panel((~inferred).float(), names, names, title=say("mask inferred from the outputs",
                                                               "出力から推定したマスク"),
                  masked=inferred, fmt=".0f", framed=wrong, frame_color=RED, mark="×", alert=bool(wrong.any()),
                  **axes))


# why an entry whose two masks agree still fails, where the codes alone do not say it
AGREEING = {
    "fp16 fill": Bilingual("its NaN on left-padded batches differs from every value, so it is a future-leak too",
                           "左パディングしたバッチで出る NaN はどの値とも等しくないので、future-leak にもなる"),
}


def gallery_view(entry: str = "packing", variant: str = "buggy") -> View:
    """One entry and variant: expected and inferred masks (the collator: its labels), and diagnose's codes."""
    return _gallery_view(_key(entry), _variant(variant), language.current())


@functools.cache
def _gallery_view(key: str, variant: str, _language: str) -> View:
    e, r = GALLERY[key], stored()[f"{key}/{variant}"]
    listed = say("; ", "、").join(f"{c} {s}" if s else c for c, s in zip(r["codes"], r["sizes"], strict=False))
    verdict = say("passed", "合格") if r["passed"] else say("FAILED", "不合格")
    check = say("diagnose", "diagnose の判定") if e.variants is not None else say("the label check",
                                                                                 "ラベルの検査の判定")
    summary = say(f"{key}, {variant} ({e.thread}): {check} {verdict}" + (f": {listed}" if listed else ""),
                  f"{KEYS_JA[key]}、{VARIANTS_JA[variant]}（{e.thread}）：{check}は{verdict}"
                  + (f"（{listed}）" if listed else ""))
    panels = _panel_mask(key, variant)
    if e.variants is None:
        caption = say("hatched: no loss (label -100)    red frame: each sequence's own EOS",
                      "斜線：損失なし（ラベル -100）　赤枠：各系列の EOS")
    elif not panels:
        caption = say("this entry fails on padded batches, caches or gradients; no mask was inferred",
                      "この項目は、パディングしたバッチ、キャッシュ、勾配の検査で失敗する。マスクは推定していない")
    else:
        caption = say("hatched: blocked (no dependence)    ×: inferred differs from expected",
                      "斜線：遮断（依存しない）　×：推定が期待と違うセル")
        pattern = r["patterns"][0]
        if pattern["expected"] == pattern["inferred"] and not r["passed"]:
            caption += say("    the masks agree: the break shows on padded batches, caches or gradients "
                           "(see the summary)",
                           "　2 つのマスクは一致する。破れは、パディングしたバッチ、キャッシュ、勾配の検査に現れる"
                           "（要約を参照）")
            if key in AGREEING:
                caption += say(f"; {AGREEING[key].en}", f"。{AGREEING[key].ja}")
    return View(panels, summary, caption)


def gallery_explorer() -> Explorer:
    """A gallery entry and a variant -> the masks expected and inferred, and diagnose's finding codes."""
    controls = {"entry": widgets.Dropdown(options=[(say(k, KEYS_JA[k]), k) for k in KEYS], value="packing",
                                          description=say("entry", "バグ")),
                "variant": widgets.ToggleButtons(options=[(say(v, VARIANTS_JA[v]), v) for v in VARIANTS],
                                                 value="buggy", description=say("variant", "版"))}
    return explorer(controls, gallery_view, Bilingual(
        "A gallery entry and a variant -> the masks expected and inferred, and diagnose's finding codes.",
        'ギャラリーの 1 つのバグと版 → 期待するマスクと推定したマスク、diagnose の所見コード'))


EXPLORERS = (gallery_explorer,)


# --- exercises: find the bug ---

class WeakFill(Layer):
    """Exercise 1: an encoder (bidirectional) for sentence classification."""
    is_causal = False

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-1, -2) * (E // HEADS) ** -0.5 - 1.0 * key_padding_mask[:, None, None, :]
        return self.merge(scores.softmax(-1) @ v)


class PeekAhead(CausalLayer):
    """Exercise 2: a decoder layer for a language model."""

    def blocked(self, kpm: torch.Tensor) -> torch.Tensor:
        return torch.ones(kpm.shape[1], kpm.shape[1], dtype=torch.bool).triu(2) | kpm[:, None, None, :]


class SeqFirst(CausalLayer):
    """Exercise 3: a decoder layer ported from a sequence-first codebase: its core works on (L, N, E)."""

    def seq_first(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[1], x.shape[0], E)

    def batch_first(self, y: torch.Tensor) -> torch.Tensor:
        return y.reshape(y.shape[1], y.shape[0], E)

    def core(self, y: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
        """The sequence-first attention: (L, N, E) -> (L, N, E)."""
        return self.attend(y.transpose(0, 1), self.blocked(key_padding_mask)).transpose(0, 1)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        return self.batch_first(self.core(self.seq_first(x), key_padding_mask))


class CacheNoMask(CachedFixed):
    """Exercise 4: a decoder layer with a key-value cache (forward_with_cache), used for chunked prefill."""

    def step_mask(self, T: int, offset: int) -> torch.Tensor:
        return torch.zeros(T, offset + T, dtype=torch.bool)


EXERCISES = {1: (WeakFill, "bidirectional"), 2: (PeekAhead, None), 3: (SeqFirst, None), 4: (CacheNoMask, None)}
SYMPTOMS_SEEN = {
    1: ("a review's class changes with the length of the longest review in its batch",
        "あるレビューの分類結果が、同じバッチでいちばん長いレビューの長さによって変わる"),
    2: ("training loss falls far below what the model later achieves when it generates",
        "学習時の損失が、生成させたときの性能に見合わないほど低くなる"),
    3: ("a prompt's output changes with the batch it is in (its size, the other prompts), even when no prompt is "
        "padded",
        "どのプロンプトもパディングしていないのに、あるプロンプトの出力が、それを入れたバッチ（バッチサイズやほかの"
        "プロンプト）によって変わる"),
    4: ("prefilling a prompt in chunks gives different text from processing it all at once",
        "プロンプトをチャンクに分けてプレフィルすると、全体を一度に処理したときと違う文章が生成される"),
}


def exercise_module(n: int) -> nn.Module:
    """The module of exercise n (1-4), seeded."""
    if n not in EXERCISES:
        raise ValueError(f"n must be one of {list(EXERCISES)}, got {n!r}")
    return EXERCISES[n][0]()


@functools.cache
def _exercise_report(n: int) -> object:
    """diagnose on exercise n's module, once."""
    return diagnose(exercise_module(n), expect=EXERCISES[n][1], length=LENGTH)


def exercise_codes(n: int) -> tuple[str, ...]:
    """The codes diagnose reports on exercise n's module, in the order found; the first is the answer (the root
    finding: the others, if any, follow from it)."""
    return tuple(c for c in _exercise_report(n).codes if c != "position-ids")


def _exercise_checks(n: int) -> frozenset[str]:
    """The checks diagnose ran (did not skip) on exercise n's module: a fix must not lose one (e.g. the cache)."""
    return frozenset(r.check for r in _exercise_report(n).ran if not r.outcome.startswith("skipped"))


def _measured(finding: object) -> str:
    """The first size a finding's message measured ("0.37", "NaN"), without its usual cause; "" if none."""
    from helpers.diagnose.report import CAUSES

    message = finding.message.removesuffix(CAUSES[finding.code].said()).strip()
    if "NaN" in message:
        return "NaN"
    found = re.search(r"(?:difference|by up to|up to|最大の差|最大) ([0-9.]+(?:e[-+]?[0-9]+)?)", message)
    return found.group(1) if found else ""


# diagnose's checks (Ran.check), in a Japanese hint
CHECKS_JA = {"determinism": "決定性", "non-finite outputs": "出力の有限性", "batch dependence": "バッチ依存",
             "padding": "パディング", "mask pattern": "マスクパターン", "no future leak": "未来の漏れ",
             "gradients": "勾配", "cache": "キャッシュ"}


def _first_line(text: str, limit: int = 160) -> str:
    line = (text.splitlines() or [""])[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _answer(answer: object) -> tuple[object, object]:
    """(code, fixed) from a two-item tuple or list; the order swapped gets its own hint."""
    if isinstance(answer, (tuple, list)) and len(answer) == 2:
        code, fixed = answer
        if not isinstance(code, str) and isinstance(fixed, str):
            raise Mistake("put the code first: (code, fixed module)",
                          "所見コードを先に書くこと。順序は（所見コード、直したモジュール）である")
        return code, fixed
    raise Mistake("give a tuple (code, fixed module): a finding code as a str, and your fixed module (a class or "
                  "an instance)",
                  "（所見コード、直したモジュール）のタプルで答えること。所見コードは文字列で、直したモジュールは"
                  "クラスかインスタンスで渡す")


def _check_fix(n: int, answer: object) -> None:
    code, fixed = _answer(answer)
    if not isinstance(code, str) or code.strip().lower() not in CODES:
        raise Mistake(f"the code must be one of diagnose's codes: {', '.join(CODES)}",
                      f"コードは diagnose の所見コード（{'、'.join(CODES)}）のどれかにすること")
    code = code.strip().lower()
    if code not in exercise_codes(n):
        raise Mistake("that is not what diagnose reports on this module: run diagnose on it and read the codes",
                      "そのコードは、このモジュールに diagnose をかけても報告されない。diagnose を実行し、報告された"
                      "コードを読むこと")
    if code != exercise_codes(n)[0]:
        raise Mistake(f"diagnose does report {code} here, but it follows from an earlier finding: give the first code "
                      "diagnose reports, the root cause",
                      f"diagnose はたしかに {code} も報告するが、それはもっと前の所見から生じたものである。diagnose が"
                      "最初に報告するコード（根本の原因）を答えること")
    try:
        module = fixed() if isinstance(fixed, type) else fixed
    except Exception as error:   # noqa: BLE001  (the learner's constructor: a hint, not a traceback)
        detail = _first_line(str(error))
        raise Mistake(f"your module could not be built: {fixed.__name__}() raised {type(error).__name__}"
                      + (f" ({detail})" if detail else ""),
                      f"直したモジュールを作れなかった。{fixed.__name__}() で {type(error).__name__} が発生した"
                      + (f"（{detail}）" if detail else "")) from None
    if not isinstance(module, nn.Module):
        raise Mistake("the fixed module must be an nn.Module (a class or an instance), e.g. a subclass of the "
                      "exercise's module",
                      "直したモジュールは nn.Module（クラスかインスタンス）にすること。たとえば、確認問題のモジュールの"
                      "サブクラスにすればよい")
    if "cache" in _exercise_checks(n) and not callable(getattr(module, "forward_with_cache", None)):
        raise Mistake("your module must keep the cache path, forward_with_cache(x, cache) -> (out, cache): without "
                      "it diagnose cannot check the chunked prefill at all",
                      "直したモジュールにも、キャッシュのコードパス forward_with_cache(x, cache) -> (out, cache) を"
                      "残すこと。これがないと、diagnose はチャンク分割プレフィルをまったく検査できない")
    report = diagnose(module, expect=EXERCISES[n][1], length=LENGTH)
    errors = [f for f in report.findings if f.severity == "error"]
    if errors:
        still = [c for c in report.codes if c != "position-ids"]
        where = errors[0].where
        where = where[len("model"):].strip(" ,()（）") if where.startswith("model") else where
        if errors[0].code == "pad-leak":   # the size measures the large values planted at the pads, not the leak
            at, at_ja = (f" ({where})", f"（{where}）") if where else ("", "")
            raise Mistake(f"diagnose still reports {', '.join(still)} on your fixed module{at}: the real outputs "
                          "still depend on the pads (the check plants large values there, so any dependence left "
                          "shows, and the size it measures does not shrink with the leak)",
                          f"直したモジュールでも、diagnose がまだ {'、'.join(still)} を報告する{at_ja}。実トークンの"
                          "出力は、まだパッドに左右されている。検査はパッドに大きな値を入れるので、わずかな依存でも"
                          "差として現れる。測った差の大きさは、漏れが小さくなっても小さくならない")
        size = _measured(errors[0])
        en = [p for p in (where, size and f"up to {size}") if p]
        ja = [p for p in (where, size and f"測った差は最大 {size}") if p]
        raise Mistake(f"diagnose still reports {', '.join(still)} on your fixed module"
                      + (f" ({'; '.join(en)})" if en else ""),
                      f"直したモジュールでも、diagnose がまだ {'、'.join(still)} を報告する"
                      + (f"（{'、'.join(ja)}）" if ja else ""))
    if report.errors:
        check, text = report.errors[0].check, report.errors[0].outcome.removeprefix("error: ")
        raised = re.match(r"\S+ raised (\w+)[^:]*: (.*)", text, re.S)   # the check's words, then the module's error
        kind, detail = ((raised.group(1), _first_line(raised.group(2), 120)) if raised else
                        ("an error", _first_line(text)))
        raise Mistake(f"your module raised {kind} when diagnose ran its {check} check ({detail})",
                      f"diagnose の{CHECKS_JA.get(check, check)}の検査で、書いたモジュールを実行すると、"
                      f"{kind if raised else 'エラー'} が発生した（{detail}）")
    lost = [r for r in report.ran if r.outcome.startswith("skipped") and r.check in _exercise_checks(n)]
    if lost:
        check = lost[0].check
        raise Mistake(f"diagnose skipped its {check} check on your module ({lost[0].outcome}), which ran on the "
                      "exercise's module: keep what the original module has",
                      f"元のモジュールでは実行できた diagnose の{CHECKS_JA.get(check, check)}の検査が、書いたモジュール"
                      "では省かれた。元のモジュールにあるものを残すこと")


@exercise
def check_1(answer: object) -> None:
    """Exercise 1: (code, fixed module) for WeakFill."""
    _check_fix(1, answer)


@exercise
def check_2(answer: object) -> None:
    """Exercise 2: (code, fixed module) for PeekAhead."""
    _check_fix(2, answer)


@exercise
def check_3(answer: object) -> None:
    """Exercise 3: (code, fixed module) for SeqFirst."""
    _check_fix(3, answer)


@exercise
def check_4(answer: object) -> None:
    """Exercise 4: (code, fixed module) for CacheNoMask."""
    _check_fix(4, answer)
