"""Check that an attention module masks correctly: randomized, seeded trials.

Calling convention: `attn(x, key_padding_mask, attn_mask) -> output`, where
- x: float32 (N, L, E) on the CPU, batch first;
- key_padding_mask: bool (N, L), True = padding (always a tensor; all False when nothing is padded);
- attn_mask: bool (L, L), True = not allowed (the causal mask), or None;
- output: a tensor (N, L, ...), one row per query position.
nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder are adapted automatically
(`as_attn`); for anything else, write a one-line adapter with this signature.

Mode: the checks call `attn` under torch.no_grad() and never change its mode. Put modules in eval mode
(or set dropout=0): dropout makes two runs differ, and the checks refuse a random `attn` with a ValueError.
In eval mode PyTorch may take its fast paths: those are then what gets checked.

Trials use right padding and at least one real token per item, so no query row is ever fully masked.
Only real-token outputs are compared: what a module writes at pad positions is not specified.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from helpers.masks import causal_mask, key_padding_mask

Attn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]

# Default tolerance. Running an item alone (shorter, unpadded) changes the shapes, and with them the
# order of float32 sums inside matmul and softmax: real outputs then differ by ~1e-7 (float32 eps is 1.2e-7).
# A mask bug moves outputs by ~0.01 to 10. 1e-5 sits far from both.
ATOL = 1e-5
JUNK_SCALE = 10.0  # new values written into pad / future positions are randn * JUNK_SCALE


class MaskCheckError(AssertionError):
    """Raised by a check with raise_on_fail=True when the module fails."""


@dataclass(frozen=True)
class CheckReport:
    check: str                  # "padding invariance" or "no future leak"
    passed: bool
    worst_diff: float           # largest |difference| over all compared outputs (NaN counts as inf)
    atol: float
    trials: int
    first_failure: str | None   # the first failing case, in words; None if passed

    def __str__(self) -> str:
        if self.passed:  # the tiny worst_diff of a pass is left out: its last digits vary with the CPU
            return f"{self.check}: passed ({self.trials} trials, atol={self.atol:g})"
        return (f"{self.check}: FAILED ({self.trials} trials, atol={self.atol:g}, worst max-abs-diff "
                f"{self.worst_diff:.2g})\n  first failure: {self.first_failure}")


def as_attn(attn: object) -> Attn:
    """Adapt known PyTorch modules to attn(x, key_padding_mask, attn_mask) -> output; pass callables through."""
    if isinstance(attn, nn.MultiheadAttention):
        def mha(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> torch.Tensor:
            x = x if attn.batch_first else x.transpose(0, 1)
            out = attn(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]
            return out if attn.batch_first else out.transpose(0, 1)
        return mha
    if isinstance(attn, (nn.TransformerEncoderLayer, nn.TransformerEncoder)):
        layer = attn if isinstance(attn, nn.TransformerEncoderLayer) else attn.layers[0]
        first = layer.self_attn.batch_first

        def encoder(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> torch.Tensor:
            x = x if first else x.transpose(0, 1)
            if isinstance(attn, nn.TransformerEncoderLayer):
                out = attn(x, src_mask=am, src_key_padding_mask=kpm)
            else:
                out = attn(x, mask=am, src_key_padding_mask=kpm)
            return out if first else out.transpose(0, 1)
        return encoder
    if callable(attn):
        return attn  # type: ignore[return-value]
    raise TypeError(f"attn must be callable as attn(x, key_padding_mask, attn_mask), got {type(attn).__name__}")


def _embed_dim(attn: object, embed_dim: int | None) -> int:
    if embed_dim is None:
        if isinstance(attn, nn.MultiheadAttention):
            return attn.embed_dim
        if isinstance(attn, nn.TransformerEncoderLayer):
            return attn.self_attn.embed_dim
        if isinstance(attn, nn.TransformerEncoder):
            return attn.layers[0].self_attn.embed_dim
        raise ValueError("embed_dim is required when attn is a plain callable (the feature size E of x)")
    if not isinstance(embed_dim, int) or isinstance(embed_dim, bool) or embed_dim < 1:
        raise ValueError(f"embed_dim must be a positive int, got {embed_dim!r}")
    return embed_dim


def _validate(trials: int, batch_size: int, max_len: int, atol: float, seed: int) -> None:
    for name, value, low in (("trials", trials, 1), ("batch_size", batch_size, 1), ("max_len", max_len, 2)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or not 0 <= atol < math.inf:
        raise ValueError(f"atol must be a finite number >= 0, got {atol!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")


def _call(attn: Attn, x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> torch.Tensor:
    with torch.no_grad():
        out = attn(x, kpm, am)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"attn must return one tensor (N, L, ...), got {type(out).__name__} "
                        "(return only the output, e.g. mha(...)[0])")
    if out.shape[:2] != x.shape[:2]:
        raise ValueError(f"attn must return (N, L, ...) = {tuple(x.shape[:2])} + ..., got {tuple(out.shape)}")
    return out.float()


def _diff(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a - b| per position (max over features); NaN anywhere counts as inf."""
    d = (a - b).abs().nan_to_num(nan=math.inf)
    return d.flatten(2).amax(-1) if d.dim() > 2 else d


class _Tracker:
    """Keeps the worst difference and the first failure across trials."""

    def __init__(self, check: str, atol: float, trials: int):
        self.check, self.atol, self.trials = check, atol, trials
        self.worst, self.first = 0.0, None

    def add(self, diffs: torch.Tensor, compared: torch.Tensor, message: str) -> None:
        """diffs, compared: (N, L); message: a str.format template using {i} (item), {p} (position), {d} (diff)."""
        d = diffs.masked_fill(~compared, 0.0)
        worst = float(d.max())
        self.worst = max(self.worst, worst)
        if worst > self.atol and self.first is None:
            i, p = divmod(int(d.argmax()), d.shape[1])
            self.first = message.format(i=i, p=p, d=worst)

    def report(self, raise_on_fail: bool) -> CheckReport:
        report = CheckReport(self.check, self.first is None, self.worst, self.atol, self.trials, self.first)
        if raise_on_fail and not report.passed:
            raise MaskCheckError(str(report))
        return report


def _require_deterministic(attn: Attn, x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> None:
    if not torch.equal(_call(attn, x, kpm, am).nan_to_num(), _call(attn, x, kpm, am).nan_to_num()):
        raise ValueError("attn gave two different outputs for the same input: dropout in training mode? "
                         "Call attn.eval() (or set dropout=0) before checking")


def check_padding_invariance(
    attn: object,
    *,
    embed_dim: int | None = None,
    causal: bool = False,
    trials: int = 20,
    batch_size: int = 3,
    max_len: int = 7,
    atol: float = ATOL,
    seed: int = 0,
    raise_on_fail: bool = False,
) -> CheckReport:
    """Real-token outputs must not depend on the padding.

    Each trial pads a random batch (item 0 always has padding) and checks two things for every real token:
    new random values at the pad positions leave its output unchanged, and so does running its
    sequence alone, unpadded. causal=True also passes a causal attn_mask (and a shorter one when alone);
    the right pads are then in every real token's future, hidden by the causal mask alone, so keep
    causal=False to test the padding mask by itself.
    """
    fn, E = as_attn(attn), _embed_dim(attn, embed_dim)
    _validate(trials, batch_size, max_len, atol, seed)
    g = torch.Generator().manual_seed(seed)
    track = _Tracker("padding invariance" + (" (causal)" if causal else ""), atol, trials)
    for trial in range(trials):
        S = int(torch.randint(2, max_len + 1, (), generator=g))
        lengths = [int(torch.randint(1, S, (), generator=g))]  # item 0: at least one pad
        lengths += [int(torch.randint(1, S + 1, (), generator=g)) for _ in range(batch_size - 1)]
        kpm = key_padding_mask(lengths, S)
        am = causal_mask(S) if causal else None
        x = torch.randn(batch_size, S, E, generator=g)
        if trial == 0:
            _require_deterministic(fn, x, kpm, am)
        out = _call(fn, x, kpm, am)
        real = ~kpm
        where = f"trial {trial}: lengths {lengths} padded to {S}"

        junk = torch.where(kpm[..., None], torch.randn(x.shape, generator=g) * JUNK_SCALE, x)
        track.add(_diff(_call(fn, junk, kpm, am), out), real,
                  where + ": new values at the pad positions changed item {i}'s output at real position {p} by {d:.2g}")
        for i, n in enumerate(lengths):
            alone = _call(fn, x[i:i + 1, :n], torch.zeros(1, n, dtype=torch.bool), causal_mask(n) if causal else None)
            track.add(_diff(alone, out[i:i + 1, :n]), real[i:i + 1, :n],
                      f"{where}: item {i} run alone (unpadded) differs at position {{p}} by {{d:.2g}}")
    return track.report(raise_on_fail)


def check_no_future_leak(
    attn: object,
    *,
    embed_dim: int | None = None,
    trials: int = 20,
    batch_size: int = 3,
    max_len: int = 7,
    atol: float = ATOL,
    seed: int = 0,
    raise_on_fail: bool = False,
) -> CheckReport:
    """With a causal attn_mask, no output may depend on a later position.

    Each trial (random lengths, right padding) picks a cut t, writes new random values at every position after t,
    and checks that the real-token outputs at positions 0..t are unchanged.
    """
    fn, E = as_attn(attn), _embed_dim(attn, embed_dim)
    _validate(trials, batch_size, max_len, atol, seed)
    g = torch.Generator().manual_seed(seed)
    track = _Tracker("no future leak", atol, trials)
    for trial in range(trials):
        S = int(torch.randint(2, max_len + 1, (), generator=g))
        lengths = [int(torch.randint(1, S + 1, (), generator=g)) for _ in range(batch_size)]
        lengths[0] = S  # item 0: no padding, so its future is real tokens
        kpm, am = key_padding_mask(lengths, S), causal_mask(S)
        x = torch.randn(batch_size, S, E, generator=g)
        if trial == 0:
            _require_deterministic(fn, x, kpm, am)
        t = int(torch.randint(0, S - 1, (), generator=g))
        edited = x.clone()
        edited[:, t + 1:] = torch.randn(batch_size, S - t - 1, E, generator=g) * JUNK_SCALE
        compared = ~kpm & (torch.arange(S) <= t)
        track.add(_diff(_call(fn, edited, kpm, am), _call(fn, x, kpm, am)), compared,
                  f"trial {trial}: lengths {lengths} padded to {S}: new values after position {t} "
                  "changed item {i}'s output at position {p} by {d:.2g}")
    return track.report(raise_on_fail)
