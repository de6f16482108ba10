"""Real-token outputs must not depend on the padding, nor on the future: the two forward checks."""

from __future__ import annotations

import torch

from helpers.checks.core import (
    MAX_LEN,
    NONFINITE,
    CheckReport,
    Difference,
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


def check_padding_invariance(
    attn: object,
    *,
    embed_dim: int | None = None,
    causal: bool = False,
    padding_side: str = "both",
    trials: int = 20,
    batch_size: int = 3,
    max_len: int = MAX_LEN,
    atol: float | None = None,
    rtol: float | None = None,
    pooled: bool = False,
    nonfinite_junk: bool = False,
    seed: int = 0,
    dtype: torch.dtype | None = None,
    raise_on_fail: bool = False,
) -> CheckReport:
    """Real-token outputs must not depend on the padding.

    Each trial pads a random batch (item 0 always has padding) and checks two things for every real token: new
    values at the pad positions leave its output unchanged, and so does running its sequence alone, unpadded. The
    padded lengths grow from 2 to max_len (16) over the trials (each one tried when trials >= max_len - 1), so the
    first failure reported is the shortest; the new values mix normal ones (randn x 10) with values near 1e3, so
    that a weak finite fill added to the scores (-30, say) leaks visibly (a fill written in place, masked_fill,
    cannot be raised). causal=True also passes a causal attn_mask (and a shorter one when alone). With right padding
    the pads are then in every real token's future, hidden by the causal mask alone; with left padding they are in
    its past, so only the padding mask hides them: padding_side="both" (the default) catches a causal module that
    ignores its padding mask, and a decoder that ignores position_ids. pooled=True: attn returns (N, ...), one
    output per item (a classifier, a masked mean); each item's output is compared. nonfinite_junk=True: the last
    trial writes NaN/inf at the pads (see help(helpers.checks)).
    atol, rtol: by default float32's for the comparisons at the same shapes (the new values), and the dtype's for
    the items run alone (help(helpers.checks), "Tolerance"); dtype: the dtype the module computes in, if its
    adapter hides it (returns float32 from a bfloat16 module); by default read from its parameters and output.
    """
    seed = validate(trials, batch_size, max_len, atol, rtol, seed, padding_side,
                    {"causal": causal, "pooled": pooled, "nonfinite_junk": nonfinite_junk,
                     "raise_on_fail": raise_on_fail})
    run = Runner(attn, pooled)
    E = embed_dim_of(attn, embed_dim)
    g = torch.Generator().manual_seed(seed)
    name = "padding invariance" + (" (causal)" if causal else "") + (" (pooled)" if pooled else "")
    tolerance = run.start(E, max_len, causal_mask(max_len) if causal else None, atol, rtol, seed, dtype)
    track = Tracker(name, tolerance, trials, (2, max_len), pooled)
    for trial in range(trials):
        S, lengths = trial_lengths(g, trial, trials, batch_size, max_len)
        x = torch.randn(batch_size, S, E, generator=g)
        am = causal_mask(S) if causal else None
        alone: list[torch.Tensor] = []
        for side in sides(padding_side):
            run.where = f"trial {trial} ({side} padding)"
            kpm = key_padding_mask(lengths, S, side=side)
            (xs,) = on_side(side, lengths, x)
            if nonfinite_junk and trial == trials - 1:
                new_values, what = torch.tensor(NONFINITE)[torch.arange(E) % len(NONFINITE)].expand(x.shape), "NaN/inf"
            else:
                new_values, what = junk(g, x.shape, track.tolerance.dtype), "new values"
            out = run(xs, kpm, am)
            real = torch.ones(batch_size, 1, dtype=torch.bool) if pooled else ~kpm
            where = Trial(trial, lengths, side, S)

            def changed(f: Difference, where: Trial = where, what: str = what) -> str:
                output = "pooled output" if pooled else f"output at real position {f.position}"
                return f"{where}: {what} at the pad positions changed item {f.item}'s {output} by {f.diff:.2g}"
            track.add(run(torch.where(kpm[..., None], new_values, xs), kpm, am), out, real, changed,
                      (f"{where}: with {what} at the pad positions", f"{where}: in the padded batch"),
                      same_shapes=True)
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
    return track.report(raise_on_fail, run.fn)


def check_no_future_leak(
    attn: object,
    *,
    embed_dim: int | None = None,
    padding_side: str = "both",
    trials: int = 20,
    batch_size: int = 3,
    max_len: int = MAX_LEN,
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 0,
    dtype: torch.dtype | None = None,
    raise_on_fail: bool = False,
) -> CheckReport:
    """With a causal attn_mask, no output may depend on a later position.

    Each trial (random lengths, padded on padding_side; padded lengths 2 to max_len, shortest first) picks a cut
    t, writes new values at every position after t (normal ones and values near 1e3, mixed), and checks that
    the real-token outputs at positions 0..t are unchanged. Every comparison is at the same shapes, so float32's
    margins hold in every dtype unless atol or rtol are given (help(helpers.checks), "Tolerance").
    """
    seed = validate(trials, batch_size, max_len, atol, rtol, seed, padding_side, {"raise_on_fail": raise_on_fail})
    run = Runner(attn, pooled=False)
    E = embed_dim_of(attn, embed_dim)
    g = torch.Generator().manual_seed(seed)
    track = Tracker("no future leak", run.start(E, max_len, causal_mask(max_len), atol, rtol, seed, dtype), trials,
                    (2, max_len))
    for trial in range(trials):
        S, lengths = trial_lengths(g, trial, trials, batch_size, max_len, first_padded=False)  # item 0: its
        am = causal_mask(S)                                                                   # future is real
        x = torch.randn(batch_size, S, E, generator=g)
        t = int(torch.randint(0, S - 1, (), generator=g))
        for side in sides(padding_side):
            run.where = f"trial {trial} ({side} padding)"
            kpm = key_padding_mask(lengths, S, side=side)
            (xs,) = on_side(side, lengths, x)
            edited = xs.clone()
            edited[:, t + 1:] = junk(g, (batch_size, S - t - 1, E), track.tolerance.dtype)
            compared = ~kpm & (torch.arange(S) <= t)
            where = Trial(trial, lengths, side, S)

            def leaked(f: Difference, where: Trial = where, t: int = t) -> str:
                return (f"{where}: new values after position {t} changed item {f.item}'s output at position "
                        f"{f.position} by {f.diff:.2g}")
            track.add(run(edited, kpm, am), run(xs, kpm, am), compared, leaked,
                      (f"{where}: with new values after position {t}", f"{where}: in the unedited batch"),
                      same_shapes=True)
    return track.report(raise_on_fail, run.fn)
