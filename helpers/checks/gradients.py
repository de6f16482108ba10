"""Training must not depend on the padding either: the same real tokens, padded, give the same gradients."""

from __future__ import annotations

import torch
from torch import nn

from helpers.checks.core import (
    MAX_LEN,
    CheckReport,
    Runner,
    Tracker,
    Trial,
    embed_dim_of,
    junk,
    on_side,
    sides,
    trial_lengths,
    validate,
)
from helpers.masks import causal_mask, key_padding_mask


def check_gradient_padding_invariance(
    attn: object,
    *,
    parameters: object = None,
    embed_dim: int | None = None,
    causal: bool = False,
    padding_side: str = "both",
    trials: int = 5,
    batch_size: int = 3,
    max_len: int = MAX_LEN,
    atol: float | None = None,
    rtol: float | None = None,
    pooled: bool = False,
    seed: int = 0,
    dtype: torch.dtype | None = None,
    raise_on_fail: bool = False,
) -> CheckReport:
    """Training must not depend on the padding: the same real tokens, padded, give the same gradients.

    Each trial builds a random batch (item 0 always has padding; padded lengths 2 to max_len, shortest first: the
    default 5 trials try 2, 6, 9, 12 and 16; pass trials=max_len - 1 for every length) and a loss that reads only
    the real-token outputs (pooled=True: one output per item): loss = sum of <output, d> with fixed random
    directions d, so every pad's output gets gradient exactly 0, as under a correct loss mask. It backpropagates
    that loss through the padded batch (right- and/or left-padded, padding_side), through the same batch with new
    values at its pads (normal ones and values near 1e3, as in check_padding_invariance), and, for comparison,
    through each item run alone, unpadded (the gradients of those runs summed: the loss is a sum over items). Two
    things must hold:
    - every gradient is finite: every parameter's, and x's at the real tokens (a dead query row with a -inf fill
      turns them NaN through 0 * NaN, even though the loss never reads that row);
    - the new values at the pads change no gradient (the same shapes: a correct mask gives equal gradients,
      rounding aside), and the padded batch's gradients equal the unpadded runs': each parameter's, and x's at
      every real token,
      within atol + rtol * scale, scale as in check_padding_invariance (the element's |b|, at least the median
      |b| of its vector: the whole parameter, or the token's gradient vector); for a parameter, at least the sum
      of the items' |gradients| too, since a sum that cancels keeps the rounding of its terms.
    attn: as for check_padding_invariance (nn.MultiheadAttention and the encoder modules are adapted, with
    need_weights=False), called here WITH gradients, so PyTorch's eval-mode fast paths are not taken (nothing
    would record autograd). parameters: the tensors whose gradients are compared; by default every parameter
    of attn (an nn.Module) that requires grad. Pass them for a plain callable, e.g. parameters=model.parameters().
    Mode: gradient checks are often run in training mode, and the check never changes the mode; but dropout makes
    two runs differ, so a module whose two identical calls differ is refused with a ValueError, as by the other
    checks: call attn.eval() or set dropout=0 (eval mode does not stop gradients).
    Tolerance: by the dtype of the parameters (and output): float32 atol=1e-5, rtol=GRAD_RTOL=1e-4, since a
    parameter's gradient is a sum over every token of the batch; bfloat16 and float16 have their own
    (help(helpers.checks), "Tolerance"), printed in the report. In low precision the new values at the pads are
    the sharp test (the same shapes, the same order of sums); the items run alone are not: a ReLU or a max whose
    input is within rounding of a tie can switch between the two runs and move one gradient element by its whole
    size (seen in bfloat16 with a pre-norm nn.TransformerEncoderLayer; benchmarks/bench_check_tolerances.py
    measures the margins of correct modules). Such a failure, with the pads' comparison passing, says so. dtype: the
    dtype the module computes in, if its adapter hides it; by default read from the parameters and the output.
    A report names the first failure: a NaN or inf gradient (which parameter, which run), or the worst difference.
    """
    seed = validate(trials, batch_size, max_len, atol, rtol, seed, padding_side,
                    {"causal": causal, "pooled": pooled, "raise_on_fail": raise_on_fail})
    run = Runner(attn, pooled, grad=True)
    E = embed_dim_of(attn, embed_dim)
    params = _parameters(attn, parameters)
    g = torch.Generator().manual_seed(seed)
    name = "gradient padding invariance" + (" (causal)" if causal else "") + (" (pooled)" if pooled else "")
    tolerance = run.start(E, max_len, causal_mask(max_len) if causal else None, atol, rtol, seed, dtype,
                          [p for _, p in params])
    track = Tracker(name, tolerance, trials, (2, max_len), pooled)
    for trial in range(trials):
        S, lengths = trial_lengths(g, trial, trials, batch_size, max_len)
        x = torch.randn(batch_size, S, E, generator=g)
        am = causal_mask(S) if causal else None
        directions = torch.randn(batch_size, 1 if pooled else S, *run.features, generator=g)  # fixed per real token
        alone_params: list[torch.Tensor] | None = None   # the items' gradients summed ...
        alone_terms: list[torch.Tensor] | None = None    # ... and their |.| summed: the scale of their rounding
        alone_x: list[torch.Tensor] = []
        for i, n in enumerate(lengths):
            run.where = f"trial {trial}, item {i} alone"
            alone_compared = torch.ones(1, 1 if pooled else n, dtype=torch.bool)
            grads, gx, out = _gradients(run, params, x[i:i + 1, :n], torch.zeros(1, n, dtype=torch.bool),
                                        causal_mask(n) if causal else None, directions[i:i + 1, :1 if pooled else n],
                                        alone_compared)
            track.usable(out, torch.ones_like(out, dtype=torch.bool), alone_compared,
                         f"{Trial(trial, lengths, 'right', S)}: item {i} run alone", i)
            alone_params = grads if alone_params is None else [a + b for a, b in zip(alone_params, grads, strict=True)]
            alone_terms = [g.abs() for g in grads] if alone_terms is None else [
                a + b.abs() for a, b in zip(alone_terms, grads, strict=True)]
            alone_x.append(gx[0])
        assert alone_params is not None and alone_terms is not None
        if not track.finite([(label, t) for (label, _), t in zip(params, alone_params, strict=True)]
                            + [("x", t) for t in alone_x],
                            f"{Trial(trial, lengths, 'right', S)}: the items run alone (unpadded)"):
            continue
        for side in sides(padding_side):
            run.where = f"trial {trial} ({side} padding)"
            kpm = key_padding_mask(lengths, S, side=side)
            xs, dirs = on_side(side, lengths, x, directions) if not pooled else (*on_side(side, lengths, x),
                                                                                  directions)
            where = Trial(trial, lengths, side, S)
            compared = torch.ones(batch_size, 1, dtype=torch.bool) if pooled else ~kpm
            padded = _finite_gradients(track, run, params, xs, kpm, am, dirs, compared, f"{where}: in the padded batch")
            if padded is None:
                continue
            grads, real_x = padded
            new_values = torch.where(kpm[..., None], junk(g, xs.shape, track.tolerance.dtype), xs)
            edited = _finite_gradients(track, run, params, new_values, kpm, am, dirs, compared,
                                       f"{where}: with new values at the pad positions")
            if edited is None:
                continue
            junk_grads, junk_x = edited
            # 1. the same batch, new values at its pads: the same shapes, no rounding
            for (label, _), a, b in zip(params, junk_grads, grads, strict=True):
                track.add_tensor(a, b, f"{where}: new values at the pad positions changed the gradient of {label}: "
                                 "it", same_shapes=True)
            for i, (a, b) in enumerate(zip(junk_x, real_x, strict=True)):
                track.add_tensor(a, b, f"{where}: new values at the pad positions changed the gradient of x at item "
                                 f"{i}'s real tokens: it", same_shapes=True)
            # 2. the items run alone, unpadded
            for (label, _), a, b, terms in zip(params, grads, alone_params, alone_terms, strict=True):
                track.add_tensor(a, b, f"{where}: the gradient of {label}, padded vs the items run alone,", terms)
            for i, (a, b) in enumerate(zip(real_x, alone_x, strict=True)):
                real = torch.ones(1, a.shape[0], dtype=torch.bool)

                def differs(f: object, where: Trial = where, i: int = i) -> str:
                    return (f"{where}: the gradient of x at item {i}'s real tokens, padded vs alone, differs by "
                            f"{f.diff:.2g} (at its real token {f.position})")  # type: ignore[attr-defined]
                track.add(a[None], b[None], real, differs,
                          (f"{where}: the gradient of x, in the padded batch", f"{where}: the items run alone"), i)
    return track.report(raise_on_fail, run.fn, grad=True)


def _finite_gradients(track: Tracker, run: Runner, params: list[tuple[str, torch.Tensor]], x: torch.Tensor,
                      kpm: torch.Tensor, am: torch.Tensor | None, directions: torch.Tensor, compared: torch.Tensor,
                      name: str) -> tuple[list[torch.Tensor], list[torch.Tensor]] | None:
    """A padded batch's gradients: the parameters', and x's at each item's real tokens; None (and the failure
    noted) if any is NaN or inf."""
    grads, gx, out = _gradients(run, params, x, kpm, am, directions, compared)
    if not track.usable(out, torch.ones_like(out, dtype=torch.bool), compared, name):   # the loss reads them
        return None
    real_x = [gx[i][~kpm[i]] for i in range(x.shape[0])]
    if not track.finite([(label, t) for (label, _), t in zip(params, grads, strict=True)]
                        + [(f"x at item {i}'s real tokens", t) for i, t in enumerate(real_x)], name):
        return None
    return grads, real_x


def _gradients(run: Runner, params: list[tuple[str, torch.Tensor]], x: torch.Tensor, kpm: torch.Tensor,
               am: torch.Tensor | None, directions: torch.Tensor, compared: torch.Tensor
               ) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Backward of loss = sum over compared outputs of <output, direction>: the parameters' gradients in float32
    (zeros where a parameter got none) and x's gradient. Nothing else reads the output: a pad's output gets
    gradient exactly 0, as under a correct loss mask."""
    x = x.clone().requires_grad_(True)
    for _, p in params:
        p.grad = None
    out = run(x, kpm, am)   # checked, float32: (N, L, ...), or (N, 1, ...) pooled
    try:
        (out[compared] * directions[compared]).sum().backward()
    except Exception as error:
        raise run.error(error, x, kpm, am, " (backward)") from error
    grads = [torch.zeros(p.shape) if p.grad is None else p.grad.detach().float().clone() for _, p in params]
    for _, p in params:
        p.grad = None
    return grads, x.grad.detach().clone() if x.grad is not None else torch.zeros(x.shape), out.detach()


def _parameters(attn: object, parameters: object) -> list[tuple[str, torch.Tensor]]:
    """The tensors whose gradients are compared, named for messages: attn's own, or the given ones."""
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
    return params
