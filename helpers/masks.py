"""Build and convert attention masks.

Convention used throughout the series (nn.MultiheadAttention's):
a bool mask is True where attention is NOT allowed (padding, future).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

Fill = float | int | str


def key_padding_mask(lengths: Sequence[int] | torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """Bool (N, S) mask, True at padding positions, from the real lengths of N sequences."""
    if isinstance(lengths, torch.Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype == torch.bool or lengths.dim() != 1:
            raise TypeError("lengths must be a 1-D integer tensor or a list of ints, "
                            f"got {lengths.dtype} of shape {tuple(lengths.shape)}")
        lengths = lengths.tolist()
    if not isinstance(lengths, Sequence) or not all(isinstance(n, int) and not isinstance(n, bool) for n in lengths):
        raise TypeError(f"lengths must be a list of ints, got {lengths!r}")
    if len(lengths) == 0:
        raise ValueError("lengths must name at least one sequence, got an empty list")
    if any(n < 0 for n in lengths):
        raise ValueError(f"lengths must be >= 0, got {list(lengths)}")
    if max_len is None:
        max_len = max(lengths)
    if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
        raise ValueError(f"max_len must be a positive int, got {max_len!r}")
    if max(lengths) > max_len:
        raise ValueError(f"lengths must be <= max_len={max_len}, got {list(lengths)}")
    positions = torch.arange(max_len)                     # (S,)
    return positions[None, :] >= torch.tensor(lengths)[:, None]  # (N, S)


def causal_mask(size: int) -> torch.Tensor:
    """Bool (size, size) mask, True above the diagonal: query i may not see key j > i."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}")
    return torch.logical_not(torch.tril(torch.ones(size, size, dtype=torch.bool)))


def _require_bool(mask: object, name: str) -> torch.Tensor:
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True = masked), got dtype {mask.dtype}")
    return mask


def to_sdpa_mask(mask: torch.Tensor) -> torch.Tensor:
    """Flip a True = masked mask into F.scaled_dot_product_attention's True = may attend."""
    return torch.logical_not(_require_bool(mask, "mask"))


def from_hf_attention_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Hugging Face's attention_mask (1 = keep, 0 = pad) -> bool key_padding_mask (True = pad)."""
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor, got {type(attention_mask).__name__}")
    if attention_mask.dtype.is_floating_point or attention_mask.dtype.is_complex:
        raise TypeError(f"attention_mask must hold integers 0/1 or bools, got dtype {attention_mask.dtype}")
    if not torch.isin(attention_mask.long(), torch.tensor([0, 1])).all():
        raise ValueError("attention_mask must hold only 0 (pad) and 1 (keep)")
    return attention_mask == 0


def fill_value(fill: Fill, dtype: torch.dtype) -> float:
    """Resolve fill ("min", "-inf" or a number) to a float that `dtype` can hold."""
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    if fill == "min":
        return torch.finfo(dtype).min
    if fill == "-inf":
        return -math.inf
    if isinstance(fill, bool) or not isinstance(fill, (int, float)):
        raise TypeError(f"fill must be 'min', '-inf' or a number, got {fill!r}")
    if math.isnan(fill):
        raise ValueError("fill must not be NaN")
    if math.isfinite(fill) and abs(fill) > torch.finfo(dtype).max:
        raise ValueError(
            f"fill={fill:g} does not fit in {dtype} (finfo.min = {torch.finfo(dtype).min:g}); use fill='min'"
        )
    return float(fill)


def to_additive_mask(mask: torch.Tensor, dtype: torch.dtype = torch.float32, fill: Fill = "min") -> torch.Tensor:
    """Float mask to add to the scores: 0 where a key is visible, `fill` where it is masked."""
    value = fill_value(fill, dtype)
    return torch.zeros(_require_bool(mask, "mask").shape, dtype=dtype).masked_fill(mask, value)
