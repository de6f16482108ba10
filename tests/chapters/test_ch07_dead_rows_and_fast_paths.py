"""Chapter 7's explorer (helpers.chapters.ch07_dead_rows_and_fast_paths): what each code path returns for rows
with no visible key and for pad rows."""

import itertools

import pytest
import torch

from helpers.chapters.ch07_dead_rows_and_fast_paths import (
    FAST_MODES,
    FAST_PATHS,
    FAST_TOKENS,
    fast_batch,
    fast_output,
    fast_paths_explorer,
    fast_paths_view,
    fast_setup,
    merge_heads,
    split_heads,
)
from helpers.explorer import view_html

MANUAL_INF, MANUAL_MIN, SDPA, MHA_WEIGHTS, MHA, ENCODER = FAST_PATHS
TRAINING, EVAL_GRAD, NO_GRAD, FROZEN = FAST_MODES


@pytest.mark.parametrize(
    ("path", "mode", "expected"),
    [
        (MANUAL_INF, NO_GRAD, "NaN"),
        (MANUAL_MIN, TRAINING, "finite: the plain average of all 5 values"),
        (SDPA, EVAL_GRAD, "out_proj.bias (0 before out_proj)"),
        (MHA_WEIGHTS, TRAINING, "NaN"),
        (MHA, TRAINING, "out_proj.bias (0 before out_proj)"),
        (MHA, EVAL_GRAD, "out_proj.bias (0 before out_proj)"),
        (MHA, NO_GRAD, "NaN"),                 # the fast path
        (MHA, FROZEN, "NaN"),                  # frozen parameters, grad on: the fast path too
        (ENCODER, EVAL_GRAD, "ordinary values"),
        (ENCODER, NO_GRAD, "NaN"),
        (ENCODER, FROZEN, "NaN"),
    ],
)
def test_dead_rows_per_path_and_mode(path, mode, expected):
    summary = fast_paths_view(path, "left", mode, causal=True).summary
    assert f"rows with no visible key [0, 1] -> {expected}" in summary


@pytest.mark.parametrize(
    ("padding", "mode", "causal", "zeros"),
    [
        ("right", NO_GRAD, False, True),
        ("right", FROZEN, False, True),       # nothing for autograd to record: same fast path
        ("right", EVAL_GRAD, False, False),
        ("right", TRAINING, False, False),
        ("right", NO_GRAD, True, False),      # a causal mask as well: no nested tensor
        ("left", NO_GRAD, False, False),      # left padding: no nested tensor
    ],
)
def test_encoder_zeros_only_on_its_fast_path(padding, mode, causal, zeros):
    out = fast_output(ENCODER, padding, mode, causal)
    _, kpm = fast_batch(padding)
    assert (out[0][kpm[0]] == 0).all().item() is zeros
    assert ("-> exact zeros" in fast_paths_view(ENCODER, padding, mode, causal).summary) is zeros


def test_paths_agree_on_rows_with_a_visible_key():
    for padding, causal in itertools.product(FAST_TOKENS, [True, False]):
        _, kpm = fast_batch(padding)
        reference = fast_output(MHA, padding, TRAINING, causal)
        live = torch.ones(2, 5, dtype=torch.bool)
        if causal and padding == "left":
            live[0, :2] = False
        for path, mode in itertools.product(FAST_PATHS[:-1], FAST_MODES):
            out = fast_output(path, padding, mode, causal)
            assert (out[live] - reference[live]).abs().max() < 1e-5, (path, mode, padding, causal)


def test_finite_fill_dead_row_is_the_average_of_all_values():
    x, _ = fast_batch("left")
    mha = fast_setup().mha
    with torch.no_grad():
        v = split_heads(mha, x)[2]
        average = merge_heads(mha, v.mean(-2, keepdim=True).expand_as(v))
    out = fast_output(MANUAL_MIN, "left", NO_GRAD, True)
    assert (out[0, :2] - average[0, :2]).abs().max() < 1e-5


def test_modules_are_left_in_eval_with_trainable_parameters():
    fast_output(MHA, "left", TRAINING, True)
    fast_output(ENCODER, "right", FROZEN, False)
    setup = fast_setup()
    for module in (setup.mha, setup.encoder):
        assert not module.training and all(p.requires_grad for p in module.parameters())


def test_view_marks_dead_rows_and_pads():
    view = fast_paths_view()
    (panel,) = view.panels
    assert panel.red_rows == (0, 1) and panel.alert
    assert view.summary == ("MHA, need_weights=False, eval + no_grad, left padding + causal: "
                            "rows with no visible key [0, 1] -> NaN")
    html = view_html(view)
    assert html.count('class="masked framed"') == 8   # 2 dead pad rows x 4 features
    right = fast_paths_view(padding="right")
    assert right.panels[0].red_rows == () and "no row without a visible key; pad rows [3, 4]" in right.summary


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": "torch.matmul"}, "path must be one of"),
        ({"padding": "middle"}, "padding must be one of"),
        ({"mode": "inference"}, "mode must be one of"),
    ],
)
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fast_paths_view(**kwargs)


def test_explorer_updates():
    box = fast_paths_explorer()
    path, padding, mode, causal = box.controls.values()
    summary = box.summary
    assert summary.value.endswith("[0, 1] -&gt; NaN")
    mode.value = EVAL_GRAD
    assert summary.value.endswith("[0, 1] -&gt; out_proj.bias (0 before out_proj)")
    path.value, padding.value, causal.value, mode.value = ENCODER, "right", False, FROZEN
    assert summary.value.endswith("pad rows [3, 4] -&gt; exact zeros")
