"""Which inputs each output depends on, found by experiment, and compared with the mask that was meant."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from helpers import arguments
from helpers.checks.core import BIG_JUNK, MAX_LEN, Runner, Tolerance, embed_dim_of, finish, unusable, validate

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
PATTERNS = ("causal", "bidirectional", "sliding_window")


class _Dependence(NamedTuple):
    depends: torch.Tensor     # bool (L, L): [i, j] = the output at i moved when the input at j got new values
    nonfinite: torch.Tensor   # bool (L,): the output at i was NaN or inf in some run
    largest: float            # the largest finite |output| seen
    tolerance: Tolerance


def _dependence(run: Runner, L: int, E: int, attn_mask: torch.Tensor | None, trials: int, atol: float | None,
                rtol: float | None, seed: int, dtype: torch.dtype | None) -> _Dependence:
    """Each trial: one random sequence, then two copies per position j, with new values +v and -v at j (v =
    randn x 1e3: one of the two raises the score of key j for any query, so even a weak fill leaks visibly), each
    run alone (a batch of one, so that nothing mixed across a batch, such as batch statistics, hides a dependence)."""
    depends, nonfinite, largest = torch.zeros(L, L, dtype=torch.bool), torch.zeros(L, dtype=torch.bool), 0.0
    kpm = torch.zeros(1, L, dtype=torch.bool)
    g = torch.Generator().manual_seed(seed)
    tolerance = run.start(E, L, attn_mask, atol, rtol, seed, dtype)
    for trial in range(trials):
        run.where = f"trial {trial}"
        x = torch.randn(1, L, E, generator=g)
        big = min(BIG_JUNK, (torch.finfo(tolerance.dtype).max ** 0.5) / 8)
        ref = run(x, kpm, attn_mask)                                     # (1, L, ...)
        largest = max(largest, float(ref.abs().masked_fill(~ref.isfinite(), 0.0).max()))
        bad_ref = unusable(ref, torch.ones_like(ref, dtype=torch.bool))[0]   # (L,): NaN, +inf, nothing finite
        nonfinite |= bad_ref
        for j in range(L):
            v = torch.randn(E, generator=g) * big
            for sign in (1, -1):
                edited = x.clone()
                edited[0, j] = sign * v
                out = run(edited, kpm, attn_mask)
                became = unusable(out, out == ref)[0] & ~bad_ref               # unusable only with new values at j
                nonfinite |= became
                _, failing, _ = tolerance.within(out[0].reshape(L, -1), ref[0].reshape(L, -1), 1, same_shapes=True)
                depends[:, j] |= failing.any(-1) | became                     # (i,)
    assert tolerance is not None
    return _Dependence(depends, nonfinite, largest, tolerance)


def infer_mask(
    attn: object,
    length: int,
    *,
    attn_mask: torch.Tensor | None = None,
    embed_dim: int | None = None,
    trials: int = 3,
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 0,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The mask attn really applies: bool (L, L), True where the output at i does NOT depend on the input at j.

    An experiment, not a reading of the code: each trial runs one random sequence of `length` tokens (no padding;
    attn gets key_padding_mask all False, `attn_mask` as given, and position_ids 0..L-1 if it takes them), and two
    copies of it per position j with new values at j, +v and -v (v = randn x 1e3, large: whatever the query, one of
    the two raises key j's score, so a weak fill added to the scores, such as -12 or -30, leaks visibly; a fill
    written in place of the score, masked_fill(mask, -30), cannot be raised, and leaks only e^-30); the output at i
    depends on j if it moved by more than atol + rtol * scale in some feature, scale as in the padding checks (the
    feature's |output|, at least the median |output| at i), and atol, rtol float32's in every dtype: every run has
    the same shapes, so an output that does not depend on j does not move at all. Several seeded trials (the union
    of what moved) keep an accidental non-dependence unlikely. Every copy runs alone (a batch of one), so a
    dependence through the batch (batch statistics) cannot cancel out. The whole module is measured, however deep: a
    stack of n layers shows its receptive field (check_mask_pattern(layers=n) compares it with the right thing).

    Limits. The diagonal: the output at i depends on the input at i through its query (and any residual
    connection) whatever the mask says, so a hidden diagonal shows only where the row's weights cannot move (a
    row with one visible key, or none) and there is no residual connection. A key whose value is exactly
    cancelled (a zero value projection, a head that ignores it) looks masked, and so does one that moves an
    output by less than the tolerance even with values near 1e3 (a module that normalises its inputs first, as
    a pre-norm block does, turns them back into ordinary ones: there a fill of about -12 or lower is not seen),
    and outputs far below atol need a smaller atol. Outputs that are NaN or inf depend on nothing here;
    check_mask_pattern reports them.
    """
    seed = _pattern_args(length, attn_mask, trials, atol, rtol, seed)
    run = Runner(attn, pooled=False)
    L, E = length, embed_dim_of(attn, embed_dim)
    return ~_dependence(run, L, E, attn_mask, trials, atol, rtol, seed, dtype).depends


def _pattern_args(length: object, attn_mask: object, trials: object, atol: object, rtol: object, seed: object,
                  flags: dict[str, object] | None = None) -> int:
    """infer_mask's and check_mask_pattern's arguments checked; the seed as an int."""
    seed = validate(trials, 1, 2, atol, rtol, seed, "both", flags or {})
    length = arguments.integer(length, "length", minimum=2)  # one token has nothing to depend on but itself
    if attn_mask is not None and (not isinstance(attn_mask, torch.Tensor) or attn_mask.dtype != torch.bool
                                  or tuple(attn_mask.shape) != (length, length)):
        got = f"{attn_mask.dtype} {tuple(attn_mask.shape)}" if isinstance(attn_mask, torch.Tensor) else repr(attn_mask)
        hint = (f"; for {attn_mask.shape[-1]} tokens pass length={attn_mask.shape[-1]}"
                if isinstance(attn_mask, torch.Tensor) and attn_mask.dim() == 2 and attn_mask.shape[-1] != length
                else "")
        raise ValueError(f"attn_mask must be None or a bool tensor ({length}, {length}) (True = not allowed), "
                         f"got {got}{hint}")
    return seed


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
        window = _window(expected, window)
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
            error = TypeError if expected.dtype != torch.bool else ValueError
            raise error(f"an expected mask must be a bool tensor ({length}, {length}) (True = not allowed), "
                        f"got {expected.dtype} {tuple(expected.shape)}")
        return expected.clone()
    if callable(expected):
        return ~_mask_mod_allows(expected, length)
    raise TypeError(f"expected must be a pattern name, a bool mask or a mask_mod, got {type(expected).__name__}")


def _window(expected: str, window: object) -> int | None:
    """window, checked: an int >= 1 with "sliding_window", and None with every other pattern."""
    if expected == "sliding_window":
        if window is None:
            raise ValueError("window must be an int >= 1 (the keys a query sees, itself included), got None")
        return arguments.integer(window, "window (the keys a query sees, itself included)", minimum=1)
    if window is not None:
        raise ValueError("window (the width w) goes with expected='sliding_window', and only with it")
    return None


MASK_MOD_CALL = "mask_mod(b, h, q_idx, kv_idx), with b = h = tensor(0), q_idx (L, 1) and kv_idx (1, L)"


def _mask_mod_allows(mask_mod: Callable[..., object], length: int) -> torch.Tensor:
    """A mask_mod's (L, L) bool mask, True = allowed, from one broadcast call."""
    try:
        inspect.signature(mask_mod).bind(0, 0, 0, 0)
    except TypeError as error:
        raise TypeError(f"a mask_mod takes four arguments, (b, h, q_idx, kv_idx) (flex_attention's signature: "
                        f"batch, head, query index, key index), but this one does not: {error}") from None
    except ValueError:
        pass   # no signature to read (a builtin): the call below says what is wrong
    q, kv = torch.arange(length)[:, None], torch.arange(length)[None, :]
    try:
        allowed = mask_mod(torch.tensor(0), torch.tensor(0), q, kv)
    except Exception as error:
        raise ValueError(f"the mask_mod raised {type(error).__name__} when called as {MASK_MOD_CALL} (index "
                         f"tensors, broadcast; use torch operations such as & and torch.where, not `and` or `if`): "
                         f"{error}") from error
    if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
        got = f"dtype {allowed.dtype}" if isinstance(allowed, torch.Tensor) else type(allowed).__name__
        raise TypeError(f"a mask_mod must return a bool tensor (True = allowed), got {got}")
    try:
        return allowed.expand(length, length)
    except RuntimeError:
        raise ValueError(f"a mask_mod must return a bool tensor that broadcasts to ({length}, {length}) when called "
                         f"as {MASK_MOD_CALL}, got shape {tuple(allowed.shape)}") from None


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

        def listed(pairs: tuple) -> str:   # every pair counted; the first 8 shown
            return ", ".join(map(str, pairs[:8])) + (f", ... ({len(pairs) - 8} more)" if len(pairs) > 8 else "")
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
    length: int | None = None,
    window: int | None = None,
    layers: int = 1,
    attn_mask: torch.Tensor | None = None,
    embed_dim: int | None = None,
    trials: int = 3,
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 0,
    dtype: torch.dtype | None = None,
    raise_on_fail: bool = False,
) -> PatternReport:
    """attn must depend on exactly the inputs `expected` allows: no leak, and no over-masking.

    The padding checks compare padded runs with unpadded ones, so they cannot see a mask that hides too much
    (a causal mask where none is wanted) or one that lost its window. This one infers the mask (infer_mask, same
    arguments) and compares it with `expected` (see expected_mask: a name, a bool mask, or a mask_mod).
    length: by default the size of an expected bool mask or of attn_mask, else 16 (MAX_LEN), and with a window
    long enough to show where it ends: at least layers * (window - 1) + 4.
    layers=n: attn is a stack of n such layers, and must see the n-step receptive field of the one-layer mask
    (receptive_field). The diagonal is never called a leak: every output depends on its own input through the
    query (infer_mask's limits). report.show() draws expected vs inferred.
    """
    if isinstance(expected, str):
        window = _window(expected, window)
    L = _length(length, expected, attn_mask, window, layers)
    seed = _pattern_args(L, attn_mask, trials, atol, rtol, seed, {"raise_on_fail": raise_on_fail})
    want = receptive_field(expected_mask(expected, L, window=window), layers)
    run = Runner(attn, pooled=False)
    found = _dependence(run, L, embed_dim_of(attn, embed_dim), attn_mask, trials, atol, rtol, seed, dtype)
    depends, nonfinite = found.depends, found.nonfinite
    off_diagonal = ~torch.eye(L, dtype=torch.bool)
    leaks = depends & want & off_diagonal & ~nonfinite[:, None]
    over = ~depends & ~want & ~nonfinite[:, None]
    hint = None
    if over.any() and found.largest < 1e3 * found.tolerance.exact_atol:
        hint = (f"the outputs are tiny (largest |output| {found.largest:.1g}, atol={found.tolerance.exact_atol:g}): a "
                "real dependence may move them by less than atol; pass a smaller atol")
    name = expected if isinstance(expected, str) else "given mask" if isinstance(expected, torch.Tensor) else "mask_mod"
    name += f" {window}" if window is not None else ""
    check = f"mask pattern ({name}, length {L}" + (f", {layers} layers)" if layers > 1 else ")")
    report = PatternReport(check, not (leaks.any() or over.any() or nonfinite.any()), want, ~depends,
                           tuple(map(tuple, leaks.nonzero().tolist())), tuple(map(tuple, over.nonzero().tolist())),
                           tuple(nonfinite.nonzero().flatten().tolist()), trials, hint)
    return finish(report, raise_on_fail)  # type: ignore[return-value]


def _length(length: object, expected: object, attn_mask: object, window: int | None, layers: object) -> object:
    """check_mask_pattern's length: as given, else from a mask it was given, else long enough for the window."""
    if length is not None:
        return length
    for mask in (expected, attn_mask):
        if isinstance(mask, torch.Tensor) and mask.dim() == 2:
            return mask.shape[-1]
    if window is None:
        return MAX_LEN
    return max(MAX_LEN, arguments.integer(layers, "layers", minimum=1) * (window - 1) + 4)
