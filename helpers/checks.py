"""Check that an attention module masks correctly: randomized, seeded trials.

Calling convention: `attn(x, key_padding_mask, attn_mask) -> output`, where
- x: float32 (N, L, E) on the CPU, batch first: embeddings WITHOUT positions;
- key_padding_mask: bool (N, L), True = padding (always a tensor; all False when nothing is padded);
- attn_mask: bool (L, L), True = not allowed (the causal mask), or None;
- output: a tensor (N, L, ...), one row per query position; with pooled=True a tensor (N, ...), one per item.
  The "..." must be the same in every call (it may not depend on N or L).
If `attn` has a parameter named `position_ids`, it also gets `position_ids=` a LongTensor (N, L) computed from the
mask: `((~key_padding_mask).long().cumsum(-1) - 1).clamp(min=0)`. The first real token gets position 0 on either
padding side; right pads repeat the last real position, left pads get 0. A model with learned or absolute positions
adds its own from these: that is what makes left padding work (Hugging Face models need the same).
nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder are adapted automatically
(`as_attn`); for anything else, write a short adapter with this signature. One example per family:

    mha = nn.MultiheadAttention(E, 2, batch_first=True).eval()               # 1. attention alone
    check_padding_invariance(mha)   # the same as the adapter:
    check_padding_invariance(lambda x, kpm, am: mha(x, x, x, key_padding_mask=kpm, attn_mask=am)[0], embed_dim=E)

    block = nn.TransformerEncoderLayer(E, 2, 4 * E, batch_first=True).eval()  # 2. an encoder block
    check_padding_invariance(lambda x, kpm, am: block(x, src_mask=am, src_key_padding_mask=kpm), embed_dim=E)

    class Decoder(nn.Module):                          # 3. a decoder-only block with learned positions
        def __init__(self, E, max_len):
            super().__init__()
            self.pos = nn.Embedding(max_len, E)
            self.block = nn.TransformerEncoderLayer(E, 2, 4 * E, batch_first=True)
        def forward(self, x, key_padding_mask, attn_mask, position_ids):
            return self.block(x + self.pos(position_ids), src_mask=attn_mask, src_key_padding_mask=key_padding_mask)
    check_padding_invariance(Decoder(E, 16).eval(), embed_dim=E, causal=True)
    check_no_future_leak(Decoder(E, 16).eval(), embed_dim=E)

    model = transformers.GPT2Model(tiny_config).eval()   # 4. Hugging Face: enter after the token embedding,
    def gpt2(x, key_padding_mask, attn_mask, position_ids):  #    with inputs_embeds (HF adds its own positions)
        return model(inputs_embeds=x, attention_mask=(~key_padding_mask).long(),   # HF: 1 = real token
                     position_ids=position_ids).last_hidden_state
    check_padding_invariance(gpt2, embed_dim=tiny_config.n_embd)   # GPT-2 is causal by itself: attn_mask unused
    # a model that takes token ids only: check its blocks instead, with an adapter like 2 or 3.

Mode: the checks call `attn` under torch.no_grad() and never change its mode. Put modules in eval mode
(or set dropout=0): dropout makes two runs differ, and the checks refuse a random `attn` with a ValueError.
In eval mode PyTorch may take its fast paths: those are then what gets checked.

Trials: random lengths, at least one real token per item. padding_side="both" (the default) runs every trial
twice, right-padded (pads last) and left-padded (pads first, as in batched generation), on the same tokens.
Only real-token outputs are compared: what a module writes at pad positions is not specified. Messages name
positions in the padded batch as the module saw it ("left-padded to 5: ... real position 3").
Left padding with a causal mask leaves each pad query row with no visible key. A stack of two or more
nn.MultiheadAttention-based layers (measured: nn.TransformerEncoder, 2 layers, eval) returns NaN there, and the
next layer carries that NaN into every real row (weight 0 * value NaN): the check reports "returned NaN". That is
a real failure of the stack under left padding, not of the check; a finite fill (finfo.min) or cleaning the pad
rows between layers fixes it.
Tolerance: outputs a, b agree when |a - b| <= atol + rtol * scale elementwise, b from the reference run (the
padded batch, or the unedited one), as in torch.isclose except that scale is the larger of |b| and the median
|b| of the same output vector (all features at that position): an element near 0 after cancellation is held to
its vector's typical precision, and one large feature (real LLMs have such outliers) does not loosen the others.
The report's relative difference is |a - b| / scale.

Non-finite junk: nonfinite_junk=True writes NaN, inf and -inf at the pad positions in the last trial. Most
correct attention modules then FAIL, and rightly: masking gives a pad key the weight 0, but its value row still
enters weights @ v, and 0 * NaN = NaN (0 * inf too), so every real row of that item becomes NaN. This is a real
hazard, not a check bug (an earlier layer's fully masked pad row can be that NaN); a module passes only if it
cleans the pad positions before they reach the values, e.g. x.masked_fill(key_padding_mask[..., None], 0).

Mask inference. The two checks above compare padded runs with unpadded ones, so they cannot see a mask that
hides too much (a causal mask on an encoder) or one that lost its window.
infer_mask(attn, L) finds by experiment which inputs each output depends on, as a bool (L, L) mask in the
helpers' convention (True = does not depend); check_mask_pattern(attn, expected) compares that with what was
meant and reports leaks and over-masking by (query, key), with report.show() for the picture. Same adapters:

    check_mask_pattern(mha, "bidirectional")                          # MHA without attn_mask sees every key
    check_mask_pattern(mha, "causal", attn_mask=causal_mask(8))        # ... and with one, the past only
    check_mask_pattern(gpt2, "causal", embed_dim=tiny_config.n_embd)   # GPT-2 builds its own causal mask
    window = expected_mask("sliding_window", 8, window=3)              # query i sees keys i-2..i
    stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, 2, 4 * E, batch_first=True), 2,
                                  enable_nested_tensor=False).eval()
    check_mask_pattern(stack, "sliding_window", window=3, layers=2, attn_mask=window)   # 2 layers: 5 keys back
    # expected may also be a bool (L, L) mask (True = not allowed) or a mask_mod (True = may attend).

Limits (infer_mask's docstring): the output at i always depends on the input at i through its query, so the
diagonal is never reported as a leak; a dependence smaller than the tolerance, or exactly cancelled, looks
masked.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from helpers import arguments
from helpers.masks import causal_mask, key_padding_mask, positions_from_mask

Attn = Callable[..., torch.Tensor]   # attn(x, key_padding_mask, attn_mask[, position_ids=...]) -> output

# Default tolerance. Running an item alone (shorter, unpadded) changes the shapes, and with them the
# order of float32 sums inside matmul and softmax: real outputs then differ by ~1e-7 (float32 eps is 1.2e-7)
# of the magnitudes summed. A mask bug moves outputs by ~1% to 1000%. atol covers outputs of size ~1;
# rtol gives the same margin to large outputs (x100, x1e4), whose rounding errors are larger in absolute terms.
# rtol is measured against the element's |b|, but never less than the median |b| of its output vector (position):
# an element that is near 0 by cancellation carries the rounding error of the terms that cancelled, while the
# largest |b| would let one outlier feature hide a leak in all the others.
ATOL = 1e-5
RTOL = 1e-5
JUNK_SCALE = 10.0  # new values written into pad / future positions are randn * JUNK_SCALE
PADDING_SIDES = ("right", "left", "both")
NONFINITE = (math.nan, math.inf, -math.inf)  # the junk of nonfinite_junk=True, repeated along the features


class MaskCheckError(AssertionError):
    """Raised by a check with raise_on_fail=True when the module fails."""


class AttnCallError(RuntimeError):
    """The module under test raised; the message gives the trial and the shapes it was called with."""


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

    def __str__(self) -> str:
        tolerance = f"atol={self.atol:g}" + ("" if self.rtol == RTOL else f", rtol={self.rtol:g}")
        if self.passed:  # the tiny worst_diff of a pass is left out: its last digits vary with the CPU
            return f"{self.check}: passed ({self.trials} trials, {tolerance})"
        if math.isnan(self.worst_diff):
            worst = "attn returned NaN or inf"
        else:
            worst = f"worst max-abs-diff {self.worst_diff:.2g}, relative {self.worst_rel_diff:.2g}"
        return (f"{self.check}: FAILED ({self.trials} trials, {tolerance}, {worst})\n"
                f"  first failure: {self.first_failure}")


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
    if isinstance(attn, (nn.Transformer, nn.TransformerDecoderLayer, nn.TransformerDecoder)):
        raise TypeError(f"attn is an nn.{type(attn).__name__}, which needs a target and a memory (tgt, memory), "
                        f"not one x: {ADAPTER_HINT}, e.g. for a decoder layer with a fixed memory: "
                        "lambda x, kpm, am: layer(x, memory, tgt_mask=am, tgt_key_padding_mask=kpm)")
    if callable(attn):
        return attn  # type: ignore[return-value]
    raise TypeError(f"attn must be callable as attn(x, key_padding_mask, attn_mask), got {type(attn).__name__}: "
                    f"{ADAPTER_HINT}")


def _embed_dim(attn: object, embed_dim: int | None) -> int:
    if embed_dim is None:
        if isinstance(attn, nn.MultiheadAttention):
            return attn.embed_dim
        if isinstance(attn, nn.TransformerEncoderLayer):
            return attn.self_attn.embed_dim
        if isinstance(attn, nn.TransformerEncoder):
            return attn.layers[0].self_attn.embed_dim
        raise ValueError("embed_dim is required when attn is a plain callable (the feature size E of x)")
    return arguments.integer(embed_dim, "embed_dim", minimum=1)


def _validate(trials: int, batch_size: int, max_len: int, atol: float, rtol: float, seed: int,
              padding_side: str, flags: dict[str, object]) -> None:
    for name, value, low in (("trials", trials, 1), ("batch_size", batch_size, 1), ("max_len", max_len, 2)):
        arguments.integer(value, name, minimum=low)
    for name, value in (("atol", atol), ("rtol", rtol)):
        arguments.number(value, name, minimum=0)
    seed = arguments.integer(seed, "seed")
    if not -2**63 <= seed < 2**64:
        raise ValueError(f"seed must fit in 64 bits (-2**63 <= seed < 2**64), got {seed}")
    if padding_side not in PADDING_SIDES:
        raise ValueError(f"padding_side must be one of {list(PADDING_SIDES)}, got {padding_side!r}")
    for name, value in flags.items():
        arguments.flag(value, name)


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


def _shapes(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None, kwargs: dict) -> str:
    shapes = [f"x {tuple(x.shape)}", f"key_padding_mask {tuple(kpm.shape)}",
              f"attn_mask {None if am is None else tuple(am.shape)}"]
    return ", ".join(shapes + [f"position_ids {tuple(v.shape)}" for v in kwargs.values()])


class _Runner:
    """Calls attn under no_grad with position_ids if it takes them; checks the output's type and whole shape."""

    def __init__(self, fn: Attn, pooled: bool):
        self.fn, self.pooled = fn, pooled
        parameter = _parameters(fn).get("position_ids")
        self.takes_position_ids = parameter is not None
        self.positional = parameter is not None and parameter.kind is parameter.POSITIONAL_ONLY
        self.features: tuple[int, ...] | None = None   # the "..." of (N, L, ...), fixed by the first call
        self.where = "trial 0"                           # for messages: which trial and padding side

    def __call__(self, x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> torch.Tensor:
        kwargs = {"position_ids": position_ids(kpm)} if self.takes_position_ids else {}
        try:
            with torch.no_grad():   # a fresh copy of x: an adapter may add positions to it in place
                args = (x.clone(), kpm, am, *kwargs.values()) if self.positional else (x.clone(), kpm, am)
                out = self.fn(*args, **({} if self.positional else kwargs))
        except Exception as error:
            raise AttnCallError(f"attn raised {type(error).__name__} in {self.where}, called with "
                                f"{_shapes(x, kpm, am, kwargs)}: {error}") from error
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
                             f"called with {_shapes(x, kpm, am, kwargs)}{hint}")
        out = out.float()
        return out[:, None] if self.pooled else out   # pooled: (N, 1, ...), one "position" per item


def _left_pad(t: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """Turn a right-padded (N, S, ...) batch into the same batch left-padded: each row rotated by its pad count."""
    S = t.shape[1]
    shift = torch.tensor([S - n for n in lengths])[:, None]               # (N, 1)
    source = (torch.arange(S)[None, :] - shift) % S                         # (N, S): left position p reads source
    return t.gather(1, source.view(*source.shape, *[1] * (t.dim() - 2)).expand(t.shape))


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


class _Tracker:
    """Keeps the worst differences and the first failure across trials."""

    def __init__(self, check: str, atol: float, rtol: float, trials: int, pooled: bool = False):
        self.check, self.atol, self.rtol, self.trials, self.pooled = check, atol, rtol, trials, pooled
        self.worst, self.worst_rel, self.nonfinite, self.first = 0.0, 0.0, False, None

    def add(self, out: torch.Tensor, ref: torch.Tensor, compared: torch.Tensor,
            describe: Callable[[Difference], str], runs: tuple[str, str], item: int = 0) -> None:
        """out, ref: (n, L, ...) for items item..item+n-1; compared: bool (n, L).

        describe: the failure in words, from the worst failing element; runs: how out and ref were made, for the
        "returned NaN" message.
        """
        if not compared.any():
            return
        same = out == ref   # an inf in both runs (a banned logit, say) is an equal output; NaN never is
        for run, t in ((runs[1], ref), (runs[0], out)):   # the reference run first: its NaN is the cause
            wrong = ~t.isfinite() & ~same
            bad = wrong.flatten(2).any(-1) & compared if t.dim() > 2 else wrong & compared
            if bad.any():
                self.nonfinite = True
                i, p = (int(v) for v in bad.nonzero()[0])
                kind = "NaN" if t[i, p].isnan().any() else "inf"
                at = "pooled output" if self.pooled else f"real position {p}"
                self._fail(f"{run}, attn returned {kind} at item {item + i}'s {at}")
                return
        d = torch.where(same, 0.0, (out - ref).abs())              # (N, L, ...)
        keep = compared.view(*compared.shape, *[1] * (d.dim() - 2))
        finite = ref.abs().masked_fill(~ref.isfinite(), 0.0)      # the scale of the finite features
        if d.dim() > 2:   # each element's own |b|, but at least its vector's median |b|
            scale = torch.maximum(finite, finite.flatten(2).median(-1).values.view(keep.shape))
        else:
            scale = finite
        failing = d > self.atol + self.rtol * scale                # torch.isclose, with a floor per vector
        d, failing = d.masked_fill(~keep, 0.0), failing & keep
        self.worst = max(self.worst, float(d.max()))
        if failing.any():
            rel = d / scale
            self.worst_rel = max(self.worst_rel, float(rel[failing].max()))
            at = torch.unravel_index(d.masked_fill(~failing, -1.0).argmax(), d.shape)   # the worst failing element
            i, p = int(at[0]), int(at[1])
            self._fail(describe(Difference(item + i, p, float(d[at]), float(rel[at]))))

    def _fail(self, text: str) -> None:
        if self.first is None:
            self.first = text

    def report(self, raise_on_fail: bool, fn: Attn | None = None) -> CheckReport:
        first = self.first
        if first is not None and fn is not None and _takes_only_kwargs(fn):
            first += (" (attn takes **kwargs but no parameter named position_ids, so it got no position ids: "
                      "name one if the module needs positions)")
        report = CheckReport(self.check, self.first is None, math.nan if self.nonfinite else self.worst,
                             self.atol, self.trials, first, self.rtol, self.worst_rel)
        if raise_on_fail and not report.passed:
            raise MaskCheckError(str(report))
        return report


def _require_deterministic(run: _Runner, x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> None:
    if not torch.equal(run(x, kpm, am).nan_to_num(), run(x, kpm, am).nan_to_num()):
        raise ValueError("attn gave two different outputs for the same input: dropout in training mode? "
                         "Call attn.eval() (or set dropout=0) before checking")


def _random_batch(g: torch.Generator, batch_size: int, max_len: int, E: int) -> tuple[int, list[int], torch.Tensor]:
    """A trial's batch: its length S (2..max_len), the items' real lengths (item 0 always has a pad), x (N, S, E)."""
    S = int(torch.randint(2, max_len + 1, (), generator=g))
    lengths = [int(torch.randint(1, S, (), generator=g))]  # item 0: at least one pad
    lengths += [int(torch.randint(1, S + 1, (), generator=g)) for _ in range(batch_size - 1)]
    return S, lengths, torch.randn(batch_size, S, E, generator=g)


def _sides(padding_side: str) -> tuple[str, ...]:
    return ("right", "left") if padding_side == "both" else (padding_side,)


def check_padding_invariance(
    attn: object,
    *,
    embed_dim: int | None = None,
    causal: bool = False,
    padding_side: str = "both",
    trials: int = 20,
    batch_size: int = 3,
    max_len: int = 7,
    atol: float = ATOL,
    rtol: float = RTOL,
    pooled: bool = False,
    nonfinite_junk: bool = False,
    seed: int = 0,
    raise_on_fail: bool = False,
) -> CheckReport:
    """Real-token outputs must not depend on the padding.

    Each trial pads a random batch (item 0 always has padding) and checks two things for every real token:
    new random values at the pad positions leave its output unchanged, and so does running its
    sequence alone, unpadded. causal=True also passes a causal attn_mask (and a shorter one when alone).
    With right padding the pads are then in every real token's future, hidden by the causal mask alone;
    with left padding they are in its past, so only the padding mask hides them: padding_side="both"
    (the default) catches a causal module that ignores its padding mask, and a decoder that ignores position_ids.
    pooled=True: attn returns (N, ...), one output per item (a classifier, a masked mean); each item's output
    is compared. nonfinite_junk=True: the last trial writes NaN/inf at the pads (see the module docstring).
    """
    fn, E = as_attn(attn), _embed_dim(attn, embed_dim)
    _validate(trials, batch_size, max_len, atol, rtol, seed, padding_side,
              {"causal": causal, "pooled": pooled, "nonfinite_junk": nonfinite_junk, "raise_on_fail": raise_on_fail})
    run = _Runner(fn, pooled)
    g = torch.Generator().manual_seed(seed)
    name = "padding invariance" + (" (causal)" if causal else "") + (" (pooled)" if pooled else "")
    track = _Tracker(name, atol, rtol, trials, pooled)
    for trial in range(trials):
        S, lengths, x = _random_batch(g, batch_size, max_len, E)
        new_values = torch.randn(x.shape, generator=g) * JUNK_SCALE
        what = "new values"
        if nonfinite_junk and trial == trials - 1:
            new_values = torch.tensor(NONFINITE)[torch.arange(E) % len(NONFINITE)].expand(x.shape)
            what = "NaN/inf"
        am = causal_mask(S) if causal else None
        alone: list[torch.Tensor] = []
        for side in _sides(padding_side):
            run.where = f"trial {trial} ({side} padding)"
            kpm = key_padding_mask(lengths, S)
            xs, junk_values = x, new_values
            if side == "left":
                xs, junk_values, kpm = (_left_pad(t, lengths) for t in (x, new_values, kpm))
            if trial == 0 and side == _sides(padding_side)[0]:
                _require_deterministic(run, xs, kpm, am)
            out = run(xs, kpm, am)
            real = torch.ones(batch_size, 1, dtype=torch.bool) if pooled else ~kpm
            where = Trial(trial, lengths, side, S)
            junk = torch.where(kpm[..., None], junk_values, xs)

            def changed(f: Difference, where: Trial = where, what: str = what) -> str:
                output = "pooled output" if pooled else f"output at real position {f.position}"
                return f"{where}: {what} at the pad positions changed item {f.item}'s {output} by {f.diff:.2g}"
            track.add(run(junk, kpm, am), out, real, changed,
                      (f"{where}: with {what} at the pad positions", f"{where}: in the padded batch"))
            for i, n in enumerate(lengths):
                if len(alone) <= i:    # the unpadded run is the same for both sides: run it once
                    alone.append(run(x[i:i + 1, :n], torch.zeros(1, n, dtype=torch.bool),
                                     causal_mask(n) if causal else None))
                shift = 0 if side == "right" else S - n
                if pooled:
                    placed = alone[i]
                else:              # the alone output, written at the item's real positions in the padded batch
                    placed = out[i:i + 1].clone()
                    placed[real[i:i + 1]] = alone[i][0]

                def differs(f: Difference, where: Trial = where, i: int = i, shift: int = shift) -> str:
                    if pooled:
                        at = "in its pooled output"
                    elif where.side == "right":
                        at = f"at position {f.position}"
                    else:
                        at = f"at real position {f.position} (position {f.position - shift} alone)"
                    return f"{where}: item {i} run alone (unpadded) differs {at} by {f.diff:.2g}"
                track.add(placed, out[i:i + 1], real[i:i + 1], differs,
                          (f"{where}: item {i} run alone (unpadded)", f"{where}: in the padded batch"), i)
    return track.report(raise_on_fail, fn)


def check_no_future_leak(
    attn: object,
    *,
    embed_dim: int | None = None,
    padding_side: str = "both",
    trials: int = 20,
    batch_size: int = 3,
    max_len: int = 7,
    atol: float = ATOL,
    rtol: float = RTOL,
    seed: int = 0,
    raise_on_fail: bool = False,
) -> CheckReport:
    """With a causal attn_mask, no output may depend on a later position.

    Each trial (random lengths, padded on padding_side) picks a cut t, writes new random values at every
    position after t, and checks that the real-token outputs at positions 0..t are unchanged.
    """
    fn, E = as_attn(attn), _embed_dim(attn, embed_dim)
    _validate(trials, batch_size, max_len, atol, rtol, seed, padding_side, {"raise_on_fail": raise_on_fail})
    run = _Runner(fn, pooled=False)
    g = torch.Generator().manual_seed(seed)
    track = _Tracker("no future leak", atol, rtol, trials)
    for trial in range(trials):
        S = int(torch.randint(2, max_len + 1, (), generator=g))
        lengths = [int(torch.randint(1, S + 1, (), generator=g)) for _ in range(batch_size)]
        lengths[0] = S  # item 0: no padding, so its future is real tokens
        am = causal_mask(S)
        x = torch.randn(batch_size, S, E, generator=g)
        t = int(torch.randint(0, S - 1, (), generator=g))
        new_values = torch.randn(batch_size, S - t - 1, E, generator=g) * JUNK_SCALE
        for side in _sides(padding_side):
            run.where = f"trial {trial} ({side} padding)"
            kpm = key_padding_mask(lengths, S)
            xs, kpm = (x, kpm) if side == "right" else (_left_pad(x, lengths), _left_pad(kpm, lengths))
            if trial == 0 and side == _sides(padding_side)[0]:
                _require_deterministic(run, xs, kpm, am)
            edited = xs.clone()
            edited[:, t + 1:] = new_values
            compared = ~kpm & (torch.arange(S) <= t)
            where = Trial(trial, lengths, side, S)

            def leaked(f: Difference, where: Trial = where, t: int = t) -> str:
                return (f"{where}: new values after position {t} changed item {f.item}'s output at position "
                        f"{f.position} by {f.diff:.2g}")
            track.add(run(edited, kpm, am), run(xs, kpm, am), compared, leaked,
                      (f"{where}: with new values after position {t}", f"{where}: in the unedited batch"))
    return track.report(raise_on_fail, fn)


# ---- Mask inference: which inputs each output depends on, found by experiment -----------------------------------

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
PATTERNS = ("causal", "bidirectional", "sliding_window")


class _Dependence(NamedTuple):
    depends: torch.Tensor     # bool (L, L): [i, j] = the output at i moved when the input at j got new values
    nonfinite: torch.Tensor   # bool (L,): the output at i was NaN or inf in some run
    largest: float            # the largest finite |output| seen


def _dependence(run: _Runner, L: int, E: int, attn_mask: torch.Tensor | None, trials: int, atol: float,
                rtol: float, g: torch.Generator) -> _Dependence:
    """Each trial: one random sequence, then one copy per position j with new values at j, each run alone (a
    batch of one, so that nothing mixed across a batch, such as batch statistics, hides a dependence)."""
    depends, nonfinite, largest = torch.zeros(L, L, dtype=torch.bool), torch.zeros(L, dtype=torch.bool), 0.0
    kpm = torch.zeros(1, L, dtype=torch.bool)
    for trial in range(trials):
        run.where = f"trial {trial}"
        x = torch.randn(1, L, E, generator=g)
        if trial == 0:
            _require_deterministic(run, x, kpm, attn_mask)
        ref = run(x, kpm, attn_mask)[0].reshape(L, -1)                   # (L, features)
        finite = ref.abs().masked_fill(~ref.isfinite(), 0.0)
        scale = torch.maximum(finite, finite.median(-1, keepdim=True).values)   # as the padding checks' tolerance
        largest = max(largest, float(finite.max()))
        nonfinite |= ~ref.isfinite().all(-1)
        for j in range(L):
            edited = x.clone()
            edited[0, j] = torch.randn(E, generator=g) * JUNK_SCALE
            out = run(edited, kpm, attn_mask)[0].reshape(L, -1)
            became = ~out.isfinite().all(-1) & ref.isfinite().all(-1)    # NaN or inf only with new values at j
            nonfinite |= became
            moved = ((out - ref).abs() > atol + rtol * scale).any(-1) | became   # (i,)
            depends[:, j] |= moved
    return _Dependence(depends, nonfinite, largest)


def infer_mask(
    attn: object,
    length: int,
    *,
    attn_mask: torch.Tensor | None = None,
    embed_dim: int | None = None,
    trials: int = 3,
    atol: float = ATOL,
    rtol: float = RTOL,
    seed: int = 0,
) -> torch.Tensor:
    """The mask attn really applies: bool (L, L), True where the output at i does NOT depend on the input at j.

    An experiment, not a reading of the code: each trial runs one random sequence of `length` tokens (no padding;
    attn gets key_padding_mask all False, `attn_mask` as given, and position_ids 0..L-1 if it takes them), and a
    copy of it per position j with new random values at j; the output at i depends on j if it moved by more than
    atol + rtol * scale in some feature, scale as in the padding checks (the feature's |output|, at least the
    median |output| at i). Several seeded trials (the union of what moved) keep an accidental
    non-dependence unlikely. Every copy runs alone (a batch of one), so a dependence through the batch (batch
    statistics) cannot cancel out. The whole module is measured, however deep: a stack of n layers shows its receptive
    field (check_mask_pattern(layers=n) compares it with the right thing).

    Limits. The diagonal: the output at i depends on the input at i through its query (and any residual
    connection) whatever the mask says, so a hidden diagonal shows only where the row's weights cannot move (a
    row with one visible key, or none) and there is no residual connection. A key whose value is exactly
    cancelled (a zero value projection, a head that ignores it) looks masked, and so does one that moves an
    output by less than the tolerance: a leak through a weight of about 1e-13 (a fill of -30) is not seen, and
    outputs far below atol need a smaller atol. Outputs that are NaN or inf depend on nothing here;
    check_mask_pattern reports them.
    """
    fn, E = as_attn(attn), _embed_dim(attn, embed_dim)
    L = _pattern_args(length, attn_mask, trials, atol, rtol, seed)
    run = _Runner(fn, pooled=False)
    return ~_dependence(run, L, E, attn_mask, trials, atol, rtol, torch.Generator().manual_seed(seed)).depends


def _pattern_args(length: int, attn_mask: torch.Tensor | None, trials: int, atol: float, rtol: float,
                  seed: int, flags: dict[str, object] | None = None) -> int:
    _validate(trials, 1, 2, atol, rtol, seed, "both", flags or {})
    length = arguments.integer(length, "length", minimum=2)  # one token has nothing to depend on but itself
    if attn_mask is not None and (not isinstance(attn_mask, torch.Tensor) or attn_mask.dtype != torch.bool
                                  or tuple(attn_mask.shape) != (length, length)):
        got = f"{attn_mask.dtype} {tuple(attn_mask.shape)}" if isinstance(attn_mask, torch.Tensor) else repr(attn_mask)
        hint = (f"; for {attn_mask.shape[-1]} tokens pass length={attn_mask.shape[-1]}"
                if isinstance(attn_mask, torch.Tensor) and attn_mask.dim() == 2 and attn_mask.shape[-1] != length
                else "")
        raise ValueError(f"attn_mask must be None or a bool tensor ({length}, {length}) (True = not allowed), "
                         f"got {got}{hint}")
    return length


def expected_mask(expected: object, length: int, *, window: int | None = None) -> torch.Tensor:
    """What `expected` means for `length` tokens, as a bool (L, L) mask, True = not allowed.

    expected: "causal", "bidirectional", "sliding_window" (with window=w: the query i sees keys i-w+1..i, w of
    them, itself included, as Mistral's sliding_window=w), a bool (L, L) tensor in the helpers' convention
    (True = not allowed), or a mask_mod as torch.nn.attention.flex_attention takes it:
    mask_mod(b, h, q_idx, kv_idx) -> True where attending is ALLOWED (the opposite polarity).
    """
    length = arguments.integer(length, "length", minimum=1)
    if isinstance(expected, str):
        if expected not in PATTERNS:
            raise ValueError(f"expected must be one of {list(PATTERNS)}, a bool mask or a mask_mod, got {expected!r}")
        if expected == "sliding_window":
            if window is None:
                raise ValueError("window must be an int >= 1 (the keys a query sees, itself included), got None")
            window = arguments.integer(window, "window (the keys a query sees, itself included)", minimum=1)
        if expected != "sliding_window" and window is not None:
            raise ValueError("window (the width w) goes with expected='sliding_window', and only with it")
        if expected == "sliding_window" and window >= length:
            raise ValueError(f"window={window} must be smaller than length={length}: a window as long as the "
                             f"sequence is just causal, so it cannot be tested; pass length={window + 4} or more")
        if expected == "bidirectional":
            return torch.zeros(length, length, dtype=torch.bool)
        behind = torch.arange(length)[:, None] - torch.arange(length)[None, :]   # i - j
        return (behind < 0) | (behind >= window) if expected == "sliding_window" else behind < 0
    if window is not None:
        raise ValueError("window goes with expected='sliding_window' only")
    if isinstance(expected, torch.Tensor):
        if expected.dtype != torch.bool or tuple(expected.shape) != (length, length):
            raise ValueError(f"an expected mask must be a bool tensor ({length}, {length}) (True = not allowed), "
                             f"got {expected.dtype} {tuple(expected.shape)}")
        return expected.clone()
    if callable(expected):
        q, kv = torch.arange(length)[:, None], torch.arange(length)[None, :]
        allowed = expected(torch.tensor(0), torch.tensor(0), q, kv)
        if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
            got = f"dtype {allowed.dtype}" if isinstance(allowed, torch.Tensor) else type(allowed).__name__
            raise TypeError(f"a mask_mod must return a bool tensor (True = allowed), got {got}")
        return ~allowed.expand(length, length)
    raise TypeError(f"expected must be a pattern name, a bool mask or a mask_mod, got {type(expected).__name__}")


def receptive_field(blocked: torch.Tensor, layers: int) -> torch.Tensor:
    """What `layers` stacked layers with one-layer mask `blocked` see: bool (L, L), True = not reachable.

    Each layer mixes what its allowed keys saw one layer down, plus its own position: the n-step reachability
    of (allowed | diagonal). Two layers with a window of 3 see 5 keys back. That assumes each layer's output at
    i depends on its own input at i, through a residual connection or a query that matters: true of
    Transformer blocks, not of bare attention layers stacked without a residual whose rows see one key only
    (softmax over one key ignores the query)."""
    layers = arguments.integer(layers, "layers", minimum=1)
    arguments.bool_mask(blocked, "expected")
    if blocked.dim() != 2 or blocked.shape[0] != blocked.shape[1]:
        raise ValueError(f"expected must be a square (L, L) mask, got {tuple(blocked.shape)}")
    step = (~blocked | torch.eye(blocked.shape[0], dtype=torch.bool)).float()
    seen = step
    for _ in range(layers - 1):
        seen = ((seen @ step) > 0).float()
    return seen == 0 if layers > 1 else blocked.clone()


@dataclass(frozen=True)
class PatternReport:
    check: str                           # "mask pattern (causal, length 8)", with ", 2 layers"
    passed: bool
    expected: torch.Tensor               # bool (L, L), True = not allowed (the receptive field for layers > 1)
    inferred: torch.Tensor               # bool (L, L), True = the output does not depend on that input
    leaks: tuple[tuple[int, int], ...]        # (query, key): depends where it must not
    over_masked: tuple[tuple[int, int], ...]  # (query, key): does not depend where it should
    nonfinite: tuple[int, ...]           # positions whose output was NaN or inf in some run
    trials: int
    hint: str | None = None              # a likely reason for a failure, when one is known

    def __str__(self) -> str:
        if self.passed:
            return f"{self.check}: passed ({self.trials} trials)"

        def listed(pairs: tuple) -> str:
            return ", ".join(map(str, pairs[:8])) + (", ..." if len(pairs) > 8 else "")
        found = []
        if self.leaks:
            found.append(f"{len(self.leaks)} leak(s), depends where it must not (query, key): {listed(self.leaks)}")
        if self.over_masked:
            found.append(f"{len(self.over_masked)} over-masked, does not depend where it should (query, key): "
                         f"{listed(self.over_masked)}")
        if self.nonfinite:
            found.append(f"NaN or inf at positions {list(self.nonfinite)} (their rows are not compared)")
        if self.hint:
            found.append(self.hint)
        return f"{self.check}: FAILED ({self.trials} trials)\n  " + "\n  ".join(found)

    def show(self, **kwargs: object) -> object:
        """Expected next to inferred, the differences marked (helpers.plots.show_mask_pattern; needs matplotlib)."""
        from helpers.plots import show_mask_pattern

        return show_mask_pattern(self, **kwargs)


def check_mask_pattern(
    attn: object,
    expected: object,
    *,
    length: int = 8,
    window: int | None = None,
    layers: int = 1,
    attn_mask: torch.Tensor | None = None,
    embed_dim: int | None = None,
    trials: int = 3,
    atol: float = ATOL,
    rtol: float = RTOL,
    seed: int = 0,
    raise_on_fail: bool = False,
) -> PatternReport:
    """attn must depend on exactly the inputs `expected` allows: no leak, and no over-masking.

    The padding checks compare padded runs with unpadded ones, so they cannot see a mask that hides too much
    (a causal mask where none is wanted) or one that lost its window. This one infers the mask (infer_mask, same
    arguments) and compares it with `expected` (see expected_mask: a name, a bool mask, or a mask_mod).
    layers=n: attn is a stack of n such layers, and must see the n-step receptive field of the one-layer mask
    (receptive_field). The diagonal is never called a leak: every output depends on its own input through the
    query (infer_mask's limits). report.show() draws expected vs inferred.
    """
    fn, E = as_attn(attn), _embed_dim(attn, embed_dim)
    L = _pattern_args(length, attn_mask, trials, atol, rtol, seed, {"raise_on_fail": raise_on_fail})
    want = receptive_field(expected_mask(expected, L, window=window), layers)
    run = _Runner(fn, pooled=False)
    found = _dependence(run, L, E, attn_mask, trials, atol, rtol, torch.Generator().manual_seed(seed))
    depends, nonfinite = found.depends, found.nonfinite
    off_diagonal = ~torch.eye(L, dtype=torch.bool)
    leaks = depends & want & off_diagonal & ~nonfinite[:, None]
    over = ~depends & ~want & ~nonfinite[:, None]
    hint = None
    if over.any() and found.largest < 1e3 * atol:
        hint = (f"the outputs are tiny (largest |output| {found.largest:.1g}, atol={atol:g}): a real dependence may "
                "move them by less than atol; pass a smaller atol")
    name = expected if isinstance(expected, str) else "given mask" if isinstance(expected, torch.Tensor) else "mask_mod"
    name += f" {window}" if window is not None else ""
    check = f"mask pattern ({name}, length {L}" + (f", {layers} layers)" if layers > 1 else ")")
    report = PatternReport(check, not (leaks.any() or over.any() or nonfinite.any()), want, ~depends,
                           tuple(map(tuple, leaks.nonzero().tolist())), tuple(map(tuple, over.nonzero().tolist())),
                           tuple(nonfinite.nonzero().flatten().tolist()), trials, hint)
    if raise_on_fail and not report.passed:
        raise MaskCheckError(str(report))
    return report


# ---- Gradients: training must not depend on the padding either ------------------------------------------------

GRAD_RTOL = 1e-4   # gradients sum over every token of the batch: their rounding grows with the batch


def _loss_and_grads(fn: Attn, params: list[tuple[str, torch.Tensor]], x: torch.Tensor, kpm: torch.Tensor,
                    am: torch.Tensor | None, directions: torch.Tensor, compared: torch.Tensor, pooled: bool,
                    where: str) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """Backward of loss = sum over compared outputs of <output, direction>: the parameters' gradients (zeros where
    a parameter got none), x's gradient, and the loss. Nothing else reads the output: a pad's output gets
    gradient exactly 0, as under a correct loss mask."""
    x = x.clone().requires_grad_(True)
    kwargs = {"position_ids": position_ids(kpm)} if "position_ids" in _parameters(fn) else {}
    for _, p in params:
        p.grad = None
    try:
        with torch.enable_grad():
            out = fn(x, kpm, am, **kwargs)
            if not isinstance(out, torch.Tensor) or tuple(out.shape[:1 if pooled else 2]) != tuple(
                    x.shape[:1 if pooled else 2]):
                promise = "(N, ...)" if pooled else "(N, L, ...)"
                got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise ValueError(f"attn must return one tensor {promise}, got {got} in {where}")
            picked = out[:, None] if pooled else out                    # pooled: one "position" per item
            loss = (picked[compared].float() * directions[compared]).sum()
            loss.backward()
    except ValueError:
        raise
    except Exception as error:
        raise AttnCallError(f"attn raised {type(error).__name__} in {where} (forward or backward), called with "
                            f"{_shapes(x, kpm, am, kwargs)}: {error}") from error
    grads = [torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for _, p in params]
    for _, p in params:
        p.grad = None
    return grads, x.grad.detach().clone(), loss.detach()


def check_gradient_padding_invariance(
    attn: object,
    *,
    parameters: object = None,
    embed_dim: int | None = None,
    causal: bool = False,
    padding_side: str = "both",
    trials: int = 5,
    batch_size: int = 3,
    max_len: int = 7,
    atol: float = ATOL,
    rtol: float = GRAD_RTOL,
    pooled: bool = False,
    seed: int = 0,
    raise_on_fail: bool = False,
) -> CheckReport:
    """Training must not depend on the padding: the same real tokens, padded, give the same gradients.

    Each trial builds a random batch (item 0 always has padding) and a loss that reads only the real-token
    outputs (pooled=True: one output per item): loss = sum of <output, d> with fixed random directions d, so
    every pad's output gets gradient exactly 0, as under a correct loss mask. It backpropagates that loss
    through the padded batch (right- and/or left-padded, padding_side) and, for comparison, through each item
    run alone, unpadded (the gradients of those runs summed: the loss is a sum over items). Two things must hold:
    - every gradient is finite: every parameter's, and x's at the real tokens (a dead query row with a -inf fill
      turns them NaN through 0 * NaN, even though the loss never reads that row);
    - the padded batch's gradients equal the unpadded runs': each parameter's, and x's at every real token,
      within atol + rtol * scale, scale as in check_padding_invariance (the element's |b|, at least the median
      |b| of its tensor: of the parameter, or of the token's gradient vector).
    attn: as for check_padding_invariance (nn.MultiheadAttention and the encoder modules are adapted, with
    need_weights=False), called here WITH gradients, so PyTorch's eval-mode fast paths are not taken (nothing
    would record autograd). parameters: the tensors whose gradients are compared; by default every parameter
    of attn (an nn.Module) that requires grad. Pass them for a plain callable, e.g. parameters=model.parameters().
    Mode: put dropout off (eval mode, or dropout=0); the check never changes the mode. rtol defaults to GRAD_RTOL
    (1e-4): a parameter's gradient is a sum over every token of the batch, so its rounding error grows with it.
    A report names the first failure: a NaN or inf gradient (which parameter, which run), or the worst difference.
    """
    fn, E = as_attn(attn), _embed_dim(attn, embed_dim)
    _validate(trials, batch_size, max_len, atol, rtol, seed, padding_side,
              {"causal": causal, "pooled": pooled, "raise_on_fail": raise_on_fail})
    if parameters is None:
        if not isinstance(attn, nn.Module):
            raise ValueError("parameters is required when attn is a plain callable: pass the tensors whose "
                             "gradients to compare, e.g. parameters=model.parameters()")
        params = [(name, p) for name, p in attn.named_parameters() if p.requires_grad]
    else:
        if isinstance(parameters, torch.Tensor):
            raise TypeError("parameters must be an iterable of tensors (e.g. model.parameters()), got one tensor: "
                            "wrap it in a list")
        try:
            listed = list(parameters)  # type: ignore[call-overload]
        except TypeError:
            raise TypeError(f"parameters must be an iterable of tensors (e.g. model.parameters()), got "
                            f"{type(parameters).__name__}") from None
        if not all(isinstance(p, torch.Tensor) for p in listed):
            raise TypeError("parameters must hold only tensors (e.g. model.parameters())")
        params = [(f"parameter {i} {tuple(p.shape)}", p) for i, p in enumerate(listed)]
    if not params:
        raise ValueError("attn has no parameter that requires grad: nothing to compare (pass parameters=...)")
    if not all(p.requires_grad and p.is_leaf for _, p in params):
        raise ValueError("every tensor in parameters must be a leaf that requires grad (a model's parameters)")
    g = torch.Generator().manual_seed(seed)
    name = "gradient padding invariance" + (" (causal)" if causal else "") + (" (pooled)" if pooled else "")
    worst, worst_rel, nonfinite, first = 0.0, 0.0, False, None

    def compare(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
        nonlocal worst, worst_rel, first
        finite = b.abs()
        scale = torch.maximum(finite, finite.median()) if b.numel() else finite
        d = (a - b).abs()
        failing = d > atol + rtol * scale
        worst = max(worst, float(d.max()) if d.numel() else 0.0)
        if failing.any():
            worst_rel = max(worst_rel, float((d / scale)[failing].max()))
            if first is None:
                at = torch.unravel_index(d.masked_fill(~failing, -1.0).argmax(), d.shape)
                index = ", ".join(str(int(i)) for i in at)
                first = f"{what} differs by {float(d[at]):.2g} (at [{index}])"

    def finite_or_fail(tensors: list[tuple[str, torch.Tensor]], run: str) -> bool:
        nonlocal nonfinite, first
        for label, t in tensors:
            if not t.isfinite().all():
                nonfinite = True
                if first is None:
                    kind = "NaN" if t.isnan().any() else "inf"
                    first = f"{run}: the gradient of {label} is {kind}"
                return False
        return True

    for trial in range(trials):
        S, lengths, x = _random_batch(g, batch_size, max_len, E)
        probe_kpm = key_padding_mask(lengths, S)
        with torch.no_grad():
            kwargs = {"position_ids": position_ids(probe_kpm)} if "position_ids" in _parameters(fn) else {}
            try:
                probe = fn(x.clone(), probe_kpm, causal_mask(S) if causal else None, **kwargs)
            except Exception as error:
                raise AttnCallError(f"attn raised {type(error).__name__} in trial {trial}, called with "
                                    f"{_shapes(x, probe_kpm, None, kwargs)}: {error}") from error
        if not isinstance(probe, torch.Tensor):
            raise TypeError(f"attn must return one tensor, got {type(probe).__name__} (return only the output)")
        features = tuple(probe.shape[1:] if pooled else probe.shape[2:])
        directions = torch.randn(batch_size, 1 if pooled else S, *features, generator=g)   # fixed per real token
        alone_params: list[torch.Tensor] | None = None
        alone_x: list[torch.Tensor] = []
        for i, n in enumerate(lengths):
            one = torch.ones(1, 1 if pooled else n, dtype=torch.bool)
            grads, gx, _ = _loss_and_grads(fn, params, x[i:i + 1, :n], torch.zeros(1, n, dtype=torch.bool),
                                           causal_mask(n) if causal else None,
                                           directions[i:i + 1, :1 if pooled else n], one, pooled,
                                           f"trial {trial}, item {i} alone")
            alone_params = grads if alone_params is None else [a + b for a, b in zip(alone_params, grads, strict=True)]
            alone_x.append(gx[0])
        assert alone_params is not None
        where_alone = Trial(trial, lengths, "right", S)
        if not finite_or_fail([(label, t) for (label, _), t in zip(params, alone_params, strict=True)]
                              + [("x", t) for t in alone_x], f"{where_alone}: the items run alone (unpadded)"):
            continue
        for side in _sides(padding_side):
            kpm = key_padding_mask(lengths, S)
            xs, dirs = x, directions
            if side == "left":
                xs, kpm = _left_pad(x, lengths), _left_pad(kpm, lengths)
                dirs = directions if pooled else _left_pad(directions, lengths)
            where = Trial(trial, lengths, side, S)
            compared = torch.ones(batch_size, 1, dtype=torch.bool) if pooled else ~kpm
            grads, gx, _ = _loss_and_grads(fn, params, xs, kpm, causal_mask(S) if causal else None, dirs,
                                           compared, pooled, str(where))
            real_x = [gx[i][~kpm[i]] for i in range(batch_size)]
            if not finite_or_fail([(label, t) for (label, _), t in zip(params, grads, strict=True)]
                                  + [(f"x at item {i}'s real tokens", t) for i, t in enumerate(real_x)],
                                  f"{where}: in the padded batch"):
                continue
            for (label, _), a, b in zip(params, grads, alone_params, strict=True):
                compare(a, b, f"{where}: the gradient of {label}, padded vs the items run alone,")
            for i, (a, b) in enumerate(zip(real_x, alone_x, strict=True)):
                compare(a, b, f"{where}: the gradient of x at item {i}'s real tokens, padded vs alone,")
    report = CheckReport(name, first is None, math.nan if nonfinite else worst, atol, trials, first, rtol, worst_rel)
    if raise_on_fail and not report.passed:
        raise MaskCheckError(str(report))
    return report
