"""Chapter 17: the gallery's entries, the stored diagnoses, the explorer and the exercise checks
(helpers/chapters/ch17_the_bug_gallery.py)."""

import pytest
import torch

from helpers.chapters import ch17_the_bug_gallery as ch17
from helpers.exercises import Mistake
from helpers.language import speaking
from helpers.masks import causal_mask
from tests.chapters import japanese_hint

# what diagnose finds on each buggy module (the pad = eos collator: the chapter's label check)
BUGGY = {
    "position ids": ("pad-leak",),
    "pad = eos": ("eos-untrained", "eos-unattended"),
    "packing": ("document-leak",),
    "fp16 fill": ("nan-forward", "future-leak", "nan-gradient"),
    "dead rows": ("nan-gradient",),
    "cross-attention": ("pad-leak", "over-masking"),
    "bidirectional flag": ("pad-leak",),
    "cache offset": ("cache-mismatch",),
    "window": ("window-mismatch",),
    "bool polarity": ("pad-leak", "over-masking"),
    "hybrid convolution": ("pad-leak",),
    "mean pooling": ("pad-leak",),
}


def test_the_gallery_has_twelve_entries_with_threads():
    assert tuple(BUGGY) == ch17.KEYS
    for entry in ch17.GALLERY.values():
        assert "#" in entry.thread and 2024 <= entry.year <= 2026 and entry.chapter.endswith(".ipynb")


@pytest.mark.parametrize("key", list(BUGGY))
def test_every_buggy_entry_gets_its_finding_and_every_fix_passes(key):
    buggy, fixed = ch17.diagnosis(key, "buggy"), ch17.diagnosis(key, "fixed")
    assert buggy.codes == BUGGY[key] and not buggy.passed
    assert fixed.codes == () and fixed.passed


def test_the_almost_fixes():
    assert ch17.diagnosis("position ids", "almost").codes == ("position-ids",)
    assert ch17.diagnosis("position ids", "almost").passed                  # a warning, not a failure
    assert ch17.diagnosis("dead rows", "almost").codes == ("nan-gradient",)
    for key in ch17.KEYS:
        if key != "position ids":
            assert not ch17.diagnosis(key, "almost").passed, key


def test_the_stored_diagnoses_equal_a_fresh_run():
    assert ch17.stored() == ch17.precompute(), "run ch17.write_stored() after changing the gallery or diagnose"


def test_the_collator_and_its_check():
    batch = ch17.collate(ch17.SEQUENCES, "fixed")
    assert ch17.eos_trained(batch, ch17.SEQUENCES) == 3
    assert ch17.eos_trained(ch17.collate(ch17.SEQUENCES, "buggy"), ch17.SEQUENCES) == 0
    assert ch17.label_findings("almost") == ["eos-untrained"]


def test_the_packed_expectation_and_real_index():
    blocked = ch17.packed_expectation(8)
    assert not blocked[5, 4] and blocked[4, 3] and blocked[2, 3]
    kpm = torch.tensor([[True, True, False, False]])
    assert ch17.real_index(kpm).tolist() == [[0, 0, 0, 1]]


def test_the_fp16_fill_is_minus_inf_and_the_fix_is_finite():
    assert torch.tensor(-1e9).half().item() == float("-inf")
    assert torch.tensor(torch.finfo(torch.float32).min).half().item() == float("-inf")
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(0))
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[1, :2] = True
    with torch.no_grad():
        assert ch17.build("fp16 fill", "buggy")(x, kpm).isnan().any()
        assert ch17.build("fp16 fill", "fixed")(x, kpm).isfinite().all()


def test_the_cross_attention_module_has_no_is_causal():
    assert not hasattr(ch17.build("cross-attention"), "is_causal")
    assert not hasattr(ch17.build("cross-attention", "almost"), "is_causal")
    assert ch17.build("cross-attention", "fixed").is_causal is False


def test_bound_is_portable():
    assert ch17.bound("worst difference 0.034 (atol 1e-05). Usually ...") == "> 1e-3"
    assert ch17.bound("by up to 2.5 after the first step") == "> 1e-1"
    assert ch17.bound("the gradient of qkv.weight is NaN") == "NaN"
    assert ch17.bound("no number here") == ""


def test_the_sweep_counts():
    data = ch17.sweep()
    assert ch17.sweep_summary(data)["built"] == 328 and len(ch17.sweep_failures(data)) == 16


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="key must be one of"):
        ch17.build("nope")
    with pytest.raises(ValueError, match="variant must be one of"):
        ch17.build("packing", "half")
    with pytest.raises(ValueError, match="collator"):
        ch17.build("pad = eos")
    with pytest.raises(ValueError, match="n must be one of"):
        ch17.exercise_module(5)


def test_the_explorer_shows_its_view_and_moves():
    box = ch17.gallery_explorer()
    try:
        assert "document-leak" in box.summary.value
        box.controls["variant"].value = "fixed"
        assert "passed" in box.summary.value
        box.controls["entry"].value = "pad = eos"
        assert "label check" in box.summary.value
    finally:
        box.close()
    assert len(ch17.gallery_view("window", "buggy").panels) == 2
    assert ch17.gallery_view("dead rows", "buggy").panels[0].matrix.shape == (8, 8)


# --- the exercises ---

class FixedWeakFill(ch17.WeakFill):
    def forward(self, x, key_padding_mask, attn_mask=None):
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-1, -2) * 0.5
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], torch.finfo(scores.dtype).min)
        return self.merge(scores.softmax(-1) @ v)


class FixedPeekAhead(ch17.PeekAhead):
    def blocked(self, kpm):
        return torch.ones(kpm.shape[1], kpm.shape[1], dtype=torch.bool).triu(1) | kpm[:, None, None, :]


class FixedSeqFirst(ch17.SeqFirst):
    def seq_first(self, x):
        return x.transpose(0, 1)

    def batch_first(self, y):
        return y.transpose(0, 1)


class FixedCacheNoMask(ch17.CacheNoMask):
    def step_mask(self, T, offset):
        return causal_mask(T, offset=offset)


FIXES = {1: ("pad-leak", FixedWeakFill), 2: ("future-leak", FixedPeekAhead), 3: ("batch-dependence", FixedSeqFirst),
         4: ("cache-mismatch", FixedCacheNoMask)}


def _check(n):
    return getattr(ch17, f"check_{n}")


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_each_exercise_accepts_its_fix_as_a_class_or_an_instance(n):
    code, fixed = FIXES[n]
    assert code in ch17.exercise_codes(n)
    _check(n).solution((code, fixed))
    _check(n).solution((code.upper() + " ", fixed()))


@pytest.mark.parametrize("n", [1, 4])
def test_each_exercise_refuses_the_unfixed_module_and_a_wrong_code(n):
    code, fixed = FIXES[n]
    with pytest.raises(Mistake, match="still reports"):
        _check(n)((code, ch17.EXERCISES[n][0]))
    assert "報告する" in japanese_hint(_check(n), (code, ch17.EXERCISES[n][0]))
    wrong = "window-mismatch"
    with pytest.raises(Mistake, match="not what diagnose reports"):
        _check(n)((wrong, fixed))
    with pytest.raises(Mistake, match="one of diagnose's codes"):
        _check(n)(("leak", fixed))
    with pytest.raises(Mistake, match="give a tuple"):
        _check(n)(code)
    with pytest.raises(Mistake, match="must be an nn.Module"):
        _check(n)((code, lambda x, k, a: x))


def test_exercise_3_wants_the_root_finding_and_names_the_others_as_consequences():
    root, *consequences = ch17.exercise_codes(3)
    assert root == "batch-dependence" and set(consequences) == {"pad-leak", "future-leak"}
    ch17.check_3.solution((root, FixedSeqFirst))
    for code in consequences:
        with pytest.raises(Mistake, match="follows from an earlier finding"):
            ch17.check_3((code, FixedSeqFirst))
        assert "根本の原因" in japanese_hint(ch17.check_3, (code, FixedSeqFirst))


class TenFill(ch17.WeakFill):
    """Exercise 1 'fixed' with an additive -10 instead of -1: still a leak."""

    def forward(self, x, key_padding_mask, attn_mask=None):
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-1, -2) * (ch17.E // ch17.HEADS) ** -0.5 - 10.0 * key_padding_mask[:, None, None, :]
        return self.merge(scores.softmax(-1) @ v)


def test_the_still_reports_hint_names_no_bare_model_and_gives_what_was_measured():
    with pytest.raises(Mistake) as raised:
        ch17.check_4(("cache-mismatch", ch17.CacheNoMask))
    assert raised.value.en.startswith("diagnose still reports cache-mismatch on your fixed module (one cached step "
                                      "of 6 tokens; up to ")
    assert "model" not in japanese_hint(ch17.check_4, ("cache-mismatch", ch17.CacheNoMask))


def test_a_pad_leak_hint_gives_no_size_that_cannot_tell_a_weaker_fill_from_the_original():
    """The pad-leak size measures the values planted at the pads: -1 and -10 fills measure the same (1.2e+03)."""
    hints = []
    for module in (ch17.WeakFill, TenFill):
        with pytest.raises(Mistake) as raised:
            ch17.check_1(("pad-leak", module))
        hints.append(raised.value)
    assert hints[0].en == hints[1].en and hints[0].ja == hints[1].ja
    en, ja = hints[0].en, hints[0].ja
    assert en.startswith("diagnose still reports pad-leak on your fixed module: the real outputs still depend on "
                         "the pads")
    assert "up to" not in en and "1.2e+03" not in en and "model" not in en
    assert ja.startswith("直したモジュールでも、diagnose がまだ pad-leak を報告する。") and "最大" not in ja
    assert "小さくならない" in ja and "model" not in ja


def test_the_answer_may_be_a_list_and_a_swapped_order_is_named():
    ch17.check_2.solution(["future-leak", FixedPeekAhead])
    with pytest.raises(Mistake, match="put the code first"):
        ch17.check_2((FixedPeekAhead, "future-leak"))
    assert "先に" in japanese_hint(ch17.check_2, (FixedPeekAhead, "future-leak"))


# --- a learner's module that raises gets a one-line hint, in both languages, not a traceback ---

class RaisesInForward(ch17.WeakFill):
    def forward(self, x, key_padding_mask, attn_mask=None):
        raise ValueError("my mistake")


class MaskOneTooWide(ch17.PeekAhead):
    def blocked(self, kpm):
        L = kpm.shape[1]
        return torch.ones(L, L + 1, dtype=torch.bool).triu(1) | kpm[:, None, None, :]


class NeedsAnArgument(ch17.WeakFill):
    def __init__(self, fill):
        super().__init__()


class StepMaskWithoutOffset(ch17.CacheNoMask):
    def step_mask(self, T, offset):
        return causal_mask(T)


@pytest.mark.parametrize(("n", "code", "module", "says"), [
    (1, "pad-leak", RaisesInForward, "module raised ValueError when diagnose ran its determinism check (my mistake)"),
    (2, "future-leak", MaskOneTooWide, "raised RuntimeError when diagnose ran its determinism check (The size of"),
    (1, "pad-leak", NeedsAnArgument, "could not be built: NeedsAnArgument() raised TypeError"),
    (4, "cache-mismatch", StepMaskWithoutOffset, "raised RuntimeError when diagnose ran its cache check (The size"),
], ids=["forward raises", "mask of the wrong shape", "constructor needs an argument", "step mask without offset"])
def test_a_module_that_raises_gets_a_hint_not_a_traceback(n, code, module, says):
    with pytest.raises(Mistake) as raised:
        _check(n)((code, module))
    assert says in raised.value.en and "\n" not in raised.value.en and len(raised.value.en) < 300
    hint = japanese_hint(_check(n), (code, module))
    assert "発生した" in hint and "\n" not in hint


def test_check_4_refuses_a_fix_without_the_cache_path():
    for module in (ch17.CausalLayer, FixedPeekAhead):
        with pytest.raises(Mistake, match="must keep the cache path, forward_with_cache"):
            ch17.check_4(("cache-mismatch", module))
        assert "forward_with_cache" in japanese_hint(ch17.check_4, ("cache-mismatch", module))


# --- the explorer's text ---

def test_the_explorer_captions_and_labels():
    with speaking("ja"):
        masks = ch17.gallery_view("window", "buggy")
        eos = ch17.gallery_view("pad = eos", "fixed")
    assert [(p.xlabel, p.ylabel) for p in masks.panels] == [("キー", "クエリ")] * 2
    assert masks.summary == ("ウィンドウ、バグ版（huggingface/transformers #39408）："
                             "diagnose の判定は不合格（window-mismatch）")
    assert "損失なし" in eos.caption and "遮断" not in eos.caption and "×" not in eos.caption
    framed = eos.panels[0].framed
    assert framed.sum() == len(ch17.SEQUENCES)                        # each sequence's own EOS, not the EOS pads
    assert all(framed[i, len(s) - 1] for i, s in enumerate(ch17.SEQUENCES))
    assert "red frame: each sequence's own EOS" in ch17.gallery_view("pad = eos", "buggy").caption
    fp16 = ch17.gallery_view("fp16 fill", "buggy").caption
    assert "the masks agree" in fp16 and "future-leak too" in fp16
    assert "the masks agree" in ch17.gallery_view("bidirectional flag", "buggy").caption
    assert "the masks agree" not in ch17.gallery_view("packing", "buggy").caption
    assert "the masks agree" not in ch17.gallery_view("dead rows", "fixed").caption
