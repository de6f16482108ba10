"""Chapter 14: when the mask is None, who decides causality?

Three things can decide whether a query sees later keys: the mask (a tensor, or None), the kernel's `is_causal`
flag, and the module's or config's own flag. transformers 5.24.0 skips the mask when nothing needs masking
(`masking_utils.sdpa_mask` returns None) and its sdpa integration then picks `is_causal` from, in order, the
keyword `is_causal`, the module's attribute `is_causal`, and True (`getattr(module, "is_causal", True)`).

Polarity: masks from masking_utils and SDPA's bool masks say True = MAY attend; the helpers' masks (and every
`blocked` here) say True = blocked, as in the rest of the series.

The bug modules follow helpers.checks' convention, `module(x, key_padding_mask, attn_mask) -> output`, x (N, L, E),
key_padding_mask bool (N, L) True = pad; they ignore attn_mask and build their own mask, as a model does. Each
calls transformers' real mask builder (`masking_utils.sdpa_mask`) and its real sdpa integration
(`sdpa_attention_forward`), so the contract they break is the installed one.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
import torch
import transformers
from torch import nn
from transformers import masking_utils
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.modeling_utils import AttentionInterface
from transformers.models.mllama.modeling_mllama import MllamaTextModel

from helpers import arguments, diagnose, language
from helpers.attention import probe_qk
from helpers.checks import check_mask_pattern, infer_mask
from helpers.exercises import Mistake, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, say
from helpers.library import tiny
from helpers.masks import causal_mask

E, HEADS = 8, 2


# --- what the kernel received ---

class Call(NamedTuple):
    """One call of F.scaled_dot_product_attention: what the kernel got, and where the integration took is_causal
    from."""
    mask: str           # "None" or a tensor's dtype and shape, e.g. "bool (2, 1, 5, 5)"
    is_causal: bool     # the flag the kernel got
    queries: int
    keys: int           # the keys the kernel got
    source: str = "-"   # "keyword", "attribute" or "default" (getattr's True); "-": not through the registry
    keys_given: int = 0  # the keys the attention function was given (0: not through the registry)


def _is_causal_source(module: object, is_causal: object) -> str:
    """Where sdpa_attention_forward takes is_causal from (sdpa_attention.py:132)."""
    if is_causal is not None:
        return "keyword"
    return "attribute" if hasattr(module, "is_causal") else "default"


@contextlib.contextmanager
def kernel_calls() -> Iterator[list[Call]]:
    """Record every call to F.scaled_dot_product_attention inside the block as a Call; the calls still run.
    Models reach sdpa through transformers' attention registry: that entry is wrapped too, to record where
    is_causal came from (keyword, the module's attribute, or the default True) and how many keys were given."""
    real = torch.nn.functional.scaled_dot_product_attention
    registry = AttentionInterface._global_mapping
    real_sdpa = registry["sdpa"]
    calls: list[Call] = []
    pending: list[tuple[str, int]] = []

    def recording(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None = None,
                  dropout_p: float = 0.0, is_causal: bool = False, **kwargs: object) -> torch.Tensor:
        source, given = pending.pop() if pending else ("-", 0)
        calls.append(Call(form(attn_mask), bool(is_causal), query.shape[-2], key.shape[-2], source, given))
        return real(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kwargs)

    def integration(module: nn.Module, query: torch.Tensor, key: torch.Tensor, *args: object,
                    **kwargs: object) -> object:
        pending[:] = [(_is_causal_source(module, kwargs.get("is_causal")), key.shape[-2])]
        try:
            return real_sdpa(module, query, key, *args, **kwargs)
        finally:
            pending.clear()
    torch.nn.functional.scaled_dot_product_attention = recording
    registry["sdpa"] = integration
    try:
        yield calls
    finally:
        torch.nn.functional.scaled_dot_product_attention = real
        registry["sdpa"] = real_sdpa


def form(mask: torch.Tensor | None) -> str:
    """"None", or a tensor's dtype and shape, e.g. "bool (2, 1, 5, 5)"."""
    return "None" if mask is None else f"{str(mask.dtype).removeprefix('torch.')} {tuple(mask.shape)}"


# --- step 1: SDPA's own rule ---

def causal(L: int, S: int | None = None) -> torch.Tensor:
    """The causal mask aligned bottom-right (query i is position S - L + i), bool (L, S), True = blocked."""
    L = arguments.integer(L, "L", minimum=1)
    S = L if S is None else arguments.integer(S, "S", minimum=1)
    if S < L:
        raise ValueError(f"S (keys) must be at least L (queries), got L={L}, S={S}")
    return causal_mask(L, offset=S - L)


# --- step 2: tiny models, and what their kernel got ---

DECODER = dict(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
               head_dim=4)


def tiny_models() -> dict[str, nn.Module]:
    """The chapter's tiny models, built afresh: a decoder-only Llama (causal, and with config.is_causal=False),
    BERT, a BART encoder–decoder, Mllama's text model (cross-attention in layer 1) and Mistral (window 3)."""
    return {
        "llama": tiny(transformers.LlamaConfig, **DECODER),
        "bidirectional_llama": tiny(transformers.LlamaConfig, is_causal=False, **DECODER),
        "bert": tiny(transformers.BertConfig, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=16),
        "bart": tiny(transformers.BartConfig, d_model=8, encoder_layers=1, decoder_layers=1,
                     encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16),
        "mllama": tiny(transformers.MllamaTextConfig, MllamaTextModel, hidden_size=16, intermediate_size=32,
                       num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, cross_attention_layers=[1],
                       bos_token_id=0, eos_token_id=1, pad_token_id=2),
        "mistral": tiny(transformers.MistralConfig, sliding_window=3, **DECODER),
    }


def decision_cases(models: dict[str, nn.Module], which: str = "main") -> dict[str, tuple]:
    """{name: (model, its inputs, its attention calls in order)}: "main" (step 2's table) or "more" (BERT's
    encoder and Mistral's window, step 2's optional part). Token ids (2, 5), item 1 of the padded batch
    left-padded; 5 image tokens (2, 5, 16) for Mllama's cross-attention."""
    _check_cases(models, which)
    ids = torch.randint(3, 20, (2, 5), generator=torch.Generator().manual_seed(0))
    unpadded, padded = torch.ones(2, 5, dtype=torch.long), torch.tensor([[1, 1, 1, 1, 1], [0, 1, 1, 1, 1]])
    image = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    llama, mllama = models["llama"], models["mllama"]
    if which == "more":
        return {"BERT encoder, nothing padded": (models["bert"], dict(input_ids=ids), ["self"]),
                "Mistral window 3, 5 tokens": (models["mistral"], dict(input_ids=ids), ["self"]),
                "Mistral window 3, 2 tokens": (models["mistral"], dict(input_ids=ids[:, :2]), ["self"])}
    return {
        "Llama, nothing padded": (llama, dict(input_ids=ids, attention_mask=unpadded), ["self"]),
        "Llama, one item left-padded": (llama, dict(input_ids=ids, attention_mask=padded), ["self"]),
        "Llama, config.is_causal=False": (models["bidirectional_llama"], dict(input_ids=ids), ["self"]),
        "Llama, keyword is_causal=False": (llama, dict(input_ids=ids, is_causal=False), ["self"]),
        "BART": (models["bart"], dict(input_ids=ids, decoder_input_ids=ids[:, :4]), ["encoder", "decoder", "cross"]),
        "Mllama, 5 text tokens": (mllama, dict(input_ids=ids, cross_attention_states=image, use_cache=False),
                                  ["self", "cross"]),
        "Mllama, 3 text tokens": (mllama, dict(input_ids=ids[:, :3], cross_attention_states=image,
                                               use_cache=False), ["self", "cross"]),
    }


def kernel_decisions(models: dict[str, nn.Module], which: str = "main") -> tuple[dict, dict]:
    """Run each of decision_cases(models, which) under kernel_calls(): ({(case, attention): Call},
    {case: last_hidden_state}). One Call per attention call, in the order the case names them."""
    rows, outputs = {}, {}
    for name, (model, inputs, parts) in decision_cases(models, which).items():
        with kernel_calls() as calls, torch.no_grad():
            outputs[name] = model(**inputs).last_hidden_state
        for part, call in zip(parts, calls, strict=True):
            rows[name, part] = call
    return rows, outputs


def decisions_table(rows: dict) -> str:
    """kernel_decisions' rows as a table: mask, is_causal the kernel got, where it came from, queries x keys."""
    lines = [f"{'model, attention':40s} {'mask':18s} {'is_causal':9s}  {'taken from':10s}  queries x keys"]
    for (name, part), call in rows.items():
        given = f" (of {call.keys_given} given)" if call.keys_given != call.keys else ""
        lines.append(f"{name + ', ' + part:40s} {call.mask:18s} {call.is_causal!s:9s}  {call.source:10s}  "
                     f"{call.queries} x {call.keys}{given}")
    return "\n".join(lines)


def is_causal_attributes(models: dict[str, nn.Module]) -> dict[str, object]:
    """The is_causal attribute of three attention modules ("missing" when there is none)."""
    return {"LlamaAttention": getattr(models["llama"].layers[0].self_attn, "is_causal", "missing"),
            "MllamaTextCrossAttention": getattr(models["mllama"].layers[1].cross_attn, "is_causal", "missing"),
            "BART's cross-attention": getattr(models["bart"].decoder.layers[0].encoder_attn, "is_causal", "missing")}


def _check_cases(models: object, which: object) -> None:
    if which not in ("main", "more"):
        raise ValueError(f"which must be \"main\" or \"more\", got {which!r}")
    names = {"llama", "bidirectional_llama", "bert", "bart", "mllama", "mistral"}
    if not isinstance(models, dict) or not names <= set(models):
        raise TypeError(f"models must be the dict of tiny_models(), with the keys {sorted(names)}")


# --- the bug patterns: small modules in the checks' convention ---

class TinyAttention(nn.Module):
    """One self-attention layer (E = 8, 2 heads) whose mask and flags its subclasses decide; seeded."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(arguments.integer(seed, "seed"))
        self.qkv, self.out = nn.Linear(E, 3 * E), nn.Linear(E, E)
        self.scaling, self.embed_dim = (E // HEADS) ** -0.5, E
        self.eval()

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """q, k, v from x (N, L, E): each (N, heads, L, E / heads)."""
        q, k, v = self.qkv(x).chunk(3, -1)
        return tuple(t.view(t.shape[0], t.shape[1], HEADS, -1).transpose(1, 2) for t in (q, k, v))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """transformers' own sdpa integration, then the output projection: (N, L, E)."""
        out, _ = sdpa_attention_forward(self, q, k, v, mask, scaling=self.scaling)   # (N, L, heads, E / heads)
        return self.out(out.reshape(out.shape[0], out.shape[1], E))

    def library_mask(self, kpm: torch.Tensor, function: Callable, **options: object) -> torch.Tensor | None:
        """masking_utils.sdpa_mask for this batch: (N, 1, L, L) bool, True = may attend, or None (skipped)."""
        N, L = kpm.shape
        return masking_utils.sdpa_mask(batch_size=N, q_length=L, kv_length=L, mask_function=function,
                                       attention_mask=~kpm, **options)


class NoFlagAttention(TinyAttention):
    """Attention meant to see every token, whose module has no `is_causal` (modelled on huggingface/transformers
    #48172, Mllama's cross-attention; here it reads its own input x, so that the checks can change it). The mask
    builder skips the mask when nothing is padded, and the integration's default, True, makes it causal."""

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)                                                   # each (N, heads, L, E / heads)
        mask = self.library_mask(key_padding_mask, masking_utils.bidirectional_mask_function,
                                 allow_is_causal_skip=False, allow_is_bidirectional_skip=True)   # None: no pads
        return self.attend(q, k, v, mask)                                         # (N, L, E)


class NoFlagFixed(NoFlagAttention):
    """The fix: the module says what it is."""
    is_causal = False


class OwnMaskAfterSkip(TinyAttention):
    """A causal layer that adds its own bias (modelled on huggingface/transformers #48748, Doge): when the library
    skipped the mask (None, nothing padded), it builds one of its own from the bias alone. A mask is now given, so
    the integration passes is_causal=False, and the causal part is gone."""
    is_causal = True

    def bias(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(x.shape[0], 1, x.shape[1], x.shape[1])              # (N, 1, L, L), learned in Doge

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        mask = self.library_mask(key_padding_mask, masking_utils.causal_mask_function)   # None when no pads
        low = torch.finfo(x.dtype).min
        bias = self.bias(x) if mask is None else self.bias(x).masked_fill(~mask, low)     # the bug: no causal part
        return self.attend(q, k, v, bias)


class OwnMaskFixed(OwnMaskAfterSkip):
    """The fix: ask for the causal mask always (allow_is_causal_skip=False), then add the bias to it."""

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        mask = self.library_mask(key_padding_mask, masking_utils.causal_mask_function, allow_is_causal_skip=False)
        return self.attend(q, k, v, self.bias(x).masked_fill(~mask, torch.finfo(x.dtype).min))


class BidirectionalFlagLost(TinyAttention):
    """A bidirectional model whose module knows it (is_causal=False) but whose mask builder does not (modelled on
    huggingface/transformers #46077, Gemma 4 with use_bidirectional_attention="all": the modules said
    is_causal=False, config.is_causal was left unset, so the causal mask builder ran). Nothing padded: the builder
    skips the mask (None), the module's False decides, and the attention is right; padded: it builds a causal mask,
    which decides alone."""
    use_bidirectional_attention = True          # what the config says
    is_causal = False                           # what the module says (right)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        mask = self.library_mask(key_padding_mask, masking_utils.causal_mask_function)   # the builder's flag is lost
        return self.attend(q, k, v, mask)


class BidirectionalFlagFixed(BidirectionalFlagLost):
    """The fix: the flag reaches the mask builder too (in #46077, config.is_causal = False): it picks the mask
    function, and the module's is_causal."""

    @property
    def is_causal(self) -> bool:                # type: ignore[override]
        return not self.use_bidirectional_attention

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        function = (masking_utils.bidirectional_mask_function if self.use_bidirectional_attention
                    else masking_utils.causal_mask_function)
        mask = self.library_mask(key_padding_mask, function, allow_is_causal_skip=False,
                                 allow_is_bidirectional_skip=True)
        return self.attend(q, k, v, mask)


class EncoderRunAsDecoder(TinyAttention):
    """An encoder layer run with is_decoder=True (modelled on huggingface/transformers #48745, RoFormer, BigBird,
    MegatronBert, RemBert): it still builds the encoder's padding mask, and keeps the encoder's is_causal=False."""
    is_decoder = True                           # what the config says
    is_causal = False                           # copied from the encoder

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        mask = self.library_mask(key_padding_mask, masking_utils.bidirectional_mask_function,
                                 allow_is_causal_skip=False, allow_is_bidirectional_skip=True)
        return self.attend(q, k, v, mask)


class EncoderRunAsDecoderFixed(EncoderRunAsDecoder):
    """The fix: is_decoder picks the causal mask function and is_causal."""

    @property
    def is_causal(self) -> bool:                # type: ignore[override]
        return self.is_decoder

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        mask = self.library_mask(key_padding_mask, masking_utils.causal_mask_function if self.is_decoder
                                 else masking_utils.bidirectional_mask_function, allow_is_causal_skip=False)
        return self.attend(q, k, v, mask)


class FloatMaskCastToBool(TinyAttention):
    """An additive float mask (0 = may attend, finfo.min = blocked; eager's form) cast to bool for SDPA (modelled on
    huggingface/transformers PR #38094): 0 becomes False and finfo.min True, so the mask is inverted."""
    is_causal = True

    def float_mask(self, key_padding_mask: torch.Tensor) -> torch.Tensor:
        may = self.library_mask(key_padding_mask, masking_utils.causal_mask_function, allow_is_causal_skip=False)
        return torch.zeros(may.shape).masked_fill(~may, torch.finfo(torch.float32).min)   # (N, 1, L, L)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        return self.attend(q, k, v, self.float_mask(key_padding_mask).bool())        # the bug: nonzero = True


class FloatMaskFixed(FloatMaskCastToBool):
    """The fix: a cell may be attended where the float mask is 0."""

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        return self.attend(q, k, v, self.float_mask(key_padding_mask) == 0)


# (buggy class, fixed class, the intended pattern, the thread it is modelled on)
BUGS = {
    "module without is_causal": (NoFlagAttention, NoFlagFixed, "bidirectional", "huggingface/transformers #48172"),
    "own mask after the library skipped it": (OwnMaskAfterSkip, OwnMaskFixed, "causal",
                                              "huggingface/transformers #48748"),
    "bidirectional flag lost": (BidirectionalFlagLost, BidirectionalFlagFixed, "bidirectional",
                                "huggingface/transformers #46077"),
    "encoder run as a decoder": (EncoderRunAsDecoder, EncoderRunAsDecoderFixed, "causal",
                                 "huggingface/transformers #48745"),
    "float mask cast to bool": (FloatMaskCastToBool, FloatMaskFixed, "causal",
                                "huggingface/transformers PR #38094"),
}


def bug(name: str, fixed: bool = False) -> nn.Module:
    """The module of one bug pattern (BUGS), or its fix, seeded."""
    if name not in BUGS:
        raise ValueError(f"name must be one of {list(BUGS)}, got {name!r}")
    arguments.flag(fixed, "fixed")
    return BUGS[name][1 if fixed else 0]()


# --- step 3: each pattern measured ---

class BugFinding(NamedTuple):
    """One bug module (or its fix) on an unpadded batch."""
    kernel: str     # what the kernel got, e.g. "None, is_causal=True"
    applied: str    # the pattern infer_mask recovers from its behaviour
    moved: bool     # its outputs differ from the fix's (same weights) by more than 0.01
    passed: bool    # check_mask_pattern against the intended pattern
    codes: list     # helpers.diagnose's codes (empty: passed)


def bug_findings(seed: int = 2) -> dict[tuple[str, str], BugFinding]:
    """{(pattern, "buggy" or "fixed"): BugFinding} for every pattern of BUGS, on x (2, 6, E) with nothing padded."""
    x = torch.randn(2, 6, E, generator=torch.Generator().manual_seed(arguments.integer(seed, "seed")))
    no_pads = torch.zeros(2, 6, dtype=torch.bool)
    findings = {}
    for name, (buggy, fixed, intent, _thread) in BUGS.items():
        with torch.no_grad():
            fixed_out = fixed()(x, no_pads)
        for label, module in (("buggy", buggy()), ("fixed", fixed())):
            with kernel_calls() as calls, torch.no_grad():
                out = module(x, no_pads)
            findings[name, label] = BugFinding(
                f"{calls[0].mask}, is_causal={calls[0].is_causal}",
                pattern_name(infer_mask(module, 6, embed_dim=E), english=True),
                bool((out - fixed_out).abs().max() > 0.01),
                check_mask_pattern(module, intent, length=6, embed_dim=E).passed,
                diagnose(module, expect=intent).codes)
    return findings


def findings_table(findings: dict[tuple[str, str], BugFinding]) -> str:
    """bug_findings' results, one block per pattern (its thread and intent), one line per version."""
    lines = []
    for name, (_buggy, _fixed, intent, thread) in BUGS.items():
        lines.append(f"{name} ({thread}), intended {intent}:")
        for label in ("buggy", "fixed"):
            f = findings[name, label]
            lines.append(f"  {label}  kernel got {f.kernel:35s} applied {f.applied:42s} moved {f.moved!s:5s}  "
                         f"check {'passed' if f.passed else 'failed'}  diagnose {', '.join(f.codes) or 'passed'}")
    return "\n".join(lines)


def same_when_padded(name: str, seed: int = 2) -> bool:
    """Whether the bug module `name` and its fix give bit-for-bit equal outputs on a batch whose item 1 is
    left-padded (2 pads): the library then builds the mask."""
    x = torch.randn(2, 6, E, generator=torch.Generator().manual_seed(arguments.integer(seed, "seed")))
    pads = torch.zeros(2, 6, dtype=torch.bool)
    pads[1, :2] = True
    with torch.no_grad():
        return torch.equal(bug(name)(x, pads), bug(name, fixed=True)(x, pads))


# --- step 5: the regression test ---

@torch.no_grad()
def later_token_moves(module: Callable, length: int = 6, position: int | None = None, *, padded: bool = False,
                      seed: int = 0) -> torch.Tensor:
    """Change the input at `position` (default: the last) and return, per position, how far the output moved:
    float (length,), the largest |difference| over the features. padded: the batch has one pad (at the end of
    item 1; item 0 is read), so the module builds a mask."""
    if not callable(module):
        raise TypeError(f"module must be callable as module(x, key_padding_mask, attn_mask), got "
                        f"{type(module).__name__}")
    length = arguments.integer(length, "length", minimum=2)
    position = length - 1 if position is None else arguments.integer(position, "position", minimum=0)
    if position >= length:
        raise ValueError(f"position must be below length={length}, got {position}")
    arguments.flag(padded, "padded")
    g = torch.Generator().manual_seed(arguments.integer(seed, "seed"))
    x = torch.randn(2, length, E, generator=g)
    kpm = torch.zeros(2, length, dtype=torch.bool)
    kpm[1, -1] = padded
    changed = x.clone()
    changed[0, position] = torch.randn(E, generator=g) * 3
    return (module(changed, kpm, None) - module(x, kpm, None))[0].abs().amax(-1)


MOVED = 1e-6   # a bidirectional module's earlier output has moved: float32 noise lies below, real moves far above


def regression_verdicts(length: int = 6) -> dict[tuple[str, str], tuple[str, bool, bool]]:
    """Step 5's test on every pattern of BUGS and its fix: {(pattern, "buggy" or "fixed"): (intent, passes
    unpadded, passes padded)}. A causal module passes when the last token leaves every earlier output bit for bit
    the same; a bidirectional one when it moves every earlier output by more than MOVED (1e-6, a float32 bound: the
    smallest move shrinks with the length)."""
    length = arguments.integer(length, "length", minimum=2)
    verdicts = {}
    for name, (buggy, fixed, intent, _thread) in BUGS.items():
        for label, module in (("buggy", buggy()), ("fixed", fixed())):
            passes = []
            for padded in (False, True):
                earlier = later_token_moves(module, length, padded=padded)[:-1]          # (length - 1,)
                passes.append(bool((earlier == 0).all()) if intent == "causal" else bool((earlier > MOVED).all()))
            verdicts[name, label] = (intent, *passes)
    return verdicts


def verdicts_table(verdicts: dict[tuple[str, str], tuple[str, bool, bool]]) -> str:
    """regression_verdicts as a table, with what "passes" means on its last line."""
    word = {True: "passes", False: "FAILS"}
    lines = [f"{'pattern':38s} {'version':7s} {'intended':13s} {'unpadded':8s}  padded"]
    lines += [f"{name:38s} {label:7s} {intent:13s} {word[unpadded]:8s}  {word[padded]}"
              for (name, label), (intent, unpadded, padded) in verdicts.items()]
    lines.append("causal: earlier outputs bit for bit the same; bidirectional: every earlier output moved, none "
                 "within 1e-6 of where it was")
    return "\n".join(lines)


# --- step 4: the picture against the behaviour ---

def picture_view(measured: torch.Tensor) -> View:
    """Step 4: the mask the library built for a cross-attention called without a mask (None: nothing blocked)
    beside the mask measured from its behaviour (bool (L, L), True = blocked)."""
    arguments.bool_mask(measured, "measured")
    if measured.dim() != 2 or measured.shape[0] != measured.shape[1]:
        raise ValueError(f"measured must be a square (L, L) bool mask, got shape {tuple(measured.shape)}")
    built = torch.zeros_like(measured)
    labels = [str(i) for i in range(measured.shape[0])]
    axes = dict(xlabel=say("image token", "画像トークン"), ylabel=say("text token", "テキストトークン"), fmt=".0f")
    title = say("what a mask-builder view would show: None", "マスクを作る側から見た図：None")
    panels = (Panel((~built).float(), labels, labels, title=title, masked=built, **axes),
              Panel((~measured).float(), labels, labels, title=say("what the kernel applied (infer_mask)",
                                                                   "カーネルが適用したもの（infer_mask）"),
                    masked=measured, framed=measured != built, mark="×", alert=bool(measured.any()), **axes))
    name = pattern_name(measured)
    summary = say(f"Mllama cross-attention, no cross_attention_mask: built None (every image token visible); "
                  f"applied {name}",
                  f"Mllama のクロスアテンション、cross_attention_mask なし：作られたのは None（どの画像トークンも"
                  f"見える）。適用されたのは{_gap(name)}{name}。")
    return View(panels, summary, say("1: may attend    hatched: blocked    ×: the picture is wrong here",
                                     "1：参照してよい　斜線：遮断　×：図が誤っているセル"))


def measure_cross_attention(mllama: nn.Module, text_tokens: int = 6, image_tokens: int = 6) -> torch.Tensor:
    """The mask Mllama's cross-attention applies with no cross_attention_mask, measured with infer_mask: bool
    (text_tokens, image_tokens), True = the text token's output does not depend on that image token. infer_mask's
    x (N, image_tokens, 16) is fed as the image tokens; the text tokens' outputs are returned. The gates of a copy
    of the model are opened (they start at 0, closed)."""
    _check_measure(mllama, text_tokens, image_tokens)
    model = copy.deepcopy(mllama)
    for name, parameter in model.named_parameters():
        if name.endswith("_gate"):
            parameter.data.fill_(1.0)
    text = torch.randint(3, 20, (1, text_tokens), generator=torch.Generator().manual_seed(3))

    def cross_attention(x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object) -> torch.Tensor:
        return model(input_ids=text.expand(x.shape[0], -1), cross_attention_states=x,
                     use_cache=False).last_hidden_state

    return infer_mask(cross_attention, image_tokens, embed_dim=model.config.hidden_size)


def _check_measure(mllama: object, text_tokens: object, image_tokens: object) -> None:
    if not isinstance(mllama, nn.Module) or not hasattr(mllama, "config"):
        raise TypeError(f"mllama must be a MllamaTextModel, got {type(mllama).__name__}")
    text_tokens = arguments.integer(text_tokens, "text_tokens", minimum=1)
    if arguments.integer(image_tokens, "image_tokens", minimum=1) != text_tokens:
        raise ValueError(f"infer_mask reads a square mask: image_tokens must equal text_tokens={text_tokens}")


# --- the explorer: mask x is_causal x config, through transformers' sdpa integration ---

MASKS = ("none", "bool", "float", "float cast to bool")
FLAGS = ("True", "False", "missing")
CONFIGS = ("causal", "bidirectional")
LABELS_JA = {"none": "なし", "float cast to bool": "float を bool にキャスト", "missing": "属性なし",
             "causal": "因果", "bidirectional": "双方向"}  # the options' Japanese labels (code stays as it is)


def label(value: str) -> str:
    """An option of the explorer as its control shows it, in the current language."""
    return say(value, LABELS_JA.get(value, value))
LENGTH = 6


class _Probe(nn.Module):
    """An attention module with or without an is_causal attribute."""


_Q, _K = probe_qk(LENGTH, LENGTH, seed=3)
_EYE = torch.eye(LENGTH)[None, None]


def intended(config: str) -> torch.Tensor:
    """What the config asks for: bool (LENGTH, LENGTH), True = blocked."""
    if config not in CONFIGS:
        raise ValueError(f"config must be one of {CONFIGS}, got {config!r}")
    return causal(LENGTH) if config == "causal" else torch.zeros(LENGTH, LENGTH, dtype=torch.bool)


def given_mask(mask: str, config: str) -> torch.Tensor | None:
    """The mask handed to the integration: None, the config's pattern as SDPA's bool (True = may attend), as an
    additive float (0 / finfo.min), or that float cast with .bool()."""
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    may = ~intended(config)[None, None]
    if mask == "none":
        return None
    if mask == "bool":
        return may
    additive = torch.zeros(may.shape).masked_fill(~may, torch.finfo(torch.float32).min)
    return additive if mask == "float" else additive.bool()


def applied(mask: str = "none", is_causal: str = "missing", config: str = "causal") -> tuple[torch.Tensor, str]:
    """(blocked, decider): what transformers' sdpa_attention_forward applied, read from its output (value = the
    identity, so the output rows are the weights; weight 0 = blocked), and who decided."""
    if is_causal not in FLAGS:
        raise ValueError(f"is_causal must be one of {FLAGS}, got {is_causal!r}")
    given = given_mask(mask, config)
    module = _Probe()
    if is_causal != "missing":
        module.is_causal = is_causal == "True"
    out, _ = sdpa_attention_forward(module, _Q, _K, _EYE, given)      # (1, L, 1, L): the weights
    blocked = out[0, :, 0] == 0
    if given is not None:
        decider = say("the mask (a mask is given, so the integration passes is_causal=False)",
                      "マスク（マスクがあるので、統合部は is_causal=False を渡す）")
    elif is_causal == "missing":
        decider = say("the integration default (module has no is_causal: getattr(..., True))",
                      "統合部の既定値（モジュールに is_causal がない：getattr(..., True)）")
    else:
        decider = say(f"module.is_causal={is_causal} (the mask is None)",
                      f"モジュールの属性 module.is_causal={is_causal}（マスクは None）")
    return blocked, decider


def _gap(name: str) -> str:
    """The space a Japanese sentence puts before `name`: one before ASCII, none before Japanese."""
    return " " if name[:1].isascii() else ""


def _english(en: str, ja: str) -> str:
    return en


def pattern_name(blocked: torch.Tensor, *, english: bool = False) -> str:
    """"causal", "bidirectional", or a description of another pattern (in the learner's language, or in English
    for a table whose other labels are English code)."""
    pick = _english if english else say
    if torch.equal(blocked, causal(blocked.shape[0])):
        return pick("causal", "因果マスク")
    if not blocked.any():
        return pick("bidirectional", "双方向")
    if blocked.all():
        return pick("nothing: every key blocked", "何も見ない（どのキーも遮断）")
    past = torch.ones_like(blocked).tril(-1)
    if blocked[past].all() and not blocked[causal(blocked.shape[0])].all():
        return pick("inverted: the past hidden, the future seen", "反転したパターン（過去が隠れ、未来が見える）")
    cells = int(blocked.sum())
    return pick(f"another pattern ({cells} cells blocked)", f"別のパターン（遮断 {cells} セル）")


def decider_view(mask: str = "none", is_causal: str = "missing", config: str = "bidirectional") -> View:
    """Chapter 14: the mask given, and the mask the kernel applied (from its output), with who decided. There are
    only 24 settings: each view is computed once, on first use, per language (the explorer's update then only
    draws)."""
    for name, value, options in (("mask", mask, MASKS), ("is_causal", is_causal, FLAGS), ("config", config, CONFIGS)):
        if value not in options:
            raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return _decider_view(mask, is_causal, config, language.current())


@functools.cache
def _decider_view(mask: str, is_causal: str, config: str, _language: str) -> View:
    blocked, decider = applied(mask, is_causal, config)
    want = intended(config)
    given = given_mask(mask, config)
    labels = [str(i) for i in range(LENGTH)]
    wrong = blocked != want
    if given is None:
        shown, title = torch.zeros(LENGTH, LENGTH, dtype=torch.bool), say("mask given: None", "渡したマスク：None")
    else:
        shown = ~given[0, 0] if given.dtype == torch.bool else given[0, 0] != 0
        title = say(f"mask given: {mask}", f"渡したマスク：{label(mask)}")
    panels = (Panel((~shown).float(), labels, labels, title=title, masked=shown, fmt=".0f"),
              Panel((~blocked).float(), labels, labels, masked=blocked, fmt=".0f", framed=wrong, frame_color=RED,
                    mark="×", title=say("applied by the kernel (from its output)",
                                        "カーネルが適用したマスク（出力から）"),
                    alert=bool(wrong.any())))
    name = pattern_name(blocked)
    match = not wrong.any()
    summary = say(f"mask {mask}, is_causal {is_causal}, config {config}: decided by {decider}; applied {name}; "
                  f"{'matches' if match else 'does NOT match'} the intent of the config ({config})",
                  f"マスク{_gap(label(mask))}{label(mask)}、is_causal {label(is_causal)}、config {label(config)}："
                  f"決めたのは{decider}。適用されたのは{_gap(name)}{name}。"
                  f"config の意図（{label(config)}）と{'一致する' if match else '一致しない'}。")
    caption = say("1: may attend    hatched: blocked    ×: differs from the intent of the config",
                  "1：参照してよい　斜線：遮断　×：config の意図と違う")
    return View(panels, summary, caption)


def decider_explorer() -> Explorer:
    """Mask, the module's is_causal and the config -> what transformers' sdpa integration applied, and who
    decided."""
    controls = {
        "mask": widgets.Dropdown(options=[(label(m), m) for m in MASKS], value="none",
                                 description=say("mask", "マスク")),
        "is_causal": widgets.Dropdown(options=[(label(f), f) for f in FLAGS], value="missing", description="is_causal"),
        "config": widgets.Dropdown(options=[(label(c), c) for c in CONFIGS], value="bidirectional",
                                   description="config"),
    }
    return explorer(controls, decider_view, Bilingual(
        "Mask, the module's is_causal and the config -> what transformers' sdpa integration applied, and who decided.",
        'マスク、モジュールの is_causal、config → transformers の sdpa の統合部が適用したマスクと、それを決めたもの'))


EXPLORERS = (decider_explorer,)


# --- the exercises' checks ---

SITUATIONS_1 = (
    ("none", "missing", 5),     # no mask, a module without is_causal, 5 queries
    ("none", "False", 5),       # no mask, is_causal=False
    ("bool-bidirectional", "True", 5),    # a bool mask that blocks nothing, is_causal=True
    ("none", "True", 1),        # one query (a decode step), no mask, is_causal=True
)
WORDS_1 = ("causal", "bidirectional")   # is_causal=True reaches the kernel / it gets False and no key is blocked


def _situation(mask: str, flag: str, L: int) -> str:
    """What transformers' sdpa integration applies in one of SITUATIONS_1, computed from the kernel's output:
    "causal" (is_causal=True reached SDPA: its top-left triangle) or "bidirectional" (is_causal=False, and no key
    blocked)."""
    S = 5
    module = _Probe()
    if flag != "missing":
        module.is_causal = flag == "True"
    q, k = probe_qk(L, S, seed=5)
    given = None if mask == "none" else torch.ones(1, 1, L, S, dtype=torch.bool)
    out, _ = sdpa_attention_forward(module, q, k, torch.eye(S)[None, None], given)
    blocked = out[0, :, 0] == 0
    if not blocked.any():
        return "bidirectional"
    if torch.equal(blocked, ~torch.ones(L, S, dtype=torch.bool).tril()):   # is_causal's top-left triangle
        return "causal"
    raise AssertionError(f"situation {mask, flag, L}: neither word fits")


def _words(answer: object, n: int) -> tuple[object, ...]:
    if isinstance(answer, (str, bytes, dict)) or not isinstance(answer, Iterable) or isinstance(answer, torch.Tensor):
        raise Mistake(f"give a tuple of {n} strings, each \"causal\" or \"bidirectional\"",
                      f"\"causal\" か \"bidirectional\" の文字列 {n} 個のタプルで答えること")
    words = tuple(str(a).strip().lower() if isinstance(a, str) else a for a in answer)
    if len(words) != n:
        raise Mistake(f"give one word per situation: {n} of them", f"状況 1 つにつき 1 語、全部で {n} 個答えること")
    if not all(isinstance(w, str) and w in WORDS_1 for w in words):
        raise Mistake("each word must be \"causal\" or \"bidirectional\"",
                      "どの語も \"causal\" か \"bidirectional\" にすること")
    return words


LINE_148 = "is_causal = q_length > 1 and attention_mask is None and is_causal"


@exercise
def check_1(answer: object) -> None:
    """Exercise 1: what transformers' sdpa integration applies in each of SITUATIONS_1."""
    words = _words(answer, len(SITUATIONS_1))
    expected = tuple(_situation(*s) for s in SITUATIONS_1)
    if words == expected:
        return
    if words[0] != expected[0]:
        raise Mistake("situation 1: a module without is_causal is not treated as False; where does the integration "
                      "take is_causal from when the module has none?",
                      "状況 1 では、is_causal を持たないモジュールは False としては扱われない。モジュールがこの属性を"
                      "持たないとき、統合部が is_causal の値をどこから取るかを考えること")
    if words[2] != expected[2]:
        raise Mistake(f"situation 3: a mask is given; which condition of `{LINE_148}` does that break? Then "
                      "ask what this mask blocks",
                      f"状況 3 では、マスクが渡されている。`{LINE_148}` のどの条件が成り立たなくなるか、"
                      "そしてこのマスクが何を遮断するかを考えること")
    if words[3] != expected[3]:
        raise Mistake(f"situation 4: which condition of `{LINE_148}` fails here? Then ask which is_causal the "
                      "kernel gets",
                      f"状況 4 では、`{LINE_148}` のどの条件が成り立たないか、そしてカーネルがどの is_causal を"
                      "受け取るかを考えること")
    raise Mistake("situation 2: there is no mask and no keyword; where does the integration take is_causal from, "
                  "and what does it pass to the kernel?",
                  "状況 2 では、マスクもキーワード引数もない。統合部が is_causal をどこから取り、カーネルに何を"
                  "渡すかを考えること")


def reference_leak_test(module: Callable, length: int = 6) -> bool:
    """True when changing a later token moves an earlier output (padded and not), beyond 1e-6."""
    return any(bool((later_token_moves(module, length, p, padded=padded)[:p] > 1e-6).any())
               for padded in (False, True) for p in range(1, length))


class _Averaging(nn.Module):
    """A synthetic module in the checks' convention: output i = the mean of the real inputs 0 … i (causal, right by
    construction), plus `leak` times a term from the later real inputs (a future leak; none when leak is 0). kind:
    "all" (the mean of the later inputs, into every output and feature), "second last" (that, into output L - 2
    only), "one feature" (into feature 0 only), "negative" (minus the squared size of that mean, in every feature:
    for a change that makes a token larger, every earlier output moves down)."""

    KINDS = ("all", "second last", "one feature", "negative")

    def __init__(self, leak: float, kind: str = "all") -> None:
        super().__init__()
        self.leak = arguments.number(leak, "leak", minimum=0.0)
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        self.kind, self.embed_dim = kind, E

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        L = x.shape[1]
        real = (~key_padding_mask).to(x.dtype)[:, None, :]                   # (N, 1, L): 1 = a real key
        past = torch.ones(L, L, dtype=x.dtype).tril()[None]                  # (1, L, L): key j <= query i
        weights = past * real
        out = weights @ x / weights.sum(-1, keepdim=True).clamp(min=1)
        if self.leak:
            future = (1 - past) * real
            term = (future @ x) / future.sum(-1, keepdim=True).clamp(min=1)  # (N, L, E): the later inputs' mean
            if self.kind == "negative":
                term = -(term ** 2).sum(-1, keepdim=True).expand_as(term)
            elif self.kind == "second last":
                term = term * (torch.arange(L) == L - 2).to(x.dtype)[:, None]
            elif self.kind == "one feature":
                term = term * (torch.arange(x.shape[-1]) == 0).to(x.dtype)
            out = out + self.leak * term
        return out


class _CausalBidirectionalBuilder(TinyAttention):
    """A causal module (is_causal=True) whose mask builder is the bidirectional one, allowed to skip: nothing padded,
    the mask is None and is_causal=True makes it causal (right); padded, the bidirectional mask decides alone (a
    future leak). #48745's mask under sdpa, with the flag right."""
    is_causal = True

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: object = None) -> torch.Tensor:
        q, k, v = self.heads(x)
        mask = self.library_mask(key_padding_mask, masking_utils.bidirectional_mask_function,
                                 allow_is_causal_skip=False, allow_is_bidirectional_skip=True)
        return self.attend(q, k, v, mask)


def _leak_cases() -> dict[str, tuple[nn.Module, bool, str | None]]:
    """Modules the learner's leak test is run on, with the right verdict (True = a future leak) and the mistake
    a wrong "no leak" on it points at (None: the general ones)."""
    cases = {}
    for name in ("own mask after the library skipped it", "encoder run as a decoder", "float mask cast to bool"):
        for fixed in (False, True):
            cases[f"{name}{' (fixed)' if fixed else ''}"] = (bug(name, fixed), not fixed, None)
    cases["synthetic: leaks by a large amount"] = (_Averaging(1.0), True, None)
    cases["synthetic: leaks by a tiny amount (1/1000)"] = (_Averaging(1e-3), True, None)
    cases["synthetic: correct"] = (_Averaging(0.0), False, None)
    cases["is_causal=True with a bidirectional mask builder"] = (_CausalBidirectionalBuilder(), True, "padded")
    cases["synthetic: leaks negatively"] = (_Averaging(1.0, "negative"), True, "sign")
    cases["synthetic: leaks into output L - 2 only"] = (_Averaging(1.0, "second last"), True, "position")
    cases["synthetic: leaks 1e-5 into one feature"] = (_Averaging(1e-5, "one feature"), True, "feature")
    return cases


class _Watched:
    """A module as the learner's function sees it: every call runs the module, and its key_padding_mask is kept,
    so that a hint can name the batch the function tried."""

    def __init__(self, module: nn.Module) -> None:
        self.module, self.masks = module, []

    def __call__(self, x: object, key_padding_mask: object = None, attn_mask: object = None) -> object:
        self.masks.append(key_padding_mask)
        return self.module(x, key_padding_mask, attn_mask)

    def __getattr__(self, name: str) -> object:
        return getattr(self.module, name)


def _verdict(got: object) -> bool | None:
    """The learner's return value as a bool, or None if it is not a verdict (a bool, numpy bool, 1-element bool
    tensor or array)."""
    if isinstance(got, (bool, np.bool_)):
        return bool(got)
    if isinstance(got, torch.Tensor) and got.dtype == torch.bool and got.numel() == 1:
        return bool(got)
    if isinstance(got, np.ndarray) and got.dtype == np.bool_ and got.size == 1:
        return bool(got)
    return None


def _batch_mistake(masks: list[object]) -> Mistake | None:
    """A hint when the batch the function built breaks the convention (key_padding_mask bool, True = pad)."""
    for kpm in masks:
        if not isinstance(kpm, torch.Tensor) or kpm.dtype != torch.bool:
            what = type(kpm).__name__ if not isinstance(kpm, torch.Tensor) else str(kpm.dtype)
            return Mistake(f"key_padding_mask must be a bool tensor (N, L) with True = pad, got {what}",
                           f"key_padding_mask は形状 (N, L) の bool テンソル（True = パッド）にすること。渡されたのは "
                           f"{what} である")
        if kpm.dim() == 2 and kpm.all(-1).any():
            return Mistake("key_padding_mask says True = pad: an item whose every position is True is all pads; "
                           "False marks a real token",
                           "key_padding_mask では True = パッドである。すべての位置が True のサンプルは、全体がパッドに"
                           "なる。実トークンは False で表す")
    return None


@exercise
def check_2(answer: object) -> None:
    """Exercise 2: a function leaks(module) -> bool, True when a later token moves an earlier output."""
    if not callable(answer):
        raise Mistake("give a function leaks(module) that returns True or False",
                      "answer_2 には、True か False を返す関数 leaks(module) を渡すこと")
    results = []   # (name, the right verdict, the learner's verdict, the batches it tried, the hint on a miss)
    for name, (module, leak, hint) in _leak_cases().items():
        watched = _Watched(module)
        try:
            got = answer(watched)
        except Exception as error:   # noqa: BLE001
            text = str(error).splitlines()[0][:80] if str(error) else ""
            raise (_batch_mistake(watched.masks) or Mistake(
                f"your function raised {type(error).__name__} on the module \"{name}\": {text}",
                f"モジュール「{name}」を渡すと、書いた関数で {type(error).__name__} が発生した（{text}）")) from None
        verdict = _verdict(got)
        if verdict is None:
            raise Mistake("your function must return a bool (True = leaks), not a number or a text: compare the "
                          "change with a bound",
                          "書いた関数は、数や文字列ではなく bool（True = 漏れる）を返すこと。変化を上限と比べた"
                          "結果を返せばよい")
        assert leak == reference_leak_test(module)
        results.append((name, leak, verdict, watched.masks, hint))
    if all(verdict != leak for _, leak, verdict, _, _ in results):
        raise Mistake("every verdict of your function is the opposite of the right one: True must mean \"leaks\"",
                      "書いた関数の判定はすべて逆になっている。True が「漏れる」を表すようにすること")
    for name, leak, verdict, masks, hint in results:
        if verdict == leak:
            continue
        mistake = _batch_mistake(masks)
        if mistake is not None:
            raise mistake
        padded = any(bool(kpm.any()) for kpm in masks)
        unpadded = any(not bool(kpm.any()) for kpm in masks)
        missed = f"\"{name}\" leaks, and your test says it does not: "
        missed_ja = f"「{name}」は未来が漏れるのに、書いたテストは漏れないと判定した。"
        if leak and not unpadded:
            raise Mistake(missed + "your function tried padded batches only; with nothing padded the library skips "
                          "the mask, and this module behaves differently there",
                          missed_ja + "書いた関数はパディングのあるバッチしか試していない。パディングがないと"
                          "ライブラリはマスクを省き、このモジュールはそこで振る舞いが変わる")
        if leak and hint == "padded" and not padded:
            raise Mistake(missed + "your function tried unpadded batches only; with a pad the library builds a mask, "
                          "and this module behaves differently there",
                          missed_ja + "書いた関数はパディングのないバッチしか試していない。パッドがあるとライブラリは"
                          "マスクを作り、このモジュールはそこで振る舞いが変わる")
        if leak and hint == "sign":
            raise Mistake(missed + "its earlier outputs move down, not up; a move down is a move too",
                          missed_ja + "このモジュールでは、前の出力が増えるのではなく減る。減る向きの変化も漏れである")
        if leak and hint == "position":
            raise Mistake(missed + "it moves one earlier output only, and not output 0; every output before the "
                          "changed position must stay",
                          missed_ja + "このモジュールが動かすのは前の出力のうち 1 つだけで、出力 0 ではない。変えた位置"
                          "より前の出力は、どれも動いてはならない")
        if leak and hint == "feature":
            raise Mistake(missed + "it moves one feature of the earlier outputs by a little; an average over "
                          "outputs and features dilutes that, and one moved number is already a leak",
                          missed_ja + "このモジュールは前の出力の特徴量 1 つだけを少し動かす。出力と特徴量について"
                          "平均すると変化が薄まるが、1 つの値でも動けば漏れである")
        if leak:
            raise Mistake(missed + "a leak can be tiny; any move of an output before the changed position is a leak",
                          missed_ja + "漏れはごく小さいこともある。変えた位置より前の出力が少しでも動けば漏れである")
        if padded:   # a padded batch: the test compared pad outputs, or outputs at or after the change (either)
            raise Mistake(f"\"{name}\" is correct, and your test says it leaks: only the real tokens' outputs "
                          "before the changed position must stay; the outputs at or after it may move, and so may "
                          "the outputs at pad positions (a pad query may see any key)",
                          f"「{name}」は正しいのに、書いたテストは漏れると判定した。動いてはならないのは、変えた位置"
                          "より前にある実トークンの出力だけである。変えた位置とそれより後の出力は動いてよく、パッド"
                          "位置の出力も動いてよい（パッドのクエリはどのキーを参照してもよい）")
        raise Mistake(f"\"{name}\" is correct, and your test says it leaks: an output at or after the changed "
                      "position may move; only the earlier ones must stay",
                      f"「{name}」は正しいのに、書いたテストは漏れると判定した。変えた位置とそれより後の出力は"
                      "動いてよい。動いてはならないのは、それより前の出力だけである")


def position_bias_blocked(L: int = 6) -> torch.Tensor:
    """What the sdpa integration applies to a module with is_causal=True given no mask but a (zero) position_bias:
    bool (L, L), True = blocked (create_position_bias_mask builds the causal part itself)."""
    module = _Probe()
    module.is_causal = True
    q, k = probe_qk(L, L, seed=3)
    bias = torch.zeros(1, 1, L, L)
    out, _ = sdpa_attention_forward(module, q, k, torch.eye(L)[None, None], None, position_bias=bias)
    return out[0, :, 0] == 0
