"""Chapter 14: the deciders, the bug modules, the explorer and the exercise checks
(helpers/chapters/ch14_who_decides_causality.py)."""

import numpy as np
import pytest
import torch
from transformers.modeling_utils import AttentionInterface

from helpers import diagnose
from helpers.chapters import ch14_who_decides_causality as ch14
from helpers.checks import check_mask_pattern, infer_mask
from helpers.exercises import Mistake
from tests.chapters import japanese_hint

torch.set_num_threads(1)


# --- SDPA and transformers, measured ---

def test_causal_refuses_bad_sizes():
    assert torch.equal(ch14.causal(2, 3), torch.tensor([[False, False, True], [False, False, False]]))
    with pytest.raises(ValueError, match="L"):
        ch14.causal(0)
    with pytest.raises(TypeError, match="S"):
        ch14.causal(2, 2.5)
    with pytest.raises(ValueError, match="at least L"):
        ch14.causal(3, 2)


def test_kernel_calls_records_and_restores():
    real = torch.nn.functional.scaled_dot_product_attention
    q = torch.randn(1, 1, 3, 4)
    registry = AttentionInterface._global_mapping
    real_sdpa = registry["sdpa"]
    with ch14.kernel_calls() as calls:
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        k = torch.randn(1, 1, 5, 4)
        registry["sdpa"](ch14._Probe(), q, k, k, None)                         # no attribute: the default, True
        flagged = ch14._Probe()
        flagged.is_causal = False
        registry["sdpa"](flagged, q, q, q, None)
        registry["sdpa"](flagged, q, q, q, None, is_causal=True)
    assert calls == [("None", True, 3, 3, "-", 0), ("None", True, 3, 3, "default", 5),
                     ("None", False, 3, 3, "attribute", 3), ("None", True, 3, 3, "keyword", 3)]
    assert torch.nn.functional.scaled_dot_product_attention is real and registry["sdpa"] is real_sdpa


# --- the bug modules behave as the chapter says ---

@pytest.mark.parametrize("name", list(ch14.BUGS))
def test_each_bug_is_caught_and_its_fix_passes(name):
    intent = ch14.BUGS[name][2]
    buggy, fixed = ch14.bug(name), ch14.bug(name, fixed=True)
    # check_mask_pattern runs unpadded batches only: #46077's lost flag shows only when padded
    assert check_mask_pattern(buggy, intent, length=6, embed_dim=ch14.E).passed == (name == "bidirectional flag lost")
    assert check_mask_pattern(fixed, intent, length=6, embed_dim=ch14.E).passed
    assert not diagnose(buggy, expect=intent).passed
    assert diagnose(fixed, expect=intent).passed
    expected = ch14.causal(6) if intent == "causal" else torch.zeros(6, 6, dtype=torch.bool)
    assert torch.equal(infer_mask(fixed, 6, embed_dim=ch14.E), expected)


def test_the_skip_only_bugs_hide_behind_padding():
    for name in ("own mask after the library skipped it",):
        moved = ch14.later_token_moves(ch14.bug(name), 6, padded=True)
        assert (moved[:-1] == 0).all()                                  # padded: the library built the mask
        assert (ch14.later_token_moves(ch14.bug(name), 6)[:-1] > 0).any()   # unpadded: the future leaks


def test_the_lost_bidirectional_flag_shows_only_when_padded():
    buggy = ch14.bug("bidirectional flag lost")
    assert buggy.is_causal is False
    assert (ch14.later_token_moves(buggy, 6)[:-1] > ch14.MOVED).all()             # unpadded: None, False decides
    assert (ch14.later_token_moves(buggy, 6, padded=True)[:-1] == 0).all()       # padded: a causal mask is built
    assert not ch14.same_when_padded("bidirectional flag lost")
    assert diagnose(buggy, expect="bidirectional").codes == ["pad-leak"]


def test_a_position_bias_keeps_the_triangle():
    assert torch.equal(ch14.position_bias_blocked(), ch14.causal(6))
    assert torch.equal(ch14.position_bias_blocked(3), ch14.causal(3))


def test_the_bug_modules_run_in_float64():
    x = torch.randn(1, 4, ch14.E, dtype=torch.float64)
    for name in ch14.BUGS:
        for fixed in (False, True):
            assert ch14.bug(name, fixed).double()(x, torch.zeros(1, 4, dtype=torch.bool)).dtype == torch.float64


def test_bug_and_later_token_moves_refuse_bad_input():
    with pytest.raises(ValueError, match="name must be one of"):
        ch14.bug("no such bug")
    with pytest.raises(TypeError, match="fixed"):
        ch14.bug("float mask cast to bool", fixed="yes")
    module = ch14.bug("float mask cast to bool")
    with pytest.raises(TypeError, match="module"):
        ch14.later_token_moves("module")
    with pytest.raises(ValueError, match="position"):
        ch14.later_token_moves(module, 4, position=4)
    with pytest.raises(ValueError, match="length"):
        ch14.later_token_moves(module, 1)


# --- the explorer ---

def test_the_views_rule():
    for mask in ch14.MASKS:
        for flag in ch14.FLAGS:
            for config in ch14.CONFIGS:
                blocked, decider = ch14.applied(mask, flag, config)
                if mask in ("bool", "float"):
                    assert torch.equal(blocked, ch14.intended(config)) and "the mask" in decider
                elif mask == "none":
                    assert torch.equal(blocked, ch14.causal(6) if flag != "False" else ch14.intended("bidirectional"))
                else:
                    assert not torch.equal(blocked, ch14.intended(config))
    for name, value in (("mask", "full"), ("is_causal", "maybe"), ("config", "both"), ("mask", None)):
        with pytest.raises(ValueError, match=name):
            ch14.decider_view(**{name: value})
    assert ch14.decider_view("bool", "True", "causal") is ch14.decider_view("bool", "True", "causal")   # cached


def test_the_explorer_shows_its_view_and_moves():
    box = ch14.decider_explorer()
    try:
        assert "decided by the integration default" in box.summary.value
        assert "does NOT match the intent of the config (bidirectional)" in box.summary.value
        box.controls["is_causal"].value = "False"
        assert "applied bidirectional; matches" in box.summary.value
        box.controls["config"].value = "causal"
        box.controls["mask"].value = "bool"
        assert "decided by the mask" in box.summary.value and "matches" in box.summary.value
        box.controls["mask"].value = "float cast to bool"
        assert "applied inverted: the past hidden" in box.summary.value
    finally:
        box.close()


# --- the exercises ---

RIGHT_1 = ("causal", "bidirectional", "bidirectional", "bidirectional")


def test_check_1_accepts_every_right_form():
    ch14.check_1.solution(RIGHT_1)
    ch14.check_1.solution(list(RIGHT_1))
    ch14.check_1.solution(tuple(w.upper() for w in RIGHT_1))
    ch14.check_1.solution((" causal ",) + RIGHT_1[1:])
    ch14.check_1.solution(w for w in RIGHT_1)                              # a generator
    assert RIGHT_1 == tuple(ch14._situation(*s) for s in ch14.SITUATIONS_1)


@pytest.mark.parametrize("answer, hint, hint_ja", [
    (("bidirectional",) + RIGHT_1[1:], "situation 1: a module without is_causal is not treated",
     "False としては扱われない"),
    (("causal", "bidirectional", "causal", "bidirectional"), "situation 3: a mask is given; which condition",
     "状況 3"),
    (("causal", "bidirectional", "bidirectional", "causal"), "situation 4: which condition", "状況 4"),
    (("causal", "causal", "bidirectional", "bidirectional"), "situation 2", "状況 2"),
    (("causal", "bidirectional"), "4 of them", "4 個"),
    (("causal", "bidirectional", "yes", "no"), "each word", "どの語も"),
    ("causal", "tuple of 4", "タプル"),
])
def test_check_1_rejects_with_the_right_hint(answer, hint, hint_ja):
    with pytest.raises(Mistake, match=hint):
        ch14.check_1(answer)
    assert hint_ja in japanese_hint(ch14.check_1, answer)


def _leaks(batches=(False, True), compare="before", left_pad=False, bound=1e-6, pads_value=False, invert=False,
           signed=False, mean=False):
    def leaks(module):
        x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(0))
        changed = x.clone()
        changed[:, -1] += 1.0
        for padded in batches:
            pads = torch.zeros(2, 6, dtype=torch.bool)
            pads[1, -1] = padded
            pads[1, 0] = left_pad
            pads |= pads_value                                   # True everywhere: the polarity mixed up
            with torch.no_grad():
                moved = module(changed, pads, None) - module(x, pads, None)
            moved = {"before": moved[:, :-1], "all": moved, "output 0": moved[:, :1]}[compare]
            size = moved if signed else moved.abs()
            if (size.mean() if mean else size.max()) > bound:
                return not invert
        return invert
    return leaks


def _first_token_test(module):
    """A leak test in the wrong direction, on a padded batch: it changes the FIRST token and compares item 0's
    real outputs, which a correct module moves too (they come after the change)."""
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(0))
    changed = x.clone()
    changed[:, 0] += 1.0
    pads = torch.zeros(2, 6, dtype=torch.bool)
    pads[1, -1] = True
    with torch.no_grad():
        moved = module(changed, pads, None) - module(x, pads, None)
    return bool(moved[0].abs().max() > 1e-6)


def test_check_2_accepts_the_solution_and_the_reference():
    ch14.check_2.solution(_leaks())
    ch14.check_2.solution(ch14.reference_leak_test)
    ch14.check_2.solution(lambda module: torch.tensor(ch14.reference_leak_test(module)))   # a 0-d bool tensor
    ch14.check_2.solution(lambda module: np.bool_(ch14.reference_leak_test(module)))        # a numpy bool
    ch14.check_2.solution(_leaks(bound=0.0))                                                  # bit for bit


def test_the_synthetic_modules_leak_as_named():
    for name, (module, leak, _hint) in ch14._leak_cases().items():
        assert ch14.reference_leak_test(module) == leak, name
    tiny = ch14._leak_cases()["synthetic: leaks by a tiny amount (1/1000)"][0]
    moved = ch14.later_token_moves(tiny, 6)[:-1]
    assert (moved > 1e-5).all() and (moved < 1e-2).all()
    cases = ch14._leak_cases()
    second_last = ch14.later_token_moves(cases["synthetic: leaks into output L - 2 only"][0], 6)
    assert (second_last[:4] == 0).all() and second_last[4] > 0.1
    feature = ch14.later_token_moves(cases["synthetic: leaks 1e-5 into one feature"][0], 6)[:-1]
    assert (feature > 1e-7).all() and (feature < 1e-4).all()
    builder = cases["is_causal=True with a bidirectional mask builder"][0]
    assert (ch14.later_token_moves(builder, 6)[:-1] == 0).all()                 # unpadded: causal
    assert (ch14.later_token_moves(builder, 6, padded=True)[:-1] > 0.01).all()  # padded: the mask leaks
    with pytest.raises(ValueError, match="kind"):
        ch14._Averaging(1.0, "no such kind")


def test_check_2_rejects_with_the_right_hint():
    cases = [
        (_leaks(compare="all"), "an output at or after the changed", "正しいのに"),
        (lambda module: False, "leaks, and your test says it does not", "漏れないと判定した"),
        (_leaks(batches=(True,)), "tried padded batches only", "パディングのあるバッチしか試していない"),
        (_leaks(batches=(False,)), "tried unpadded batches only", "パディングのないバッチしか試していない"),
        (_leaks(signed=True), "move down", "減る向きの変化"),
        (_leaks(mean=True, bound=1e-4), "dilutes", "変化が薄まる"),
        (_leaks(compare="output 0"), "not output 0", "出力 0 ではない"),
        (_leaks(left_pad=True), "and so may the outputs at pad positions", "パッド位置の出力も動いてよい"),
        (_first_token_test, "the outputs at or after it may move", "変えた位置とそれより後の出力は動いてよく"),
        (_leaks(bound=1.0), "a leak can be tiny", "ごく小さい"),
        (_leaks(bound=0.01), "a leak can be tiny", "ごく小さい"),
        (_leaks(pads_value=True), "True = pad", "True = パッド"),
        (_leaks(invert=True), "the opposite", "逆"),
        (lambda module: torch.tensor(0.5), "must return a bool", "を返すこと"),
        (lambda module: "no", "must return a bool", "を返すこと"),
        (lambda module: module(torch.randn(2, 6, 5), torch.zeros(2, 6, dtype=torch.bool), None), "raised",
         "が発生した"),
        (lambda module: module(torch.randn(2, 6, 8), torch.ones(2, 6, dtype=torch.long), None), "bool tensor",
         "bool テンソル"),
        ("leaks", "give a function", "関数 leaks"),
    ]
    for answer, hint, hint_ja in cases:
        with pytest.raises(Mistake, match=hint):
            ch14.check_2(answer)
        assert hint_ja in japanese_hint(ch14.check_2, answer)


def test_picture_view_says_what_was_applied():
    view = ch14.picture_view(ch14.causal(4))
    assert view.summary.endswith("applied causal") and len(view.panels) == 2
    with pytest.raises(ValueError, match="square"):
        ch14.picture_view(torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="measured"):
        ch14.picture_view(torch.zeros(3, 3))


# --- the step functions the notebook calls ---

N = "None"
EXPECTED_DECISIONS = {  # (mask, is_causal, queries, keys, taken from, keys given)
    ("Llama, nothing padded", "self"): (N, True, 5, 5, "attribute", 5),
    ("Llama, one item left-padded", "self"): ("bool (2, 1, 5, 5)", False, 5, 5, "attribute", 5),
    ("Llama, config.is_causal=False", "self"): (N, False, 5, 5, "keyword", 5),
    ("Llama, keyword is_causal=False", "self"): (N, False, 5, 5, "keyword", 5),
    ("BART", "encoder"): (N, False, 5, 5, "attribute", 5),
    ("BART", "decoder"): (N, True, 4, 4, "attribute", 4),
    ("BART", "cross"): (N, False, 4, 5, "attribute", 5),
    ("Mllama, 5 text tokens", "self"): (N, True, 5, 5, "attribute", 5),
    ("Mllama, 5 text tokens", "cross"): (N, True, 5, 5, "default", 5),
    ("Mllama, 3 text tokens", "self"): (N, True, 3, 3, "attribute", 3),
    ("Mllama, 3 text tokens", "cross"): (N, True, 3, 3, "default", 5),
}


@pytest.fixture(scope="module")
def models():
    return ch14.tiny_models()


def test_kernel_decisions_give_step_2s_table(models):
    rows, outputs = ch14.kernel_decisions(models)
    assert {key: tuple(call) for key, call in rows.items()} == EXPECTED_DECISIONS
    assert set(outputs) == {name for name, _ in EXPECTED_DECISIONS}
    table = ch14.decisions_table(rows).splitlines()
    assert len(table) == 1 + len(rows) and table[-1].endswith("3 x 3 (of 5 given)")
    more, _ = ch14.kernel_decisions(models, "more")
    assert {key: call[:2] for key, call in more.items()} == {
        ("BERT encoder, nothing padded", "self"): (N, False), ("Mistral window 3, 5 tokens", "self"):
        ("bool (2, 1, 5, 5)", False), ("Mistral window 3, 2 tokens", "self"): (N, True)}
    assert ch14.is_causal_attributes(models) == {"LlamaAttention": True, "MllamaTextCrossAttention": "missing",
                                                 "BART's cross-attention": False}
    with pytest.raises(ValueError, match="which"):
        ch14.kernel_decisions(models, "all")
    with pytest.raises(TypeError, match="tiny_models"):
        ch14.kernel_decisions({"llama": models["llama"]})


@pytest.mark.slow   # transformers models (~4 s): in make test, not in make unit
def test_bug_findings_and_same_when_padded():
    findings = ch14.bug_findings()
    assert set(findings) == {(name, label) for name in ch14.BUGS for label in ("buggy", "fixed")}
    for (name, label), f in findings.items():
        hidden = name == "bidirectional flag lost"           # unpadded, the module's False decides: right
        assert f.passed == (label == "fixed" or hidden) and f.moved == (label == "buggy" and not hidden)
        assert bool(f.codes) == (label == "buggy")
    assert findings["float mask cast to bool", "buggy"].applied == "inverted: the past hidden, the future seen"
    assert findings["module without is_causal", "buggy"].kernel == "None, is_causal=True"
    assert len(ch14.findings_table(findings).splitlines()) == 3 * len(ch14.BUGS)
    assert ch14.same_when_padded("own mask after the library skipped it")
    assert not ch14.same_when_padded("float mask cast to bool")
    with pytest.raises(ValueError, match="name must be one of"):
        ch14.same_when_padded("no such bug")
    with pytest.raises(TypeError, match="seed"):
        ch14.bug_findings(seed=1.5)


def test_regression_verdicts_catch_every_bug():
    verdicts = ch14.regression_verdicts()
    hides = {"own mask after the library skipped it", "module without is_causal"}
    for (name, label), (intent, unpadded, padded) in verdicts.items():
        assert intent == ch14.BUGS[name][2]
        want = (True, True) if label == "fixed" else (True, False) if name == "bidirectional flag lost" \
            else (False, name in hides)
        assert (unpadded, padded) == want
    assert ch14.verdicts_table(verdicts).splitlines()[-1].startswith("causal: earlier outputs bit for bit")
    with pytest.raises(ValueError, match="length"):
        ch14.regression_verdicts(1)


def test_measure_cross_attention_is_causal_and_leaves_the_model(models):
    mllama = models["mllama"]
    def gates():
        return [p.clone() for n, p in mllama.named_parameters() if n.endswith("_gate")]
    before = gates()
    assert torch.equal(ch14.measure_cross_attention(mllama), ch14.causal(6))
    assert torch.equal(ch14.measure_cross_attention(mllama, 4, 4), ch14.causal(4))
    assert all(torch.equal(b, a) for b, a in zip(before, gates(), strict=True))   # a copy's gates were opened
    with pytest.raises(TypeError, match="mllama"):
        ch14.measure_cross_attention("mllama")
    with pytest.raises(ValueError, match="image_tokens"):
        ch14.measure_cross_attention(mllama, 6, 5)
