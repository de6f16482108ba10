"""The one trial core every check runs on: the call, the trials, the tolerance, and the report.

A check builds its trials and says what to compare; everything else is here, once:
- `Runner`: calls the module in the adapter convention (position_ids by keyword or by position, with or without
  gradients), and checks what comes back;
- `Runner.start`: the determinism guard (dropout or other randomness is refused before anything is compared), and
  the dtype the module computes in, which sets the default tolerance (`Tolerance.default`);
- `trial_lengths` and `junk`: the padded lengths each trial tries (2 up to max_len, shortest first) and the new
  values written where nothing may change (normal values and values near 1e3, mixed);
- `Tolerance.within`: the one comparison rule;
- `Tracker`: the worst difference and the first failure across trials, non-finite outputs, and report-then-raise.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from helpers import arguments
from helpers.masks import left_pad, positions_from_mask

Attn = Callable[..., torch.Tensor]   # attn(x, key_padding_mask, attn_mask[, position_ids]) -> output

# ---- Tolerances ---------------------------------------------------------------------------------------------------
# Running an item alone (shorter, unpadded) changes the shapes, and with them the order of the sums inside matmul
# and softmax: real outputs then differ by a few units of the dtype's rounding (float32: eps = 1.2e-7) of the
# magnitudes summed. A mask bug moves outputs by ~1% to 1000%. atol covers outputs of size ~1; rtol gives the same
# margin to large outputs, measured against the element's |b| but never less than the median |b| of its vector
# (an element near 0 by cancellation carries the rounding of the terms that cancelled; one outlier feature may
# not loosen the others). Gradients are sums over every token of the batch: their rounding grows with it.
ATOL = 1e-5
RTOL = 1e-5
GRAD_RTOL = 1e-4
# Two kinds of comparison. At the same shapes (new values at the pads or in the future, against the unedited run;
# every run of infer_mask), a correct mask gives bit-equal outputs in every dtype: nothing is summed in another
# order, and a hidden key's weight is exactly 0. So those comparisons keep float32's margins (ATOL, RTOL, and
# GRAD_RTOL for gradients) whatever the module computes in. Across shapes (an item run alone, unpadded), the order
# of the sums changes, and so does the rounding of a low-precision module: those comparisons take the dtype's
# margins, (atol, rtol) for outputs and for gradients, about 2.5 to 4 times the largest rounding measured on
# correct modules (benchmarks/bench_check_tolerances.py). In bfloat16 (eps 0.0078) a difference of a few percent
# between an item alone and padded is then within rounding: the same-shape comparisons still see such a leak.
LOW_PRECISION = {
    torch.bfloat16: ((2e-2, 2e-2), (5e-2, 5e-2)),
    torch.float16: ((4e-3, 4e-3), (1e-2, 1e-2)),
}
ROUNDING_HINT_EPS = 16   # a failure whose relative difference is within this many eps of the dtype gets a hint
GUARD_BATCH = 5          # the determinism guard's batch: (GUARD_BATCH, max_len, E), so that small dropout shows

JUNK_SCALE = 10.0   # new values written where nothing may change: randn * JUNK_SCALE ...
BIG_JUNK = 1e3      # ... and, at a random half of those positions, randn * BIG_JUNK (less in float16: no overflow)
MAX_LEN = 16        # the checks' default longest padded length: past 8, the reach of many kernels' first tile
PADDING_SIDES = ("right", "left", "both")
NONFINITE = (math.nan, math.inf, -math.inf)   # the junk of nonfinite_junk=True, repeated along the features


class MaskCheckError(AssertionError):
    """Raised by a check with raise_on_fail=True when the module fails."""


class AttnCallError(RuntimeError):
    """The module under test raised; the message gives the trial and the shapes it was called with."""


@dataclass(frozen=True)
class Tolerance:
    """a, b agree when |a - b| <= atol + rtol * scale, elementwise; atol, rtol across shapes (an item run alone),
    exact_atol, exact_rtol at the same shapes (see LOW_PRECISION); dtype: what the module computes in."""

    atol: float
    rtol: float
    exact_atol: float = ATOL
    exact_rtol: float = RTOL
    dtype: torch.dtype = torch.float32

    @property
    def low_precision(self) -> bool:
        return self.dtype in LOW_PRECISION

    @classmethod
    def default(cls, dtype: torch.dtype, atol: float | None, rtol: float | None, grad: bool = False) -> Tolerance:
        """The tolerance for a module computing in `dtype`; an atol or rtol the caller gave holds for both kinds."""
        exact_rtol = GRAD_RTOL if grad else RTOL
        low_atol, low_rtol = LOW_PRECISION[dtype][grad] if dtype in LOW_PRECISION else (ATOL, exact_rtol)
        return cls(low_atol if atol is None else atol, low_rtol if rtol is None else rtol,
                   ATOL if atol is None else atol, exact_rtol if rtol is None else rtol, dtype)

    def within(self, a: torch.Tensor, b: torch.Tensor, vector_start: int, terms: torch.Tensor | None = None,
               same_shapes: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """|a - b|, where it fails, and the scale: each element's |b|, at least the median |b| of its vector (the
        dims from vector_start on: a position's features, or a whole parameter). b is the reference run. terms:
        when b is a sum (a gradient summed over items), the sum of its terms' |.|, which sets its rounding."""
        same = a == b   # an equal -inf in both runs is an equal output (non-finite outputs: Tracker.nonfinite)
        d = torch.where(same, 0.0, (a - b).abs())
        finite = b.abs().masked_fill(~b.isfinite(), 0.0)
        if b.dim() > vector_start and b.numel():
            vectors = finite.flatten(vector_start)
            median = vectors.median(-1).values.view(*b.shape[:vector_start], *[1] * (b.dim() - vector_start))
            scale = torch.maximum(finite, median)
        else:
            scale = finite
        if terms is not None:
            scale = torch.maximum(scale, terms)
        atol, rtol = (self.exact_atol, self.exact_rtol) if same_shapes else (self.atol, self.rtol)
        return d, d > atol + rtol * scale, scale

    def __str__(self) -> str:
        def text(atol: float, rtol: float) -> str:
            return f"atol={atol:g}" + ("" if rtol == RTOL else f", rtol={rtol:g}")
        if (self.atol, self.rtol) == (self.exact_atol, self.exact_rtol):
            both = text(self.atol, self.rtol)
            return both if self.dtype in (torch.float32, torch.float64) else f"{_name(self.dtype)}: {both}"
        return (f"{_name(self.dtype)}: {text(self.atol, self.rtol)} alone, "
                f"{text(self.exact_atol, self.exact_rtol)} at the same shapes")

    def rounding_hint(self, rel: float, grad: bool) -> str | None:
        """A hint for a failure of the items run alone only, when it may be the dtype's rounding."""
        eps = torch.finfo(self.dtype).eps
        advice = "compare in float32, or pass a larger atol and rtol" if self.low_precision else \
            "pass a larger atol and rtol"
        if 0 < rel <= ROUNDING_HINT_EPS * eps:
            return (f"new values changed nothing; only the items run alone differ, by at most {rel:.2g} relative, "
                    f"within {ROUNDING_HINT_EPS} x the rounding of {_name(self.dtype)} (eps {eps:.2g}): this may "
                    f"be rounding, not a mask bug; {advice}")
        if grad and self.low_precision:
            return (f"the pads' values never moved a gradient; only the items run alone differ, and in "
                    f"{_name(self.dtype)} that can be rounding (the order of the sums changes with the shapes, and "
                    "a ReLU or a max near a tie can switch); compare in float32")
        return None


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def working_dtype(attn: object, tensors: Iterable[torch.Tensor], output: torch.dtype | None,
                  given: torch.dtype | None = None) -> torch.dtype:
    """The dtype the module computes in: `given`, or the least precise floating dtype among a module's parameters,
    the given tensors and its output."""
    if given is not None:
        if given not in arguments.FLOATS:
            raise TypeError(f"dtype must be torch.float16, torch.bfloat16, torch.float32 or torch.float64 (the dtype "
                            f"the module computes in), got {given!r}")
        return given
    dtypes = [t.dtype for t in tensors if t.is_floating_point()]
    if isinstance(attn, nn.Module):
        dtypes += [p.dtype for p in attn.parameters() if p.is_floating_point()]
    if output is not None and output.is_floating_point:
        dtypes.append(output)
    return max(dtypes, key=lambda d: torch.finfo(d).eps, default=torch.float32)


# ---- Reports ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckReport:
    check: str                  # "padding invariance" or "no future leak", with " (causal)" / " (pooled)"
    passed: bool
    worst_diff: float           # largest |difference| over all compared outputs; NaN if attn returned NaN or inf
    atol: float
    trials: int
    first_failure: str | None   # the first failing case, in words; None if passed
    rtol: float = RTOL
    worst_rel_diff: float = 0.0  # largest |a - b| / scale among the elements that failed the tolerance (0 if none)
    tolerance: str = ""          # as printed: "atol=1e-05", or with the dtype, "bfloat16: atol=0.02, rtol=0.02"
    lengths: tuple[int, int] = (2, MAX_LEN)   # the padded lengths the trials tried, shortest and longest

    def __str__(self) -> str:
        tolerance = self.tolerance or f"atol={self.atol:g}" + ("" if self.rtol == RTOL else f", rtol={self.rtol:g}")
        if self.passed:  # the tiny worst_diff of a pass is left out: its last digits vary with the CPU
            return f"{self.check}: passed ({self.trials} trials, {tolerance})"
        if math.isnan(self.worst_diff):
            worst = "attn returned NaN or inf"
        else:
            worst = f"worst max-abs-diff {self.worst_diff:.2g}, relative {self.worst_rel_diff:.2g}"
        return (f"{self.check}: FAILED ({self.trials} trials, {tolerance}, {worst})\n"
                f"  first failure: {self.first_failure}")


def finish(report: CheckReport | object, raise_on_fail: bool) -> object:
    """Return the report, or raise it as a MaskCheckError when it failed and raise_on_fail is True."""
    if raise_on_fail and not report.passed:   # type: ignore[attr-defined]
        raise MaskCheckError(str(report))
    return report


class Trial(NamedTuple):
    """One randomized trial of a check, as its messages name it."""

    number: int
    lengths: list[int]
    side: str          # "right" or "left": where the pads are
    size: int          # S, the padded length

    def __str__(self) -> str:
        padded = f"padded to {self.size}" if self.side == "right" else f"left-padded to {self.size}"
        return f"trial {self.number}: lengths {self.lengths} {padded}"


class Difference(NamedTuple):
    """The worst failing element of a comparison: where it is and by how much it differs."""

    item: int          # the batch item
    position: int      # the position in the batch as the module saw it
    diff: float        # |a - b|
    rel: float         # |a - b| / scale


class Tracker:
    """Keeps the worst differences and the first failure across trials; makes the report."""

    def __init__(self, check: str, tolerance: Tolerance, trials: int, lengths: tuple[int, int],
                 pooled: bool = False):
        self.check, self.tolerance, self.trials, self.lengths, self.pooled = check, tolerance, trials, lengths, pooled
        self.worst, self.worst_rel, self.nonfinite, self.first = 0.0, 0.0, False, None
        self.failures = 0                # failing comparisons so far
        self.same_shapes_failed = False  # a comparison at the same shapes failed: that is never rounding

    def add(self, out: torch.Tensor, ref: torch.Tensor, compared: torch.Tensor,
            describe: Callable[[Difference], str], runs: tuple[str, str], item: int = 0,
            same_shapes: bool = False) -> None:
        """out, ref: (n, L, ...) for items item..item+n-1; compared: bool (n, L), the real positions.

        describe: the failure in words, from the worst failing element; runs: how out and ref were made, for the
        "returned NaN" message.
        """
        if not compared.any():
            return
        same = out == ref
        if not (self.usable(ref, same, compared, runs[1], item)   # the reference run first: its NaN is the cause
                and self.usable(out, same, compared, runs[0], item)):
            return
        d, failing, scale = self.tolerance.within(out, ref, 2, same_shapes=same_shapes)
        keep = compared.view(*compared.shape, *[1] * (d.dim() - 2))
        d, failing = d.masked_fill(~keep, 0.0), failing & keep
        self.worst = max(self.worst, float(d.max()))
        if failing.any():
            rel = d / scale
            self.worst_rel = max(self.worst_rel, float(rel[failing].max()))
            at = torch.unravel_index(d.masked_fill(~failing, -1.0).argmax(), d.shape)   # the worst failing element
            self.same_shapes_failed |= same_shapes
            self.fail(describe(Difference(item + int(at[0]), int(at[1]), float(d[at]), float(rel[at]))))

    def usable(self, t: torch.Tensor, same: torch.Tensor, compared: torch.Tensor, run: str, item: int = 0) -> bool:
        """False (and the failure noted) if an output t (n, L, ...) at a compared position cannot be compared
        (unusable; same: where t equals the other run's output). item: the batch item of t's first row."""
        bad = unusable(t, same) & compared
        if not bad.any():
            return True
        i, p = (int(v) for v in bad.nonzero()[0])
        kind = "NaN" if t[i, p].isnan().any() else "inf"
        at = "pooled output" if self.pooled else f"real position {p}"
        self.fail(f"{run}, attn returned {kind} at item {item + i}'s {at}", nonfinite=True)
        return False

    def add_tensor(self, a: torch.Tensor, b: torch.Tensor, what: str, terms: torch.Tensor | None = None,
                   same_shapes: bool = False) -> None:
        """Two whole tensors (a gradient, say), b the reference; the median of all of b sets the scale floor, and so
        does `terms` (Tolerance.within)."""
        d, failing, scale = self.tolerance.within(a.float(), b.float(), 0, terms, same_shapes)
        self.worst = max(self.worst, float(d.max()) if d.numel() else 0.0)
        if failing.any():
            self.same_shapes_failed |= same_shapes
            self.worst_rel = max(self.worst_rel, float((d / scale)[failing].max()))
            at = torch.unravel_index(d.masked_fill(~failing, -1.0).argmax(), d.shape)
            index = ", ".join(str(int(i)) for i in at)
            self.fail(f"{what} differs by {float(d[at]):.2g} (at [{index}])")

    def finite(self, tensors: Iterable[tuple[str, torch.Tensor]], run: str, what: str = "the gradient of") -> bool:
        """False (and the failure noted) if any of the named tensors holds NaN or inf."""
        for label, t in tensors:
            if not t.isfinite().all():
                self.fail(f"{run}: {what} {label} is {'NaN' if t.isnan().any() else 'inf'}", nonfinite=True)
                return False
        return True

    def fail(self, text: str, nonfinite: bool = False) -> None:
        self.nonfinite |= nonfinite
        self.failures += 1
        if self.first is None:
            self.first = text

    def report(self, raise_on_fail: bool, fn: Attn | None = None, grad: bool = False) -> CheckReport:
        """The report, with a hint when the only failures are the items run alone, within rounding."""
        first = self.first
        if first is not None and fn is not None and _takes_only_kwargs(fn) and not self.nonfinite:
            first += (" (attn takes **kwargs but no parameter named position_ids, so it got no position ids: "
                      "name one if the module needs positions)")
        hint = None
        if first is not None and not self.nonfinite and not self.same_shapes_failed:
            hint = self.tolerance.rounding_hint(self.worst_rel, grad)
        if hint:
            first += f"; {hint}"
        tol = self.tolerance
        report = CheckReport(self.check, self.first is None, math.nan if self.nonfinite else self.worst,
                             tol.atol, self.trials, first, tol.rtol, self.worst_rel, str(tol), self.lengths)
        return finish(report, raise_on_fail)  # type: ignore[return-value]


def unusable(t: torch.Tensor, same: torch.Tensor) -> torch.Tensor:
    """(n, L): positions whose output cannot be compared: NaN or +inf anywhere, or a non-finite value that differs
    between the two runs, or no finite value at all. (An equal -inf beside finite features, a banned logit, is fine.)"""
    wrong = t.isnan() | t.isposinf() | (~t.isfinite() & ~same)
    if t.dim() == 2:
        return wrong | ~t.isfinite()
    return wrong.flatten(2).any(-1) | ~t.isfinite().flatten(2).any(-1)


# ---- Calling the module -------------------------------------------------------------------------------------------

ADAPTER_HINT = ("write an adapter attn(x, key_padding_mask, attn_mask) -> output that calls your module "
                "(see the examples in help(helpers.checks))")


def as_attn(attn: object) -> Attn:
    """Adapt known PyTorch modules to attn(x, key_padding_mask, attn_mask) -> output; pass callables through."""
    if isinstance(attn, type) and issubclass(attn, nn.Module):
        raise TypeError(f"attn is the class nn.{attn.__name__}, not a module: pass an instance, e.g. "
                        f"{attn.__name__}(...).eval()")
    if isinstance(attn, nn.MultiheadAttention) and not attn._qkv_same_embed_dim:
        raise ValueError(f"attn is an nn.MultiheadAttention with kdim={attn.kdim}, vdim={attn.vdim} != embed_dim="
                         f"{attn.embed_dim}: the checks feed one x as query, key and value; {ADAPTER_HINT}")
    if isinstance(attn, nn.MultiheadAttention):
        def mha(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> torch.Tensor:
            x = x.to(_floating_dtype(attn))     # a bfloat16 module gets bfloat16 inputs
            x = x if attn.batch_first else x.transpose(0, 1)
            out = attn(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]
            return out if attn.batch_first else out.transpose(0, 1)
        return mha
    if isinstance(attn, (nn.TransformerEncoderLayer, nn.TransformerEncoder)):
        layer = attn if isinstance(attn, nn.TransformerEncoderLayer) else attn.layers[0]
        first = layer.self_attn.batch_first

        def encoder(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> torch.Tensor:
            x = x.to(_floating_dtype(attn))
            x = x if first else x.transpose(0, 1)
            if isinstance(attn, nn.TransformerEncoderLayer):
                out = attn(x, src_mask=am, src_key_padding_mask=kpm)
            else:
                out = attn(x, mask=am, src_key_padding_mask=kpm)
            return out if first else out.transpose(0, 1)
        return encoder
    if isinstance(attn, (nn.Transformer, nn.TransformerDecoderLayer, nn.TransformerDecoder)):
        raise TypeError(f"attn is an nn.{type(attn).__name__}, which needs a target and a memory (tgt, memory), "
                        f"not one x: {ADAPTER_HINT}, e.g. for a decoder layer with a fixed memory: "
                        "lambda x, kpm, am: layer(x, memory, tgt_mask=am, tgt_key_padding_mask=kpm)")
    if callable(attn):
        return attn  # type: ignore[return-value]
    raise TypeError(f"attn must be callable as attn(x, key_padding_mask, attn_mask), got {type(attn).__name__}: "
                    f"{ADAPTER_HINT}")


def _floating_dtype(module: nn.Module) -> torch.dtype:
    """The dtype of a module's first floating parameter (float32 if it has none)."""
    return next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.float32)


def embed_dim_of(attn: object, embed_dim: int | None) -> int:
    """E, the feature size of x: given, or read from a known PyTorch module."""
    if embed_dim is None:
        if isinstance(attn, nn.MultiheadAttention):
            return attn.embed_dim
        if isinstance(attn, nn.TransformerEncoderLayer):
            return attn.self_attn.embed_dim
        if isinstance(attn, nn.TransformerEncoder):
            return attn.layers[0].self_attn.embed_dim
        raise ValueError("embed_dim is required when attn is a plain callable (the feature size E of x)")
    return arguments.integer(embed_dim, "embed_dim", minimum=1)


def validate(trials: object, batch_size: object, max_len: object, atol: object, rtol: object, seed: object,
             padding_side: object, flags: dict[str, object]) -> int:
    """The checks' shared arguments checked by name; the seed as a Python int (numpy and torch integers too)."""
    for name, value, low in (("trials", trials, 1), ("batch_size", batch_size, 1), ("max_len", max_len, 2)):
        arguments.integer(value, name, minimum=low)
    for name, value in (("atol", atol), ("rtol", rtol)):
        if value is not None:
            arguments.number(value, name, minimum=0)
    seed = arguments.integer(seed, "seed")
    if not -2**63 <= seed < 2**64:
        raise ValueError(f"seed must fit in 64 bits (-2**63 <= seed < 2**64), got {seed}")
    if not isinstance(padding_side, str) or padding_side not in PADDING_SIDES:
        raise ValueError(f"padding_side must be one of {list(PADDING_SIDES)}, got {padding_side!r}")
    for name, value in flags.items():
        arguments.flag(value, name)
    return seed


def position_ids(key_padding_mask: torch.Tensor) -> torch.Tensor:
    """Positions (N, L) counted over real tokens only: the first real token is 0 on either padding side."""
    return positions_from_mask((~arguments.bool_mask(key_padding_mask, "key_padding_mask")).long())


def _parameters(fn: Attn) -> dict[str, inspect.Parameter]:
    """attn's parameters by name; empty if it has no signature to read (some builtins)."""
    try:   # a module's own signature is (*args, **kwargs): read its forward's
        return dict(inspect.signature(fn.forward if isinstance(fn, nn.Module) else fn).parameters)
    except (TypeError, ValueError):
        return {}


def _takes_only_kwargs(fn: Attn) -> bool:
    """attn takes **kwargs but no parameter named position_ids (so it gets none: worth a hint on failure)."""
    parameters = _parameters(fn)
    return "position_ids" not in parameters and any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _takes_no_attn_mask(fn: Attn) -> bool:
    """attn's signature is (x, key_padding_mask) plus position_ids at most: a module without an attention mask to
    take (a convolution, a scan, linear attention), called as attn(x, key_padding_mask[, position_ids=...])."""
    parameters = [p for name, p in _parameters(fn).items() if name != "position_ids"]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 2


def shapes(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None, with_position_ids: bool) -> str:
    """The shapes attn was called with, for messages (position_ids have key_padding_mask's shape)."""
    described = [f"x {tuple(x.shape)}", f"key_padding_mask {tuple(kpm.shape)}",
                 f"attn_mask {None if am is None else tuple(am.shape)}"]
    return ", ".join(described + ([f"position_ids {tuple(kpm.shape)}"] if with_position_ids else []))


class Runner:
    """Calls attn with position_ids if it takes them (by keyword, or by position if it is positional-only), under
    no_grad unless grad=True; checks the output's type and whole shape; returns it as float32.

    `start` runs the determinism guard and learns the dtype the module computes in; `where` names the trial in
    messages.
    """

    def __init__(self, attn: object, pooled: bool, grad: bool = False):
        self.attn, self.fn, self.pooled, self.grad = attn, as_attn(attn), pooled, grad
        parameter = _parameters(self.fn).get("position_ids")
        self.takes_position_ids = parameter is not None
        self.positional = parameter is not None and parameter.kind is parameter.POSITIONAL_ONLY
        self.two_args = _takes_no_attn_mask(self.fn)    # (x, key_padding_mask): it never gets attn_mask
        self.features: tuple[int, ...] | None = None   # the "..." of (N, L, ...), fixed by the first call
        self.output_dtype: torch.dtype | None = None    # the dtype attn returned, before the cast to float32
        self.where = "trial 0"                           # for messages: which trial and padding side

    def __call__(self, x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> torch.Tensor:
        kwargs = {"position_ids": position_ids(kpm)} if self.takes_position_ids else {}
        try:
            with contextlib.nullcontext() if self.grad else torch.no_grad():
                x_in = x.clone()   # a fresh copy: an adapter may add positions to x in place
                args = (x_in, kpm) if self.two_args else (x_in, kpm, am)
                args = (*args, *kwargs.values()) if self.positional else args
                out = self.fn(*args, **({} if self.positional else kwargs))
        except Exception as error:
            raise self.error(error, x, kpm, am) from error
        promise = "(N, ...)" if self.pooled else "(N, L, ...)"
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"attn must return one tensor {promise}, got {type(out).__name__} "
                            "(return only the output, e.g. mha(...)[0])")
        if out.is_complex():
            raise TypeError(f"attn returned a complex tensor ({out.dtype}): the checks compare real numbers; return "
                            "torch.view_as_real(output) to compare both parts")
        if out.device != x.device:
            raise ValueError(f"attn returned a tensor on {out.device}, but x is on {x.device}: return the output on "
                             f"{x.device} (e.g. output.to('{x.device}'))")
        lead = tuple(x.shape[:1] if self.pooled else x.shape[:2])
        if self.features is None and tuple(out.shape[:len(lead)]) == lead:
            self.features = tuple(out.shape[len(lead):])
        if self.features is None or tuple(out.shape) != lead + self.features:
            want = f"{lead} + ..." if self.features is None else f"{lead + self.features} (the same ... in every call)"
            hint = "" if self.pooled or out.dim() != 2 else " (a pooled output, one row per item? pass pooled=True)"
            raise ValueError(f"attn must return {promise} = {want}, got {tuple(out.shape)} in {self.where}, "
                             f"called with {shapes(x, kpm, am, self.takes_position_ids)}{hint}")
        self.output_dtype = self.output_dtype or out.dtype
        out = out.float()
        return out[:, None] if self.pooled else out   # pooled: (N, 1, ...), one "position" per item

    def error(self, error: Exception, x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None,
              step: str = "") -> AttnCallError:
        """The module's own error, with the trial and the shapes it was called with."""
        return AttnCallError(f"attn raised {type(error).__name__} in {self.where}{step}, called with "
                             f"{shapes(x, kpm, am, self.takes_position_ids)}: {error}")

    def start(self, E: int, S: int, am: torch.Tensor | None, atol: float | None, rtol: float | None, seed: int,
              dtype: torch.dtype | None = None, tensors: Iterable[torch.Tensor] = ()) -> Tolerance:
        """The determinism guard, then the tolerance for the dtype the module computes in.

        The guard refuses a module in training mode with dropout in it, and any module whose two calls on one
        input differ: that input is a whole (GUARD_BATCH, S, E) batch with no pads, so that even small dropout
        drops something (its own generator: the trials' random numbers stay as they are)."""
        dropout = _dropout_in_training(self.attn)
        if dropout:
            raise ValueError(f"attn has dropout in training mode ({dropout}), so two runs would differ. Call "
                             "attn.eval() (or set dropout=0) before checking")
        x = torch.randn(GUARD_BATCH, S, E, generator=torch.Generator().manual_seed(seed))
        kpm = torch.zeros(GUARD_BATCH, S, dtype=torch.bool)
        self.where = "the determinism guard (the same input twice)"
        first, second = self(x, kpm, am), self(x, kpm, am)
        if not torch.equal(first.detach().nan_to_num(), second.detach().nan_to_num()):
            raise ValueError("attn gave two different outputs for the same input: dropout in training mode? "
                             "Call attn.eval() (or set dropout=0) before checking")
        return Tolerance.default(working_dtype(self.attn, tensors, self.output_dtype, dtype), atol, rtol, self.grad)


def _dropout_in_training(attn: object) -> str | None:
    """The first submodule of attn (an nn.Module) in training mode with a dropout probability above 0, named with its
    probability; None if there is none (or attn is a plain function, whose modules cannot be seen)."""
    if not isinstance(attn, nn.Module):
        return None
    for name, module in attn.named_modules():
        if not module.training:
            continue
        p = module.p if isinstance(module, nn.modules.dropout._DropoutNd) else next(
            (v for v in (getattr(module, a, None) for a in ("dropout", "attention_dropout", "dropout_p"))
             if isinstance(v, float) and not isinstance(v, bool)), 0.0)
        if p > 0:
            return f"{name or type(module).__name__}: p={p:g}"
    return None


# ---- Trials -------------------------------------------------------------------------------------------------------

def trial_lengths(g: torch.Generator, trial: int, trials: int, batch_size: int, max_len: int,
                  first_padded: bool = True) -> tuple[int, list[int]]:
    """A trial's padded length S and the items' real lengths (1..S each; item 0 has a pad, or none if not
    first_padded). S grows from 2 to max_len over the trials, so the first failure reported is the shortest."""
    S = max_len if trials == 1 else 2 + round(trial * (max_len - 2) / (trials - 1))
    lengths = [int(torch.randint(1, S, (), generator=g)) if first_padded else S]
    lengths += [int(torch.randint(1, S + 1, (), generator=g)) for _ in range(batch_size - 1)]
    return S, lengths


def junk(g: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """New values (N, L, E) to write where nothing may change: randn * JUNK_SCALE, and at a random half of the
    positions randn * BIG_JUNK, large enough to beat a weak fill such as -30 (capped so that a float16 module's
    scores cannot overflow)."""
    big = min(BIG_JUNK, math.sqrt(torch.finfo(dtype).max) / 8)
    values = torch.randn(shape, generator=g)
    large = torch.rand(shape[:2], generator=g) < 0.5                       # (N, L)
    return values * torch.where(large, big, JUNK_SCALE)[..., None]


def sides(padding_side: str) -> tuple[str, ...]:
    return ("right", "left") if padding_side == "both" else (padding_side,)


def on_side(side: str, lengths: list[int], *batches: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Right-padded batches as they are on side "right", left-padded (helpers.masks.left_pad) on side "left"."""
    return batches if side == "right" else tuple(left_pad(t, lengths) for t in batches)
