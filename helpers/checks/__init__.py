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
(`as_attn`); for anything else, write a short adapter with this signature. A module without an attention mask to
take (a causal convolution, a state-space scan, linear attention: causal by construction) may have the signature
`attn(x, key_padding_mask)` instead (plus position_ids): it is then called without attn_mask. One example per family:

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

Mode: the checks call `attn` under torch.no_grad() (the gradient check with gradients) and never change its mode.
Put modules in eval mode (or set dropout=0): dropout makes two runs differ, and every check, the gradient check
included, first calls `attn` twice on the same input and refuses a random `attn` with the same ValueError.
In eval mode PyTorch may take its fast paths: those are then what gets checked.

Trials: random lengths, at least one real token per item. The padded length S grows over the trials from 2 to
max_len (default 16: kernels change path with the length, and windows of 7 or more need room to end), so the
first failure a report names is the shortest one. New values written where nothing may change (the pads; the
future) mix normal values (randn x 10) with values near 1e3 at a random half of the positions: a large key
raises its own score, so a weak finite fill added to the scores (-20, -30) leaks visibly instead of by less than
the tolerance (a fill written in place of the score, masked_fill(mask, -30), cannot be raised: its leak, e^-30 of a
weight, is below what any check sees).
padding_side="both" (the default) runs every trial twice, right-padded (pads last) and left-padded (pads first,
as in batched generation), on the same tokens.
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
The defaults follow the dtype the module computes in (the least precise of its parameters and its output):
float32 and float64 atol=1e-5, rtol=1e-5 (gradients rtol=1e-4); bfloat16 atol=rtol=2e-2 (gradients 5e-2);
float16 atol=rtol=4e-3 (gradients 1e-2). The report prints the tolerance used with its dtype, and a failure no
larger than 16 eps of that dtype says that it may be rounding. In bfloat16 a leak smaller than a few percent of
an output cannot be told from rounding: check the mask in float32.
Non-finite outputs: NaN, +inf, or a position with no finite feature at all, at a real position, fail the check,
even when both runs agree; an equal -inf beside finite features (a banned logit) is an equal output.
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

The package: `core` (the one trial core: calling the module, the trials, the tolerance, the report), `padding`
(check_padding_invariance, check_no_future_leak), `gradients` (check_gradient_padding_invariance) and `inference`
(infer_mask, check_mask_pattern). Every name is imported from here: `from helpers.checks import ...`.
"""

from helpers.checks.core import (
    ATOL,
    BIG_JUNK,
    GRAD_RTOL,
    JUNK_SCALE,
    LOW_PRECISION,
    MAX_LEN,
    NONFINITE,
    PADDING_SIDES,
    RTOL,
    Attn,
    AttnCallError,
    CheckReport,
    Difference,
    MaskCheckError,
    Tolerance,
    Trial,
    as_attn,
    position_ids,
)
from helpers.checks.gradients import check_gradient_padding_invariance
from helpers.checks.inference import (
    PATTERNS,
    MaskMod,
    PatternReport,
    check_mask_pattern,
    expected_mask,
    infer_mask,
    receptive_field,
)
from helpers.checks.padding import check_no_future_leak, check_padding_invariance

__all__ = [
    "ATOL", "BIG_JUNK", "GRAD_RTOL", "JUNK_SCALE", "LOW_PRECISION", "MAX_LEN", "NONFINITE", "PADDING_SIDES",
    "PATTERNS", "RTOL", "Attn", "AttnCallError", "CheckReport", "Difference", "MaskCheckError", "MaskMod",
    "PatternReport", "Tolerance", "Trial", "as_attn", "check_gradient_padding_invariance", "check_mask_pattern",
    "check_no_future_leak", "check_padding_invariance", "expected_mask", "infer_mask", "position_ids",
    "receptive_field",
]
