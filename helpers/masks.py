"""Build and convert attention masks.

Convention used throughout the series (nn.MultiheadAttention's):
a bool mask is True where attention is NOT allowed (padding, future).
The one other form is Hugging Face's attention_mask: integers, 1 = real token, 0 = pad. Only the functions that
read it take it (from_hf_attention_mask, positions_from_mask), and they refuse a bool mask, so that a
True-is-masked mask is never read the other way round.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch

from helpers import arguments

Fill = float | int | str


PADDING_SIDES = ("right", "left")


def key_padding_mask(lengths: Sequence[int] | torch.Tensor, max_len: int | None = None, *,
                     side: str = "right") -> torch.Tensor:
    """Bool (N, S) mask, True at padding positions, from the real lengths of N sequences.

    lengths: a list of ints (numpy or 0-d torch integers too) or a 1-D integer tensor; S = max_len or max(lengths).
    side: where the pads go, "right" (after the tokens, as in training) or "left" (before them, as in batched
    generation).
    """
    lengths, max_len = _checked_lengths(lengths, max_len)
    side = padding_side(side)
    position = torch.arange(max_len)[None, :]                      # (1, S)
    n = torch.tensor(lengths)[:, None]                             # (N, 1)
    return position >= n if side == "right" else position < max_len - n   # (N, S)


def left_pad(batch: torch.Tensor, lengths: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """The same items left-padded: a right-padded batch (N, S, ...) with each row rotated right by its pad count.

    Item i's real tokens (its first lengths[i] positions) move to the end of its row, in order, and its pads to
    the front: left_pad(x, lengths)[~key_padding_mask(lengths, S, side="left")] equals
    x[~key_padding_mask(lengths, S)]. Works for ids (N, S), masks (N, S) and embeddings (N, S, E) alike.
    """
    arguments.tensor(batch, "batch")
    if batch.dim() < 2:
        raise ValueError(f"batch must have shape (N, S, ...), got {tuple(batch.shape)}")
    N, S = batch.shape[:2]
    lengths, _ = _checked_lengths(lengths, S)
    if len(lengths) != N:
        raise ValueError(f"lengths must give one length per item of batch (N = {N}), got {len(lengths)}")
    shift = torch.tensor([S - n for n in lengths], device=batch.device)[:, None]        # (N, 1): pads per item
    source = (torch.arange(S, device=batch.device)[None, :] - shift) % S               # (N, S): read from here
    return batch.gather(1, source.view(N, S, *[1] * (batch.dim() - 2)).expand(batch.shape))


def padding_side(side: object) -> str:
    """side, which must be "right" or "left"."""
    if not isinstance(side, str) or side not in PADDING_SIDES:
        raise ValueError(f"side must be 'right' (pads last) or 'left' (pads first), got {side!r}")
    return side  # type: ignore[return-value]


def _checked_lengths(lengths: object, max_len: object) -> tuple[list[int], int]:
    """key_padding_mask's arguments as a list of ints and S."""
    if isinstance(lengths, torch.Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype.is_complex or lengths.dtype == torch.bool \
                or lengths.dim() != 1:
            raise TypeError("lengths must be a 1-D integer tensor or a list of ints, "
                            f"got {lengths.dtype} of shape {tuple(lengths.shape)}")
        lengths = lengths.tolist()
    elif getattr(lengths, "ndim", None) == 1 and hasattr(lengths, "tolist"):  # a 1-D numpy array
        lengths = list(lengths)
    if not isinstance(lengths, Sequence) or isinstance(lengths, (str, bytes)):
        raise TypeError(f"lengths must be a list of ints, got {type(lengths).__name__} {lengths!r}")
    try:
        lengths = [arguments.integer(n, "lengths[i]") for n in lengths]
    except TypeError:
        raise TypeError(f"lengths must be a list of ints, got {lengths!r}") from None
    if len(lengths) == 0:
        raise ValueError("lengths must name at least one sequence, got an empty list")
    if any(n < 0 for n in lengths):
        raise ValueError(f"lengths must be >= 0, got {lengths}")
    if max_len is None:
        if max(lengths) == 0:
            raise ValueError(f"lengths must hold at least one length > 0 when max_len is not given "
                             f"(the mask would have no columns), got {lengths}; pass max_len to pad empty sequences")
        return lengths, max(lengths)
    max_len = arguments.integer(max_len, "max_len", minimum=1)
    if max(lengths) > max_len:
        raise ValueError(f"lengths must be <= max_len={max_len}, got {lengths}")
    return lengths, max_len


def causal_mask(size: int, offset: int = 0) -> torch.Tensor:
    """Bool (size, offset + size) mask, True = blocked, aligned bottom-right: query i is position offset + i (after
    `offset` cached keys) and may not see key j > offset + i. offset 0: the square mask, True above the diagonal."""
    size = arguments.integer(size, "size", minimum=1)
    offset = arguments.integer(offset, "offset", minimum=0)
    return torch.logical_not(torch.tril(torch.ones(size, offset + size, dtype=torch.bool), diagonal=offset))


def to_sdpa_mask(mask: torch.Tensor) -> torch.Tensor:
    """Flip a True = masked mask into F.scaled_dot_product_attention's True = may attend."""
    return torch.logical_not(arguments.bool_mask(mask, "mask"))


BLOCKING = -1e4   # a float mask's cell at or below this blocks: to_additive_mask's float16 fill, the helpers' least


def as_blocked(mask: torch.Tensor, name: str = "mask") -> torch.Tensor:
    """A mask as bool (same shape), True = blocked: a bool mask as it is; a float mask where it is -inf or <= -1e4.

    A float mask is added to the scores, so a cell blocks only if its key's weight comes out exactly 0: -inf, or a
    fill at most BLOCKING = -1e4 (e^-1e4 is 0 even in float64). That takes in every fill of the series: -inf, the
    book's -1e9, finfo.min and to_additive_mask's float16 -1e4. A finite fill blocks the same cells; only a row
    with every key blocked differs: uniform weights instead of none (chapter 7). Any other value (-1, 0.5, NaN)
    is a bias that hides nothing, and is refused.
    """
    arguments.tensor(mask, name)
    if mask.dtype == torch.bool:
        return mask
    if not mask.dtype.is_floating_point:
        raise TypeError(f"{name} must be a bool mask (True = blocked) or a float mask (0 = visible, -inf or "
                        f"<= -1e4 = blocked), got dtype {mask.dtype}")
    blocked = mask <= BLOCKING                                       # -inf included; NaN is neither
    other = ~blocked & (mask != 0)
    if other.any():
        raise ValueError(f"{name} is a float mask, added to the scores: it must hold only 0 (visible) and -inf or "
                         f"numbers <= -1e4 (blocked), got other values {mask[other].unique()[:5].tolist()}")
    return blocked


def from_hf_attention_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Hugging Face's attention_mask (N, S) of integers, 1 = keep, 0 = pad -> bool key_padding_mask (True = pad)."""
    return hf_attention_mask(attention_mask) == 0


def hf_attention_mask(attention_mask: object, name: str = "attention_mask") -> torch.Tensor:
    """attention_mask, checked to be Hugging Face's 2-D form: (N, S) integers 0 and 1, 1 = real token."""
    keep = arguments.keep_mask(attention_mask, name)
    if keep.dim() != 2:
        raise ValueError(f"{name} must have shape (N, S), got {tuple(keep.shape)}")
    return keep


def positions_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids (N, L) counted over real tokens only, from Hugging Face's attention_mask (1 = real token):
    cumsum(mask) - 1, pads clamped to 0. The first real token is 0 on either padding side."""
    keep = arguments.keep_mask(attention_mask, "attention_mask")
    return (keep.long().cumsum(-1) - 1).clamp(min=0)


def fill_value(fill: Fill, dtype: torch.dtype) -> float:
    """Resolve fill ("min", "-inf" or a negative number) to a float that `dtype` can hold."""
    if not isinstance(dtype, torch.dtype):
        modules = (type(dtype).__module__, getattr(dtype, "__module__", None) or "")
        if any(m.split(".")[0] == "numpy" for m in modules):
            name = getattr(dtype, "name", None) or getattr(dtype, "__name__", str(dtype))
            raise TypeError(f"dtype must be a torch.dtype, got the numpy dtype {name}: use torch.{name}")
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, got {type(dtype).__name__} {dtype!r}")
    if dtype not in arguments.FLOATS:
        raise TypeError(f"dtype must be float16, bfloat16, float32 or float64 (the dtypes attention arithmetic runs "
                        f"in), got {dtype}")
    if fill == "min":
        return torch.finfo(dtype).min
    if fill == "-inf":
        return -math.inf
    if isinstance(fill, bool) or not isinstance(fill, numbers.Real):
        raise TypeError(f"fill must be 'min', '-inf' or a number, got {fill!r}")
    fill = float(fill)
    if math.isnan(fill):
        raise ValueError("fill must not be NaN")
    if fill >= 0:
        raise ValueError(f"fill must be negative (a masked score must end up below every real score), got {fill!r}")
    if math.isfinite(fill) and abs(fill) > torch.finfo(dtype).max:
        raise ValueError(
            f"fill={fill:g} does not fit in {dtype} (finfo.min = {torch.finfo(dtype).min:g}); use fill='min'"
        )
    if math.isfinite(fill) and abs(torch.tensor(fill, dtype=dtype).item()) < torch.finfo(dtype).tiny:
        raise ValueError(f"fill={fill:g} underflows in {dtype} (below finfo.tiny = {torch.finfo(dtype).tiny:g}), so "
                         "masked scores would keep their weight: a fill must sit far below every real score, "
                         "e.g. -1e9 or 'min'")
    return fill


def to_additive_mask(mask: torch.Tensor, dtype: torch.dtype = torch.float32, fill: Fill | None = None) -> torch.Tensor:
    """Float mask to add to the scores: 0 where a key is visible, `fill` where it is masked.

    Added, not put in place: a masked score becomes score + fill, so the fill must leave room below it. The
    default is finfo.min ("min") in float32, float64 and bfloat16, where score + finfo.min rounds back to
    finfo.min; and -1e4 in float16, whose range is so small that score + finfo.min overflows to -inf once the
    score is below about -16, and a row with no visible key then turns NaN (chapter 7). Any finite fill that is
    added leaves such a row's weights as if nothing were masked (softmax(s + c) = softmax(s)), unless c is so
    large that the scores round away (finfo.min in float32: a uniform row). Adding two masks made with "min"
    overflows to -inf in every dtype: merge the bool masks first.
    """
    if fill is None:
        fill = -1e4 if dtype == torch.float16 else "min"
    value = fill_value(fill, dtype)
    mask = arguments.bool_mask(mask, "mask")
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, value)
