"""Argument checks for the core (masks, attention, checks): each names the argument and what it expected.

One rule everywhere: an int is a Python, numpy or 0-d torch integer (operator.index), never a bool; a number is
a Python or numpy real (numbers.Real), never a bool. A wrong type raises TypeError, a wrong value ValueError.
"""

from __future__ import annotations

import math
import numbers
import operator

import torch


def integer(value: object, name: str, *, minimum: int | None = None) -> int:
    """value as an int, at least `minimum`."""
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        raise TypeError(f"{name} must be an int, got the bool {value!r}")
    if isinstance(value, torch.Tensor) and value.dim() != 0 or getattr(value, "ndim", 0) != 0:
        raise TypeError(f"{name} must be an int, got a {type(value).__name__} of shape {tuple(value.shape)}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def number(value: object, name: str, *, minimum: float | None = None) -> float:
    """value as a finite float, at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        wanted = "a finite number" + ("" if minimum is None else f" >= {minimum:g}")
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return value


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool (True or False), got {type(value).__name__} {value!r}")
    return value


def tensor(value: object, name: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        hint = " (torch.tensor(...) makes one from a list)" if isinstance(value, (list, tuple)) else ""
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}{hint}")
    return value


def bool_mask(value: object, name: str) -> torch.Tensor:
    """A bool tensor in the helpers' convention, True = masked."""
    if tensor(value, name).dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True = masked), got dtype {value.dtype}")
    return value


def keep_mask(value: object, name: str) -> torch.Tensor:
    """Hugging Face's attention_mask: integers 0 and 1 only, 1 = real token (a bool mask is refused: in the
    helpers' convention True = masked, the opposite)."""
    tensor(value, name)
    if value.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers 0/1 (Hugging Face: 1 = real token, 0 = pad), got a bool tensor: "
                        "a bool mask is probably already a padding mask (True = pad, this series' convention): use "
                        "it as it is where a padding mask is wanted, pass (~mask).long() here, or mask.long() if "
                        "True really means a real token")
    if value.dtype.is_floating_point or value.dtype.is_complex:
        raise TypeError(f"{name} must hold integers 0/1 (1 = real token), got dtype {value.dtype}")
    if value.dim() < 1:
        raise ValueError(f"{name} must have a length dimension (..., L), got a 0-d tensor")
    if value.dtype != torch.bool and not ((value == 0) | (value == 1)).all():
        raise ValueError(f"{name} must hold only 0 (pad) and 1 (keep: a real token), "
                         f"got values {value.unique().tolist()}")
    return value


FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)   # the dtypes attention arithmetic runs in


def floating(value: object, name: str) -> torch.Tensor:
    """A tensor PyTorch can do attention arithmetic in: float16, bfloat16, float32 or float64."""
    if tensor(value, name).dtype not in FLOATS:
        raise TypeError(f"{name} must be a float16, bfloat16, float32 or float64 tensor, got dtype {value.dtype}")
    return value


def same_device(value: torch.Tensor | None, name: str, like: torch.Tensor, like_name: str) -> None:
    """value (a mask, say) must be on like's device."""
    if value is not None and value.device != like.device:
        raise ValueError(f"{name} must be on {like_name}'s device {like.device}, got {value.device}: pass "
                         f"{name}.to({like_name}.device)")


def instance(value: object, name: str, kind: type, what: str) -> object:
    """value, which must be a `kind` (described as `what` in the error, e.g. "the chapter's nn.MultiheadAttention")."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return value
