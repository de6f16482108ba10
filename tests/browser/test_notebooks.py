"""Every chapter in JupyterLab in Chromium: its stored outputs render, its explorers run live and respond.

nbval already runs every chapter top to bottom in a fresh kernel and compares each output, so this test checks
what only a browser adds, and does not run the chapter a second time. In one JupyterLab page (loaded once for
the whole suite), for each chapter:
- open it: every stored output displays (as many images as the notebook stores; each explorer's stored output
  is the line that says to run it), with no error in the page;
- run, as a learner would with Shift+Enter, the set-up cells (up to the first that imports helpers) and, for
  each explorer, the cell that draws its static figure and the explorer cell itself, on one kernel that the
  chapters share (conftest.py: chapters_kernel), so that no chapter pays for a kernel start and torch again;
- move the explorer's controls and check the live tables: EXPECTED says, per chapter, which control of which
  explorer to move, what its summary must contain before and after, and how many hatched (masked) cells its
  tables must then show (read from the chapter's explorer in helpers/chapters/). A chapter not in EXPECTED
  gets the generic check on every explorer it shows: the first control moves one step, and the summary text
  and the tables both change.
The explorers each chapter shows are those its module lists in EXPLORERS (helpers.chapters.explorers).
Screenshots: test-artifacts/browser/<notebook>.png. Each update's latency in the browser (control
moved -> new tables in the page) goes to test-artifacts/browser/update_ms.json: recorded, not asserted.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from browserlib import chapter_notebooks
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from helpers import chapters
from helpers.explorer import PLACEHOLDER

pytestmark = pytest.mark.browser

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_TIMEOUT_MS = 60_000     # the cells the explorers need (a few seconds expected)
UPDATE_TIMEOUT_MS = 15_000  # one explorer update (a few ms expected)


@dataclass(frozen=True)
class Move:
    """Move one control of explorer number `explorer` (0-based, in notebook order)."""

    label: str                  # the control's description, as shown in its label
    kind: str = "slider"        # "slider": ArrowRight/Left on the handle; "dropdown": select `option`;
                                # "toggle": click the button labelled `option`; "checkbox": click it
    presses: int = 1            # slider: how many ArrowRight presses (negative: ArrowLeft)
    option: str | None = None   # dropdown / toggle: the option label to choose
    before: str | None = None   # the summary contains this before the move
    after: str | None = None    # ... and this after it
    refused: bool = False       # an impossible combination: a "Not possible" message and no table
    masked: int | None = None   # how many hatched cells the tables show after the move
    explorer: int = 0


REFUSED = "Not possible: "  # how explorer() starts the message of a ValueError from draw()

# Chapter number -> the moves to make, in order, each from the state the previous one left.
# Read off each chapter's explorer in helpers/chapters/ (the summary strings of its view function).
EXPECTED: dict[str, list[Move]] = {
    "01": [  # pad_cells_explorer: pads 2 -> 3 -> 5 (refused) -> 0
        Move("pads", presses=1, before="2 pad(s): 10 cells set to -1e9",
             after="3 pad(s): 15 cells set to -1e9 (the pad columns), 6 '?' cells", masked=15),
        Move("pads", presses=2, after=REFUSED + "every token is <pad>", refused=True),
        Move("pads", presses=-5, after="0 pad(s): 0 cells set to -1e9 (the pad columns), 0 '?' cells", masked=0),
    ],
    "02": [  # softmax_explorer
        Move("mask pad rows too", kind="checkbox", before="float32, fill -1e9, 2 pad(s), pad rows kept",
             after="pad rows masked: real rows give the pad keys weight 0; pad rows: every weight 0.2000 (1/5",
             masked=32),  # 2 pad columns + 2 pad rows (16 cells), hatched in the scores and in the weights
        Move("fill", kind="dropdown", option="-inf", after="fill -inf, 2 pad(s), pad rows masked: real rows give "
             "the pad keys weight 0; pad rows are NaN on purpose"),
        Move("fill", kind="dropdown", option="-1e9", after="every weight 0.2000"),
        Move("dtype", kind="dropdown", option="float16", refused=True,
             after=REFUSED + "fill -1e9 does not fit in float16 (its most negative number, finfo.min, is -65504): "
             "choose fill finfo.min"),
        Move("fill", kind="dropdown", option="finfo.min", after="float16, fill finfo.min, 2 pad(s), pad rows masked: "
             "real rows give the pad keys weight 0; pad rows: every weight 0.2000"),
    ],
    "03": [  # pad_rows_explorer
        Move("junk", kind="dropdown", option="NaN", before="policy leave, junk random x1000, 2 pad(s): "
             "real rows max |change| = 0;", after="policy leave, junk NaN, 2 pad(s): real rows max |change| = nan"),
        Move("pad rows", kind="dropdown", option="mask them too: 1/5",
             after="policy uniform, junk NaN, 2 pad(s): real rows max |change| = nan"),
        Move("junk", kind="dropdown", option="zeros",
             after="policy uniform, junk zeros, 2 pad(s): real rows max |change| = 0;"),
        Move("pad rows", kind="dropdown", option="zero them after softmax",
             after="policy zero, junk zeros, 2 pad(s): real rows max |change| = 0;", masked=10),
        Move("pads", presses=3, refused=True, after=REFUSED + "every token is <pad>"),
        Move("pads", presses=-2, after="policy zero, junk zeros, 3 pad(s): real rows max |change| = 0;", masked=15),
    ],
    "04": [  # kpm_explorer
        Move("key_padding_mask", kind="checkbox", before="item 0, mask on: weight on the pad column(s), mean over "
             "real query rows = 0.000 (exactly 0 in every row)", after="item 0, mask off: weight on the pad "
             "column(s), mean over real query rows = 1.000", masked=0),
        Move("PAD", kind="dropdown", option="7 (a real value!)", refused=True,
             after=REFUSED + "PAD=7 is also a real value"),
        Move("PAD", kind="dropdown", option="1000", after="item 0, mask off"),
        Move("batch item", kind="toggle", option="1", after="item 1, mask off", masked=0),
        Move("seed", presses=1, after="seed 1 (w_q·w_k = "),
    ],
    "05": [  # causal_explorer
        Move("edit token", presses=1, before="right-padded, causal + key padding: editing token 1 (猫) changes "
             "the outputs at positions [1, 2, 3, 4]", after="editing token 2 (鳥) changes the outputs at positions "
             "[2, 3, 4]; exactly unchanged: [0, 1]", masked=13),  # 10 future cells + 2 pad columns, 3 in both
        Move("sequence", kind="dropdown", option="left-padded", refused=True,
             after=REFUSED + "query 0 (<pad>) would see no key at all"),
        Move("causal attn_mask", kind="checkbox", after="left-padded, key padding: editing token 2 (犬) changes "
             "the outputs at positions [0, 1, 2, 3, 4]", masked=10),
    ],
    "06": [  # mask_convention_explorer
        Move("convert with helpers.masks", kind="checkbox", before="MHA bool (True = blocked) -> "
             "F.scaled_dot_product_attention, right padding: LEAKS the future",
             after="(converted), right padding: correct: weight only on allowed keys", masked=13),
        Move("mask", kind="dropdown", option="HF 0/1 cast to float", refused=True,
             after=REFUSED + "a float 0/1 mask is ambiguous"),
        Move("convert with helpers.masks", kind="checkbox",
             after="HF 0/1 cast to float -> F.scaled_dot_product_attention, right padding: LEAKS the future"),
        Move("padding", kind="toggle", option="left", after="left padding: LEAKS the future", masked=19),
    ],
    "07": [  # fast_paths_explorer: 8 hatched cells = 2 pad rows x 4 output features
        Move("masks", kind="toggle", option="float", before="MHA, need_weights=False, eval + no_grad, bool masks, "
             "left padding + causal: rows with no visible key [0, 1] -> NaN (fast path: native MHA)",
             after="float masks, left padding + causal: rows with no visible key [0, 1] -> zero, "
             "shows as out_proj.bias (no fast path)", masked=8),
        Move("masks", kind="toggle", option="bool",
             after="bool masks, left padding + causal: rows with no visible key [0, 1] -> NaN (fast path: native MHA)"),
        Move("mode", kind="dropdown", option="eval, grad on",
             after="rows with no visible key [0, 1] -> zero, shows as out_proj.bias (no fast path)", masked=8),
        Move("path", kind="dropdown", option="nn.TransformerEncoder", after="nn.TransformerEncoder, eval, grad on, "
             "bool masks, left padding + causal: rows with no visible key [0, 1] -> ordinary values (no fast path)"),
        Move("padding", kind="toggle", option="right",
             after="right padding + causal: no row without a visible key; pad rows [3, 4] -> ordinary values"),
        Move("causal mask", kind="checkbox", after="nn.TransformerEncoder, eval, grad on, bool masks, right padding: "
             "no row without a visible key; pad rows [3, 4] -> ordinary values (no fast path)", masked=8),
        Move("mode", kind="dropdown", option="eval, frozen parameters, grad on",
             after="pad rows [3, 4] -> exact zeros (fast path: nested tensor + fused encoder layer)", masked=8),
    ],
    "08": [  # classifier_explorer: pad to 20 -> 24, mask off, pad to 4 (refused), 5
        Move("pad to", presses=4, before="pad to 20, mask as trained: masked model (with mask): positive",
             after="pad to 24, mask as trained: masked model (with mask): positive, P(positive) 1.00 (same as its "
             "unpadded 1.00); unmasked model (without mask): positive, P(positive) 1.00 (CHANGED from its unpadded "
             "0.30)", masked=38),  # the masked model's 2 rows x 19 pad keys
        Move("mask", kind="toggle", option="off for both",
             after="pad to 24, mask off for both: masked model (without mask)", masked=0),
        Move("pad to", presses=-20, refused=True, after=REFUSED + "this sentence has 5 tokens with <cls>"),
        Move("pad to", presses=1, after="pad to 5, mask off for both: masked model (without mask)", masked=0),
    ],
    "09": [  # generation_explorer: mask prompt only -> step 3 -> naive positions -> right padding -> no cache
        Move("mask", kind="dropdown", option="prompt only", before="padding left, positions from the mask, mask every "
             "step, KV cache on: 3/3 items match the reference; step 2: weight on pads, summed over the 3 items: 0",
             after="mask prompt only, KV cache on: 3/3 items match the reference; step 2", masked=4),
        Move("step", presses=1, after="mask prompt only, KV cache on: 3/3 items match the reference; step 3"),
        Move("position ids", kind="dropdown", option="naive (left edge)",
             after="positions naive (left edge), mask prompt only, KV cache on: 1/3 items match"),
        Move("padding", kind="toggle", option="right", after="padding right, positions naive (left edge)", masked=4),
        Move("KV cache", kind="checkbox", after="KV cache off: 1/3 items match"),
    ],
}
EXPECTED["10"] = [  # packing_explorer: the 8 sequences padded, bucketed, packed
    Move("strategy", kind="toggle", option="bucket", before="log-normal lengths [8, 2, 1, 4, 1, 1, 4, 5], batch size "
         "4, pad: 52 token slots for 26 tokens", after="batch size 4, bucket: 40 token slots for 26 tokens, wasted "
         "35% of position-wise work and 53% of attention scores", masked=16),
    Move("strategy", kind="toggle", option="pack", after="pack: 32 token slots for 26 tokens", masked=51),
    Move("lengths", kind="dropdown", option="bimodal", after="bimodal lengths [8, 2, 1, 8, 1, 2, 7, 1], batch size 4, "
         "pack: 32 token slots for 30 tokens, wasted 6% of position-wise work", masked=55),
    Move("strategy", kind="toggle", option="pad", after="batch size 4, pad: 60 token slots for 30 tokens", masked=86),
    Move("batch size", kind="toggle", option="1", after="batch size 1, pad: 30 token slots for 30 tokens, wasted 0%",
         masked=28),
]

EXPECTED["11"] = [  # encoder_decoder_explorer: misroutings, a source without pads, then left padding
    Move("masks passed", kind="dropdown", option="memory_key_padding_mask forgotten", before="source 3 real + 2 pads, "
         "target 4 real + 0 pads, right padding, correct: correct; no real target output moves",
         after="memory_key_padding_mask forgotten: cross-attention reads the source pads; cross-attention: weight on "
         "blocked cells", masked=24),   # 10 encoder pad cells + 6 future cells + 8 cross pad cells
    Move("source length", presses=2, after="source 5 real + 0 pads", masked=6),
    Move("masks passed", kind="dropdown", option="tgt_is_causal=True, no tgt_mask",
         after="a hint, not a mask: the decoder self-attention is not causal; decoder self-attention: weight on "
         "blocked cells", masked=6),
    Move("masks passed", kind="dropdown", option="padding mask as src_mask", refused=True,
         after=REFUSED + "nn.Transformer raises RuntimeError"),
    Move("masks passed", kind="dropdown", option="causal mask on cross-attention",
         after="causal mask on cross-attention: target query i may read only source words 0..i", masked=6),
    Move("source length", presses=-2, after="source 3 real + 2 pads, target 4 real + 0 pads, right padding, causal "
         "mask on cross-attention: target query i may read only source words 0..i; cross-attention: allowed keys "
         "hidden in rows 0, 1", masked=24),
    Move("padding", kind="toggle", option="left", after="left padding, causal mask on cross-attention: target query i "
         "may read only source words 0..i; cross-attention: allowed keys hidden in rows 2, 3, no visible key in rows "
         "0, 1", masked=24),
]

EXPECTED["12"] = [  # training_explorer: a dead row's NaN gradients, then the fixes and the leaks
    Move("fill", kind="dropdown", option="finfo.min", before="lengths [3, 5], left padding + causal, fill -inf, "
         "per-token loss, token mean: 2 dead row(s); NaN gradients in in_proj_weight, in_proj_bias, out_proj.weight",
         after="fill finfo.min, per-token loss, token mean: 2 dead row(s); every gradient finite; real-token "
         "gradients unchanged vs unpadded (within 1e-5)", masked=4),
    Move("padding", kind="toggle", option="right", after="lengths [3, 5], right padding + causal, fill finfo.min, "
         "per-token loss, token mean: 0 dead row(s)", masked=4),
    Move("loss", kind="dropdown", option="pads in the loss", after="pads in the loss: 0 dead row(s); every gradient "
         "finite; real-token gradients moved by up to", masked=2),
]

EXPECTED["13"] = [  # mask_explorer: window 3 -> 4, layers 2 -> 4, sinks 0 -> 1, chunk 4 -> 3
    Move("window", presses=1, before="window 3 (keys, itself included), prefix 0, sinks 0: query 9 sees 3 key(s) in 1 "
         "layer and reaches 5 position(s) in 2 layer(s)", after="window 4 (keys, itself included), prefix 0, sinks 0: "
         "query 9 sees 4 key(s) in 1 layer and reaches 7 position(s) in 2 layer(s) = 2·(4−1)+1; window spellings "
         "agree (transformers sliding_window=4, flash-attn window_size=(3, 0)", masked=129),
    Move("layers", presses=2, after="reaches 10 position(s) in 4 layer(s); window spellings agree", masked=123),
    Move("sinks", presses=1, after="sinks 1: query 9 sees 5 key(s) in 1 layer", masked=115),
    Move("chunk", presses=-1, after="whole mask as one mask_mod: True; last chunk: 1 x 10, 4 cell(s)", masked=110),
]

EXPECTED["14"] = [  # decider_explorer: is_causal missing -> False, config -> causal, mask -> bool -> float cast to bool
    Move("is_causal", kind="dropdown", option="False", before="decided by the integration default",
         after="decided by module.is_causal=False (the mask is None); applied bidirectional; matches", masked=0),
    Move("config", kind="dropdown", option="causal", after="applied bidirectional; does NOT match", masked=0),
    Move("mask", kind="dropdown", option="bool", after="decided by the mask", masked=30),
    Move("mask", kind="dropdown", option="float cast to bool", after="applied inverted: the past hidden", masked=42),
]

EXPECTED["15"] = [  # cache_explorer: mask -> tril(0), tree -> binary, sink -> 2, mask -> offset mask, cached 3 -> 2
    Move("built with", kind="dropdown", option="tril(0) mask", before="offset mask: outputs equal the serial run: True",
         after="tril(0) mask: outputs differ from the serial run by up to 2.10", masked=36),
    Move("tree", kind="dropdown", option="binary", after="(binary tree), no sink, tril(0) mask", masked=36),
    Move("sink logit", kind="dropdown", option="2", after="sink logit 2, tril(0) mask", masked=36),
    Move("built with", kind="dropdown", option="offset mask", after="sink logit 2, offset mask: outputs equal the "
         "serial run: True", masked=16),
    Move("cached tokens", presses=-1, after="2 cached, 4 new (binary tree)", masked=16),
]

EXPECTED["16"] = [  # hybrid_explorer: batch 1 -> 3, conv -> unmasked, padding -> right
    Move("batch", kind="toggle", option="3", before="left padding, batch of 1: pads move real outputs t0, t1, t2, t3, "
         "first through the convolution", after="left padding, batch of 3: no real output moves", masked=72),
    Move("conv", kind="dropdown", option="unmasked", after="batch of 3: pads move real outputs t0, t1, t2, t3, first "
         "through the convolution", masked=48),
    Move("padding", kind="toggle", option="right", after="right padding, batch of 3: no real output moves", masked=48),
]

EXPECTED["17"] = [  # gallery_explorer: variant buggy -> fixed, entry packing -> window, variant -> almost
    Move("variant", kind="toggle", option="fixed", before="packing, buggy (alex-hh/profam #495): diagnose FAILED: "
         "document-leak", after="packing, fixed (alex-hh/profam #495): diagnose passed", masked=88),
    Move("entry", kind="dropdown", option="window", after="window, fixed (huggingface/transformers #39408): diagnose "
         "passed", masked=86),
    Move("variant", kind="toggle", option="almost", after="diagnose FAILED: future-leak", masked=73),
]


def shows_widget(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and any(WIDGET_VIEW in o.get("data", {}) for o in cell.get("outputs", []))


def stored_images(nb: nbformat.NotebookNode) -> int:
    """How many images the committed notebook's outputs hold (its figures)."""
    return sum(1 for cell in nb.cells if cell.cell_type == "code"
               for output in cell.get("outputs", []) if "image/png" in output.get("data", {}))


IMPORTS_HELPERS = re.compile(r"^\s*(?:from|import) helpers\b", re.MULTILINE)


def cells_to_run(nb: nbformat.NotebookNode) -> list[int]:
    """What a learner runs to try the explorers: the set-up cells (every code cell up to the first that imports
    helpers) and, for each explorer cell, the last code cell before it that draws a static view (its figure,
    `draw_view`) and the explorer cell itself. Indices count every cell, markdown included, as JupyterLab does."""
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    first = next((i for i in code if IMPORTS_HELPERS.search(nb.cells[i].source)), code[0] if code else -1)
    chosen = {i for i in code if i <= first}
    for i in code:
        if shows_widget(nb.cells[i]):
            figures = [j for j in code if j < i and "draw_view(" in nb.cells[j].source]
            chosen.update(figures[-1:] + [i])
    return sorted(chosen)


KERNEL_IDLE = """() => {
    const context = window.jupyterapp?.shell.currentWidget?.sessionContext;
    const kernel = context?.session?.kernel;
    return Boolean(context?.isReady && kernel?.connectionStatus === 'connected' && kernel.status === 'idle');
}"""
OPEN = """async path => {
    const app = window.jupyterapp;
    const widget = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    app.shell.activateById(widget.id);
    await widget.context.ready;
}"""
RENDERED = """images => {
    const panel = window.jupyterapp.shell.currentWidget?.node;
    const shown = panel?.querySelectorAll('.jp-OutputArea-output img').length ?? 0;
    return Boolean(panel?.querySelector('.jp-Cell')) && shown >= images;
}"""
# Run each cell as Shift+Enter would (without moving on); NotebookActions.run resolves when the cell is done,
# with false if it raised. Returns the index of the first cell that failed, or null.
RUN_CELLS = """async indices => {
    const app = window.jupyterapp, notebook = app.shell.currentWidget.content;
    for (const i of indices) {
        notebook.activeCellIndex = i;
        notebook.deselectAll();
        if (await app.commands.execute('notebook:run-cell') === false) return i;
    }
    return null;
}"""
# Close without the "save changes?" dialog: running cells changed the notebook in the page, never on disk.
CLOSE = """() => {
    const widget = window.jupyterapp.shell.currentWidget;
    if (widget?.context) { widget.context.model.dirty = false; widget.dispose(); }
}"""


def wait_kernel_idle(page, timeout_ms: int) -> None:
    """The current notebook's kernel is started, connected and idle (JupyterLab's own state, exposed for tests)."""
    page.wait_for_function(KERNEL_IDLE, timeout=timeout_ms)


def open_notebook(page, path: str, images: int) -> None:
    """Open notebooks/`path` in the page's JupyterLab; wait until its `images` stored figures show and its kernel
    idles. Opening is tried a second time if Playwright loses the first call's promise ("Resulting promise was
    garbage collected", seen once on a loaded 2-core machine: the page's context dropped it, and nothing in the
    notebook was checked yet); any other error, and a second loss, fail the test."""
    try:
        page.evaluate(OPEN, f"notebooks/{path}")
    except PlaywrightError as error:
        if "garbage collected" not in str(error):
            raise
        page.wait_for_timeout(1000)
        page.evaluate(OPEN, f"notebooks/{path}")
    try:
        page.wait_for_function(RENDERED, arg=images, timeout=60_000)
    except PlaywrightTimeout:
        shown = page.locator(".jp-NotebookPanel .jp-OutputArea-output img").count()
        raise AssertionError(f"{path}: {shown} of its {images} stored figures display") from None
    wait_kernel_idle(page, 60_000)


def run_cells(page, path: str, indices: list[int]) -> None:
    """Run the cells at `indices` in order in the open notebook; fail naming the first one that raised."""
    failed = page.evaluate(RUN_CELLS, indices)
    assert failed is None, f"{path}: cell {failed} raised when run in the browser"
    wait_kernel_idle(page, RUN_TIMEOUT_MS)


def close_notebook(page) -> None:
    page.evaluate(CLOSE)


def error_outputs(page) -> list[str]:
    """Text of every error or stderr output, and of every widget that failed to display."""
    found = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    found += [text for text in page.locator(".jp-OutputArea-output").all_inner_texts()
              if "Error displaying widget" in text or "Traceback (most recent call last)" in text]
    return found


def summary_and_tables(explorer) -> tuple[str, str | None]:
    """The summary text, and the HTML of the explorer's tables (None if it shows no table)."""
    summary, html = explorer.evaluate("""box => [box.querySelector('.explorer-summary').innerText,
                                                 box.querySelector('.explorer-tables')?.innerHTML ?? '']""")
    return summary, html if "<table" in html else None


def control_of(explorer, move: Move | None):
    """The control to move: the one labelled move.label, or the explorer's first control."""
    controls = explorer.locator(":scope > .widget-hbox").first.locator(":scope > *")
    if move is None:
        return controls.first
    label = explorer.page.locator("label", has_text=re.compile(rf"^\s*{re.escape(move.label)}\s*:?\s*$"))
    return controls.filter(has=label)


def move_control(control, move: Move | None) -> str:
    """Move the control (generic: one slider step, the next dropdown option, a click); say what was done."""
    classes = control.get_attribute("class") or ""
    css = {"slider": "widget-slider", "dropdown": "widget-dropdown", "toggle": "widget-toggle-buttons",
           "checkbox": "widget-checkbox"}
    if move is not None:
        assert css[move.kind] in classes, f"control {move.label!r} is not a {move.kind}: its classes are {classes!r}"
    if "widget-slider" in classes:
        handle = control.locator(".noUi-handle").first
        presses = move.presses if move else 1
        if move is None and handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax"):
            presses = -1
        handle.focus()
        for _ in range(abs(presses)):
            handle.press("ArrowRight" if presses > 0 else "ArrowLeft")
        return f"slider {presses:+d} step(s)"
    if "widget-dropdown" in classes:
        select = control.locator("select")
        if move is not None and move.option is not None:
            choice = move.option
        else:
            options = select.locator("option").all_inner_texts()
            choice = options[(select.evaluate("s => s.selectedIndex") + 1) % len(options)]
        select.select_option(label=choice)
        return f"dropdown -> {choice}"
    if "widget-toggle-buttons" in classes:
        if move is not None and move.option is not None:
            button = control.locator("button", has_text=re.compile(rf"^\s*{re.escape(move.option)}\s*$"))
        else:
            button = control.locator("button:not(.mod-active)").first
        choice = button.inner_text()
        button.click()
        return f"toggle -> {choice}"
    if "widget-checkbox" in classes:
        control.locator("input[type=checkbox]").click()
        return "checkbox clicked"
    raise AssertionError(f"the browser test cannot move a control with classes {classes!r}: add it to move_control")


# Set on the page before a move: the ms from the first input event in the explorer (key, click, select)
# to the next change of its tables: the learner's wait, without Playwright's own overhead.
WATCH = """box => {
    window.__explorerUpdated = null;
    let start = null;
    const events = ['keydown', 'click', 'input', 'change'];
    const first = () => { if (start === null) start = performance.now(); };
    events.forEach(e => box.addEventListener(e, first, {capture: true}));
    const observer = new MutationObserver(() => {
        if (start === null) return;
        window.__explorerUpdated = performance.now() - start;
        observer.disconnect();
        events.forEach(e => box.removeEventListener(e, first, {capture: true}));
    });
    observer.observe(box.querySelector('.explorer-tables'), {childList: true, subtree: true, characterData: true});
}"""


def check_move(page, name: str, explorer, move: Move | None, refused_prefix: str = REFUSED) -> float | None:
    """Move one control; the summary and the tables must change as EXPECTED says (generic: both change).
    refused_prefix: how a refused combination's message starts (the Japanese edition's differs).

    Returns the ms from the move's first input event to the next change of the tables (None if refused).
    """
    before, before_html = summary_and_tables(explorer)
    if move is not None and move.before is not None:
        assert move.before in before, f"{name}: the summary is {before!r} before the move, expected {move.before!r}"
    control = control_of(explorer, move)
    if move is not None:
        assert control.count() == 1, f"{name}: explorer {move.explorer} has no single control labelled {move.label!r}"
    explorer.evaluate(WATCH)
    done = move_control(control, move)
    refused = move is not None and move.refused
    try:
        page.wait_for_function("""([box, text, html, refused, want]) => {
            const table = box.querySelector('.explorer-tables table');
            const now = box.querySelector('.explorer-summary').innerText;
            const shown = box.querySelector('.explorer-tables').innerHTML;
            const tables = refused ? !table : Boolean(table) && shown !== html;
            return now !== text && (!want || now.includes(want)) && tables;
        }""", arg=[explorer.element_handle(), before, before_html, refused, move and move.after],
            timeout=UPDATE_TIMEOUT_MS)
    except PlaywrightTimeout:
        pass  # the asserts below say what did not change
    after, after_html = summary_and_tables(explorer)
    assert after != before, f"{name}: {done} did not change the summary {before!r}"
    if move is not None and move.after is not None:
        assert move.after in after, f"{name}: after {done} the summary is {after!r}, expected {move.after!r}"
    if refused:
        assert after.startswith(refused_prefix), f"{name}: after {done} expected {refused_prefix!r}, got {after!r}"
        assert after_html is None, f"{name}: after {done} a refused combination still shows a table"
        return None
    assert not after.startswith(refused_prefix), f"{name}: {done} was refused: {after!r}"
    assert after_html is not None, f"{name}: after {done} the explorer shows no table; summary: {after!r}"
    assert after_html != before_html, f"{name}: {done} did not change the tables; summary: {after!r}"
    if move is not None and move.masked is not None:
        hatched = explorer.locator(".explorer-tables td.masked").count()
        assert hatched == move.masked, f"{name}: after {done} {hatched} hatched cells, expected {move.masked}"
    return page.evaluate("window.__explorerUpdated")


@contextlib.contextmanager
def notebook_open(page, lab, path: str, nb: nbformat.NotebookNode, kernel: str | None = None) -> Iterator[list[str]]:
    """Open the notebook in the shared page, on kernel `kernel` if given, else on a new one; yield the list that
    collects the page's errors meanwhile. Then close it, and stop its kernel unless it was given."""
    page_errors: list[str] = []

    def uncaught(error):
        page_errors.append(f"uncaught: {error}")

    def console(msg):
        if msg.type == "error":
            page_errors.append(f"console: {msg.text}")

    page.on("pageerror", uncaught)
    page.on("console", console)
    try:
        if kernel is not None:
            lab.attach(f"notebooks/{path}", kernel)
        open_notebook(page, path, stored_images(nb))
        yield page_errors
    finally:
        page.remove_listener("pageerror", uncaught)
        page.remove_listener("console", console)
        close_notebook(page)
        if kernel is None:
            lab.shutdown_kernels()


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_chapter_renders_and_explorer_responds(path: Path, lab, lab_page, chapters_kernel, artifacts, update_times):
    name, page = path.name, lab_page
    nb = nbformat.read(path, as_version=4)
    shown = len(chapters.explorers(name[:2]))
    stored = sum(map(shows_widget, nb.cells))
    assert stored == shown, f"{name}: the notebook shows {stored} explorers, EXPLORERS lists {shown}"
    with notebook_open(page, lab, name, nb, chapters_kernel) as page_errors:
        explorers = page.locator(".jp-NotebookPanel .explorer")
        waiting = page.locator(".jp-NotebookPanel .jp-OutputArea-output", has_text=PLACEHOLDER).count()
        assert waiting == shown, f"{name}: {waiting} stored explorer outputs say to run the cell, expected {shown}"
        errors = error_outputs(page)
        assert not errors, f"{name}: error output stored in the notebook:\n" + "\n---\n".join(errors)
        run_cells(page, name, cells_to_run(nb))
        errors = error_outputs(page)
        assert not errors, f"{name}: error output after running its explorers:\n" + "\n---\n".join(errors)
        assert explorers.count() == shown, f"{name}: {explorers.count()} explorers run, EXPLORERS lists {shown}"
        moves = EXPECTED.get(name[:2]) or [Move(label="", explorer=i) for i in range(shown)]
        for i in range(shown):
            explorers.nth(i).locator(".explorer-tables table").first.wait_for(timeout=UPDATE_TIMEOUT_MS)
        for move in moves:
            explorer = explorers.nth(move.explorer)
            explorer.scroll_into_view_if_needed()
            ms = check_move(page, name, explorer, move if move.label else None)
            if ms is not None:
                update_times.setdefault(path.stem, []).append(round(ms, 1))
        errors = error_outputs(page)
        assert not errors, f"{name}: error output after moving a control:\n" + "\n---\n".join(errors)
        assert not page_errors, f"{name}: errors in the page:\n" + "\n".join(page_errors)

        if shown:  # the first explorer with its code cell; else the last figure
            target = explorers.first.locator("xpath=ancestor::div[contains(@class, 'jp-CodeCell')]")
            target.evaluate("cell => cell.scrollIntoView({block: 'start'})")
        elif page.locator(".jp-OutputArea-output img").count():  # chapter 0: its figure
            page.locator(".jp-OutputArea-output img").last.evaluate("img => img.scrollIntoView({block: 'center'})")
        page.screenshot(path=artifacts / f"{path.stem}.png")


@pytest.fixture(scope="module")
def update_times(artifacts):
    """Chapter -> the browser latency (ms) of each explorer update; written to update_ms.json at the end."""
    times: dict[str, list[float]] = {}
    yield times
    (artifacts / "update_ms.json").write_text(json.dumps(times, indent=1) + "\n")
