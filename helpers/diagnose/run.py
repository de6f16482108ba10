"""The checks `diagnose` runs on each part of a model (a Subject), turned into findings. Torch only."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from helpers.checks import (
    MAX_LEN,
    AttnCallError,
    check_gradient_padding_invariance,
    check_mask_pattern,
    check_no_future_leak,
    check_padding_invariance,
    expected_mask,
    infer_mask,
)
from helpers.checks.core import Runner, Tolerance, sides, working_dtype
from helpers.diagnose.report import Diagnosis, Ran, finding
from helpers.language import Bilingual, say
from helpers.masks import key_padding_mask

Cache = Callable[[int], list[tuple[str, str]]]   # seed -> [(where, what was measured)] for each mismatch
RUN_ON_SIDE_JA = {"right": "右パディングで実行すると", "left": "左パディングで実行すると",   # a padding side, in a
                  "both": "左右どちらのパディングで実行しても"}                             # Japanese message
LONGEST_PATTERN = 64   # tokens: a window that needs more to show its end is checked as causal (infer_mask is L^2)


class Subject(NamedTuple):
    """One part of a model, in the checks' adapter convention attn(x, key_padding_mask, attn_mask[, position_ids]).

    where: its name in messages ("model", "encoder", "decoder self-attention", "cross-attention");
    expect, source: the mask it must apply and where that came from (None: unknown); window, layers: for a
    sliding window, the window and how many stacked layers see it; pooled: attn returns one output per item (the
    cross-attention's target rows, whose source is what gets padded); pattern: another adapter for the mask
    pattern (cross-attention: target rows against source keys); without_position_ids: the same adapter giving no
    position ids (for the position-ids check); sides: the padding sides it is checked on; cache: the cached and
    chunked forwards against the full pass."""

    where: str
    attn: object
    embed_dim: int
    expect: object = None
    source: str = ""
    window: int | None = None
    layers: int = 1
    pooled: bool = False
    pattern: object = None
    without_position_ids: object = None
    sides: str = "both"
    cache: Cache | None = None
    parameters: list[torch.Tensor] | None = None   # whose gradients the gradient check compares (None: skipped)


def expectation_name(expect: object, window: int | None) -> str:
    if isinstance(expect, str):
        return expect + (f" (window {window})" if window is not None else "")
    if isinstance(expect, torch.Tensor):
        return say("the given mask", "与えられたマスク")
    return str(getattr(expect, "described", "mask_mod"))


def blocks_the_future(expect: object, L: int, window: int | None) -> bool:
    """Whether the expected mask hides every later key (so that check_no_future_leak applies)."""
    if expect is None:
        return False
    if isinstance(expect, str):
        return expect in ("causal", "sliding_window")
    blocked = expected_mask(expect, L, window=window)
    return bool(blocked[torch.ones(L, L, dtype=torch.bool).triu(1)].all())


def owning_mask(attn: object, attn_mask: torch.Tensor | None) -> object:
    """attn called with the attn_mask the user gave diagnose (cut to the length of each call) or None, whatever
    the check passes: a module owns its mask, and diagnose measures what it does by itself."""
    run = Runner(attn, pooled=False)
    inner = run.fn

    def mask(S: int) -> torch.Tensor | None:
        return None if attn_mask is None else attn_mask[:S, :S]
    def masks(x: torch.Tensor, kpm: torch.Tensor) -> tuple:   # a module without an attn_mask gets (x, kpm)
        return (x, kpm) if run.two_args else (x, kpm, mask(x.shape[1]))
    if run.takes_position_ids:
        def owned(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None, position_ids: torch.Tensor) -> object:
            return inner(*masks(x, kpm), position_ids=position_ids)
    else:
        def owned(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> object:   # type: ignore[misc]
            return inner(*masks(x, kpm))
    return owned


def shift_invariant(mask: torch.Tensor) -> bool:
    """Whether mask[i, j] depends on i - j only (causal, windows): then left padding, which moves the real tokens
    to the end, keeps their mask, and both padding sides can be checked."""
    L = mask.shape[0]
    return all(bool((mask.diagonal(k) == mask.diagonal(k)[0]).all()) for k in range(-L + 1, L))


def run_subject(s: Subject, diagnosis: Diagnosis, *, length: int | None, attn_mask: torch.Tensor | None, seed: int,
                dtype: torch.dtype | None) -> None:
    """Every check on one part of a model, its findings and notes added to `diagnosis`."""
    L = length or (attn_mask.shape[0] if attn_mask is not None else MAX_LEN)
    attn = owning_mask(s.attn, attn_mask)
    padding_side = s.sides if attn_mask is None or shift_invariant(attn_mask) else "right"
    E = s.embed_dim
    if s.expect == "sliding_window" and s.window is not None and length is None and \
            s.layers * (s.window - 1) + 4 > LONGEST_PATTERN:
        diagnosis.notes.append(say(
            f"{s.where}: a window of {s.window} over {s.layers} layers needs {s.layers * (s.window - 1) + 4} tokens to "
            f"show where it ends; checked as causal at length {L} instead (pass length= to test the window itself)",
            f"{s.where}：{s.layers} 層にわたる幅 {s.window} のウィンドウは、端を確かめるのに "
            f"{s.layers * (s.window - 1) + 4} トークン要る。代わりに長さ {L} で因果として検査した（ウィンドウそのものを"
            "確かめるには length= を渡す）"))
        longer = say(", longer than the test", "、検査長より長い")
        s = s._replace(expect="causal", window=None, source=s.source + longer)
    diagnosis.expectations.append((s.where, expectation_name(s.expect, s.window) if s.expect is not None else
                                   say("nothing (no expectation)", "なし（期待が不明）"), s.source))

    def ran(check: str, outcome: str) -> None:
        diagnosis.ran.append(Ran(s.where, check, outcome))

    def guarded(check: str, body: Callable[[], str]) -> str:
        try:
            outcome = body()
        except AttnCallError as error:
            outcome = f"error: {error}"
            diagnosis.notes.append(say(f"{s.where}, {check}: could not run: {error}",
                                       f"{s.where}、{check}：実行できなかった：{error}"))
        ran(check, outcome)
        return outcome

    # 1. The same input twice: a random module makes every other check meaningless.
    try:
        tolerance = Runner(attn, pooled=s.pooled).start(E, L, None, None, None, seed, dtype)
    except AttnCallError as error:   # it cannot even run twice: nothing else can be checked
        ran("determinism", f"error: {error}")
        diagnosis.notes.append(say(f"{s.where}: could not run: {error}", f"{s.where}：実行できなかった：{error}"))
        return
    except ValueError as error:
        if "dropout" not in str(error):
            raise
        diagnosis.findings.append(finding("nondeterministic", s.where, say(
            f"Two runs on the same input differed ({error}).", f"同じ入力で 2 回実行すると結果が違った（{error}）。")))
        ran("determinism", "failed")
        for check in ("non-finite outputs", "batch dependence", "padding", "mask pattern", "gradients", "cache"):
            ran(check, "skipped: nondeterministic")
        return
    ran("determinism", "passed")

    guarded("non-finite outputs", lambda: _nonfinite(attn, s, diagnosis, E, L, seed, padding_side))
    guarded("batch dependence", lambda: _batch_dependence(attn, s, diagnosis, E, L, seed, tolerance))
    guarded("padding", lambda: _padding(attn, s, diagnosis, E, L, seed, dtype, padding_side, attn_mask))
    if s.expect is None:
        guarded("mask pattern", lambda: _inferred_only(attn, s, diagnosis, E, L, seed, dtype))
    else:
        guarded("mask pattern", lambda: _pattern(attn, s, diagnosis, E, length, attn_mask, seed, dtype))
        if blocks_the_future(s.expect, L, s.window) and not s.pooled:
            guarded("no future leak", lambda: _future(attn, s, diagnosis, E, L, seed, dtype, padding_side))
    if s.parameters:
        guarded("gradients", lambda: _gradients(attn, s, diagnosis, E, L, seed, dtype, padding_side))
    else:
        ran("gradients", "skipped: no parameters (pass an nn.Module, not a function)")
    if s.cache is not None:
        guarded("cache", lambda: _cache(s, diagnosis, seed))
    else:
        ran("cache", "skipped: no cache protocol")


def _listed(pairs: list[tuple[int, int]], limit: int = 6) -> str:
    """The first `limit` pairs, and how many more there are."""
    more = say(f", ... ({len(pairs) - limit} more)", f"、…（ほか {len(pairs) - limit} 組）")
    return say(", ", "、").join(map(str, pairs[:limit])) + (more if len(pairs) > limit else "")


def _positions(mask: torch.Tensor) -> str:
    """The (item, position) pairs of a bool (N, L) mask, listed."""
    return _listed([tuple(p) for p in mask.nonzero().tolist()])


def _nonfinite(attn: object, s: Subject, diagnosis: Diagnosis, E: int, L: int, seed: int, padding_side: str) -> str:
    """A padded batch (lengths L, L/2 and 1) on each padding side: NaN or inf at a real position is a finding;
    at pad positions only, a note (what a module writes there is not specified)."""
    run = Runner(attn, pooled=s.pooled)
    g = torch.Generator().manual_seed(seed + 1)
    lengths = [L, max(1, L // 2), 1]
    outcome = "passed"
    for side in sides(padding_side):
        x = torch.randn(len(lengths), L, E, generator=g)
        kpm = key_padding_mask(lengths, L, side=side)
        run.where = say(f"a batch {side}-padded to {L}",
                        f"{L} まで{'右' if side == 'right' else '左'}パディングしたバッチ")
        out = run(x, kpm, None)
        bad = ~out.flatten(2).isfinite().all(-1)            # (N, L) or (N, 1) pooled
        real = torch.ones_like(bad) if s.pooled else ~kpm
        if (bad & real).any():
            diagnosis.findings.append(finding("nan-forward", s.where, say(
                f"Outputs at real positions (item, position) {_positions(bad & real)} were NaN or inf in {run.where} "
                f"(lengths {lengths}).",
                f"{run.where}（長さ {lengths}）で、実トークンの位置（サンプル, 位置）{_positions(bad & real)} の出力が "
                "NaN か inf になった。")))
            return "failed"
        if (bad & ~real).any():
            diagnosis.notes.append(say(
                f"{s.where}: NaN or inf at pad positions only ({_positions(bad & ~real)}, {run.where}); what a "
                "module writes at pads is not specified, but a next layer that reads them turns it into nan-forward",
                f"{s.where}：パッド位置だけに NaN か inf（{_positions(bad & ~real)}、{run.where}）。"
                "パッド位置の出力は決まっていないが、それを読む次の層があれば nan-forward になる"))
            outcome = "passed (NaN at pads only)"
    return outcome


def _batch_dependence(attn: object, s: Subject, diagnosis: Diagnosis, E: int, L: int, seed: int,
                      tolerance: Tolerance) -> str:
    """Three unpadded items of length L: item 0's output must not change when items 1 and 2 do (the same shapes),
    and each item's output must be its output alone (a batch of one)."""
    run = Runner(attn, pooled=s.pooled)
    g = torch.Generator().manual_seed(seed + 2)
    x = torch.randn(3, L, E, generator=g)
    kpm = torch.zeros(3, L, dtype=torch.bool)
    run.where = say("the batch-dependence check", "バッチ依存の検査")
    out = run(x, kpm, None)
    edited = x.clone()
    edited[1:] = torch.randn(2, L, E, generator=g) * 10
    batch = say(f"an unpadded batch of 3 (length {L})", f"パディングのない 3 サンプルのバッチ（長さ {L}）")
    comparisons = [(run(edited, kpm, None)[:1], out[:1], True,
                    say(f"New values in items 1 and 2 of {batch} changed item 0's output",
                        f"{batch}でサンプル 1 と 2 に新しい値を入れると、サンプル 0 の出力が変わった"))]
    comparisons += [(run(x[i:i + 1], kpm[i:i + 1], None), out[i:i + 1], False,
                     say(f"Item {i} of {batch} differs from the same item run alone",
                         f"{batch}のサンプル {i} が、同じサンプルを単独で実行した結果と違う")) for i in range(3)]
    for a, b, same_shapes, what in comparisons:
        d, failing, _ = tolerance.within(a, b, 2, same_shapes=same_shapes)
        if failing.any():
            diagnosis.findings.append(finding("batch-dependence", s.where, say(
                f"{what}, by up to {float(d.max()):.2g} ({tolerance}).",
                f"{what}（最大の差 {float(d.max()):.2g}、{tolerance}）。")))
            return "failed"
    return "passed"


def _padding(attn: object, s: Subject, diagnosis: Diagnosis, E: int, L: int, seed: int, dtype: torch.dtype | None,
             padding_side: str, attn_mask: torch.Tensor | None) -> str:
    """check_padding_invariance on batches of 3 and on a padded item alone; then, if the model takes position ids,
    the left-padded check without them (the position-ids warning)."""
    outcome = "passed"
    alone = say("a padded item alone (batch size 1)", "パディングしたサンプル単独（バッチサイズ 1）")
    for batch_size, label in ((3, say("padded batches", "パディングしたバッチ")), (1, alone)):
        report = check_padding_invariance(attn, embed_dim=E, padding_side=padding_side, max_len=L, seed=seed,
                                          dtype=dtype, pooled=s.pooled, batch_size=batch_size,
                                          trials=20 if batch_size > 1 else 8)
        if report.passed:
            continue
        outcome = "failed"
        if math.isnan(report.worst_diff):
            code = "nan-forward"
            measured = say(f"In {label}, {report.first_failure}.", f"{label}で、{report.first_failure}。")
        else:
            code = "pad-leak"
            measured = say(
                f"Real-token outputs depend on the padding in {label} ({padding_side} padding): worst difference "
                f"{report.worst_diff:.2g} ({report.tolerance}); first failure: {report.first_failure}.",
                f"{label}を{RUN_ON_SIDE_JA[padding_side]}、実トークンの出力がパディングに依存する。最大の差 "
                f"{report.worst_diff:.2g}（{report.tolerance}）、最初の失敗：{report.first_failure}。")
        if not any(f.code == code and f.where == s.where for f in diagnosis.findings):
            diagnosis.findings.append(finding(code, s.where, measured))
    if padding_side == "right" and attn_mask is None and s.without_position_ids is None and not s.pooled:
        diagnosis.notes.append(say(f"{s.where}: checked with right padding only (it takes no position_ids, so left "
                                   "padding would move its absolute positions)",
                                   f"{s.where}：右パディングだけで検査した（position_ids を受け取らないので、"
                                   "左パディングは絶対位置をずらす）"))
    if outcome == "passed" and s.without_position_ids is not None and attn_mask is None:
        report = check_padding_invariance(s.without_position_ids, embed_dim=E, padding_side="left", max_len=L,
                                          seed=seed, dtype=dtype, pooled=s.pooled, trials=8)
        if not report.passed:
            diagnosis.findings.append(finding("position-ids", s.where, say(
                f"Left-padded without position_ids, real-token outputs changed by up to {report.worst_diff:.2g} "
                f"({report.first_failure}); with position ids from the mask they did not.",
                f"position_ids なしで左パディングすると、実トークンの出力が最大 {report.worst_diff:.2g} 変わった"
                f"（{report.first_failure}）。マスクから作った位置 ID を渡すと変わらなかった。")))
    return outcome


def _pattern(attn: object, s: Subject, diagnosis: Diagnosis, E: int, length: int | None,
             attn_mask: torch.Tensor | None, seed: int, dtype: torch.dtype | None) -> str:
    """check_mask_pattern against the expectation; each leak and over-masked pair sorted into its code."""
    pattern = s.pattern if s.pattern is not None else attn
    pattern = owning_mask(pattern, attn_mask) if s.pattern is not None else pattern
    report = check_mask_pattern(pattern, s.expect, window=s.window, layers=s.layers, length=length, embed_dim=E,
                                seed=seed, dtype=dtype)
    diagnosis.patterns.append((s.where, report))
    if report.passed:
        return "passed"
    windowed = s.expect == "sliding_window" or getattr(s.expect, "window", None) is not None
    causal = blocks_the_future(s.expect, report.expected.shape[0], s.window)
    groups: dict[tuple[str, bool], list[tuple[int, int]]] = {}   # (code, leak?) -> (query, key) pairs
    for q, k in report.leaks:
        code = "future-leak" if k > q and causal else "window-mismatch" if windowed else "document-leak"
        groups.setdefault((code, True), []).append((q, k))
    for q, k in report.over_masked:
        code = "window-mismatch" if windowed and (k <= q or not causal) else "over-masking"
        groups.setdefault((code, False), []).append((q, k))
    L = report.expected.shape[0]
    for (code, leak), pairs in groups.items():
        shown = _listed(pairs)
        kind = (say("depends on that input, which it must not", "その入力に依存している（してはならない）")
                if leak else
                say("does not depend on that input, which it should", "その入力に依存していない（するはずである）"))
        diagnosis.findings.append(finding(code, s.where, say(
            f"Against {report.check}, the output at (query, key) {shown} {kind} ({len(pairs)} of {L * L} pairs, "
            f"inferred on one unpadded sequence at a time).",
            f"{report.check} に対して、（クエリ, キー）{shown} の出力が{kind}（{L * L} 組のうち {len(pairs)} 組、"
            "パディングのない系列を 1 つずつ調べた）。")))
    if report.nonfinite:
        diagnosis.notes.append(say(f"{s.where}: NaN or inf at positions {list(report.nonfinite)} in the mask "
                                   "pattern's runs (their rows were not compared)",
                                   f"{s.where}：マスクパターンの実行で位置 {list(report.nonfinite)} が NaN か inf"
                                   "（その行は比較していない）"))
    return "failed"


def describe(blocked: torch.Tensor) -> str:
    """What an inferred (L, L) mask looks like, in words."""
    L = blocked.shape[0]
    off = ~torch.eye(L, dtype=torch.bool)
    for name in ("bidirectional", "causal"):
        if torch.equal(blocked & off, expected_mask(name, L) & off):
            return name
    for w in range(1, L):
        if torch.equal(blocked & off, expected_mask("sliding_window", L, window=w) & off):
            return f"sliding_window (window {w})"
    return say("none of causal, bidirectional or a sliding window",
               "因果、双方向、スライディングウィンドウのどれでもない")


def _inferred_only(attn: object, s: Subject, diagnosis: Diagnosis, E: int, L: int, seed: int,
                   dtype: torch.dtype | None) -> str:
    """No expectation: infer the mask and say what it looks like, judging nothing."""
    inferred = infer_mask(attn if s.pattern is None else s.pattern, L, embed_dim=E, seed=seed, dtype=dtype)
    diagnosis.notes.append(say(
        f"{s.where}: no expectation, so the mask was inferred, not judged: it looks {describe(inferred)} at "
        f"length {L}; pass expect= (or set is_causal on the module) to check it",
        f"{s.where}：期待が不明なので、マスクは推定しただけで判定していない。長さ {L} では"
        f"{describe(inferred)}に見える。判定するには expect= を渡す（またはモジュールに is_causal を持たせる）"))
    return "skipped: no expectation (inferred only)"


def _future(attn: object, s: Subject, diagnosis: Diagnosis, E: int, L: int, seed: int, dtype: torch.dtype | None,
            padding_side: str) -> str:
    """check_no_future_leak on padded batches (the pattern check runs unpadded items alone)."""
    report = check_no_future_leak(attn, embed_dim=E, padding_side=padding_side, max_len=L, seed=seed, dtype=dtype)
    if report.passed:
        return "passed"
    if not any(f.code == "future-leak" and f.where == s.where for f in diagnosis.findings):
        diagnosis.findings.append(finding("future-leak", s.where, say(
            f"In padded batches, earlier outputs changed when later tokens did: worst difference "
            f"{report.worst_diff:.2g} ({report.tolerance}); first failure: {report.first_failure}.",
            f"パディングしたバッチで、後のトークンを変えると前の出力が変わった。最大の差 {report.worst_diff:.2g}"
            f"（{report.tolerance}）、最初の失敗：{report.first_failure}。")))
    return "failed"


def _gradients(attn: object, s: Subject, diagnosis: Diagnosis, E: int, L: int, seed: int, dtype: torch.dtype | None,
               padding_side: str) -> str:
    """check_gradient_padding_invariance: NaN gradients, or gradients that depend on the padding."""
    report = check_gradient_padding_invariance(attn, parameters=s.parameters, embed_dim=E, padding_side=padding_side,
                                               max_len=L, seed=seed, dtype=dtype, pooled=s.pooled, trials=3)
    if report.passed:
        return "passed"
    if math.isnan(report.worst_diff):
        measured = say(f"Under a loss that reads only real positions, {report.first_failure}.",
                       f"実トークンの位置だけを読む損失で、{report.first_failure}。")
        diagnosis.findings.append(finding("nan-gradient", s.where, measured))
    elif not any(f.code == "pad-leak" and f.where == s.where for f in diagnosis.findings):
        diagnosis.findings.append(finding("pad-leak", s.where + say(" (gradients)", "（勾配）"), say(
            f"Gradients depend on the padding: worst difference {report.worst_diff:.2g} ({report.tolerance}); first "
            f"failure: {report.first_failure}.",
            f"勾配がパディングに依存する。最大の差 {report.worst_diff:.2g}（{report.tolerance}）、最初の失敗："
            f"{report.first_failure}。")))
    return "failed"


def _cache(s: Subject, diagnosis: Diagnosis, seed: int) -> str:
    assert s.cache is not None
    mismatches = s.cache(seed)
    for where, measured in mismatches:
        diagnosis.findings.append(finding("cache-mismatch", f"{s.where}, {where}", measured))
    return "failed" if mismatches else "passed"


def compare(a: torch.Tensor, b: torch.Tensor, tolerance: Tolerance, real: torch.Tensor | None = None) -> str | None:
    """None if a (a cached or chunked run) agrees with b (the full pass) at the real positions, else the worst
    difference and where, in words. a, b: (N, L, ...); real: bool (N, L), True = compared."""
    a, b = a.float(), b.float()
    d, failing, _ = tolerance.within(a, b, 2)
    failing |= ~a.isfinite() & b.isfinite()                # a value the full pass has and the cached run lost
    if real is not None:
        failing &= real.reshape(*real.shape, *[1] * (a.dim() - 2))
    if not failing.any():
        return None
    where = failing.flatten(2).any(-1)
    worst = float(d[failing].nan_to_num(math.inf).max())
    return say(f"differs from the full pass by up to {worst:.2g} ({tolerance}) at (item, position) "
               f"{_positions(where)}",
               f"全体を一度に通した結果と最大 {worst:.2g} 違う（{tolerance}）。（サンプル, 位置）{_positions(where)}")


CACHE_LENGTH = 12   # tokens of a cache check: a 6-token prefix and one 6-token step, or 4 chunks of 3
CHUNKINGS = ((Bilingual("one cached step of 6 tokens", "キャッシュ付きの 6 トークンの 1 ステップ"), (6,)),
             (Bilingual("chunks of 3 tokens", "3 トークンずつのチャンク"), (3, 6, 9)))


def cache_mismatches(step: Callable[[int, int, object], tuple[torch.Tensor, object]], full: torch.Tensor,
                     tolerance: Tolerance, real: torch.Tensor | None = None, case: str = "") -> list[tuple[str, str]]:
    """Each of CHUNKINGS through step(start, end, cache) -> (output of tokens start..end-1, cache), cache None at
    the start, joined and compared with the full pass (compare); one (label, message) per mismatch."""
    found = []
    for name, cuts in CHUNKINGS:
        outs, cache, start = [], None, 0
        for end in (*cuts, CACHE_LENGTH):
            out, cache = step(start, end, cache)
            outs.append(out)
            start = end
        problem = compare(torch.cat(outs, 1), full, tolerance, real)
        if problem:
            label = name.said() + case
            found.append((label, say(f"The output of {label} {problem}.", f"{label}の出力が{problem}。")))
    return found


def plain_cache(module: object, E: int, dtype: torch.dtype | None) -> Cache:
    """The cache protocol of a plain module: module.forward_with_cache(x, cache) -> (output, cache), x (N, T, E) the
    next tokens, cache None at the start. The chunks' outputs, joined, must equal one call on all the tokens.
    An error the module raises becomes an AttnCallError naming the call, so the cache check's outcome is an
    error (as for any other check), not a traceback."""
    def call(x: torch.Tensor, cache: object, start: int) -> tuple[torch.Tensor, object]:
        try:
            out, cache = module.forward_with_cache(x, cache)   # type: ignore[attr-defined]
            return out, cache
        except Exception as error:   # the module's own error, named with the call it came from
            raise AttnCallError(f"forward_with_cache raised {type(error).__name__} on {x.shape[1]} token(s) after "
                                f"{start} cached: {error}") from error

    def runs(seed: int) -> list[tuple[str, str]]:
        x = torch.randn(2, CACHE_LENGTH, E, generator=torch.Generator().manual_seed(seed + 3))
        with torch.no_grad():
            full, _ = call(x, None, 0)
            tolerance = Tolerance.default(working_dtype(module, (), full.dtype, dtype), None, None)
            return cache_mismatches(lambda start, end, cache: call(x[:, start:end], cache, start), full, tolerance)
    return runs


def causal_by_module(module: object) -> tuple[object, str]:
    """A plain module's own declaration: its is_causal attribute, if it has a bool one."""
    flag = getattr(module, "is_causal", None)
    if isinstance(flag, bool):
        return ("causal" if flag else "bidirectional"), say(f"the module's is_causal={flag}",
                                                            f"モジュールの is_causal={flag}")
    return None, say("no expect= and no is_causal attribute", "expect= も is_causal 属性もない")

