"""Every chapter in JupyterLab in Chromium: Run All, no error output, move an explorer control, screenshot.

The explorers each chapter shows are those helpers.explorers.EXPLORERS lists for it. EXPECTED says, per
chapter, which control of which explorer to move, what its summary must contain before and after, and how
many hatched (masked) cells its tables must then show (read from the chapter's explorer in
helpers/explorers/). A chapter not in EXPECTED gets the generic check on every explorer it shows: the
first control moves one step, and the summary text and the tables both change.
Screenshots: test-artifacts/browser/<notebook>.png. Each update's latency in the browser (control
moved -> new tables in the page) goes to test-artifacts/browser/update_ms.json: recorded, not asserted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from browserlib import chapter_notebooks, new_page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from helpers.explorers import EXPLORERS

pytestmark = pytest.mark.browser

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_TIMEOUT_MS = 120_000    # Run All of one chapter (a few seconds expected)
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
# Read off each chapter's explorer in helpers/explorers/ (the summary strings of its view function).
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
             after=REFUSED + "fill=-1e+09 does not fit in torch.float16"),
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
        Move("mode", kind="dropdown", option="eval, grad on", before="MHA, need_weights=False, eval + no_grad, "
             "left padding + causal: rows with no visible key [0, 1] -> NaN",
             after="rows with no visible key [0, 1] -> out_proj.bias (0 before out_proj)", masked=8),
        Move("path", kind="dropdown", option="nn.TransformerEncoder", after="nn.TransformerEncoder, eval, grad on, "
             "left padding + causal: rows with no visible key [0, 1] -> ordinary values"),
        Move("padding", kind="toggle", option="right",
             after="right padding + causal: no row without a visible key; pad rows [3, 4] -> ordinary values"),
        Move("causal mask", kind="checkbox", after="nn.TransformerEncoder, eval, grad on, right padding: "
             "no row without a visible key; pad rows [3, 4] -> ordinary values", masked=8),
        Move("mode", kind="dropdown", option="eval, frozen parameters, grad on",
             after="pad rows [3, 4] -> exact zeros", masked=8),
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


def stored_widget_count(path: Path) -> int:
    """How many widgets the committed notebook displays (its explorer cells)."""
    nb = nbformat.read(path, as_version=4)
    return sum(1 for cell in nb.cells if cell.cell_type == "code"
               for output in cell.get("outputs", []) if WIDGET_VIEW in output.get("data", {}))


KERNEL_IDLE = """() => {
    const context = window.jupyterapp?.shell.currentWidget?.sessionContext;
    const kernel = context?.session?.kernel;
    return Boolean(context?.isReady && kernel?.connectionStatus === 'connected' && kernel.status === 'idle');
}"""
# A cell whose source is hidden (the "solution" cells) shows no prompt: leave those out.
PROMPTS = ("[...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]"
           ".map(p => p.textContent).filter(p => p !== '')")


def wait_kernel_idle(page, timeout_ms: int) -> None:
    """The current notebook's kernel is started, connected and idle (JupyterLab's own state, exposed for tests)."""
    page.wait_for_function(KERNEL_IDLE, timeout=timeout_ms)


def open_notebook(page, lab, name: str) -> None:
    page.goto(f"{lab.url}/lab/tree/notebooks/{name}?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    wait_kernel_idle(page, 60_000)
    page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")  # room for the notebook
    page.locator(".jp-NotebookPanel .jp-Cell").first.click()  # this notebook is the current widget


def menu(page, top: str, item: str, done_js: str) -> None:
    """Click a menu item and wait until done_js holds; retry twice if the click was lost."""
    for attempt in range(3):
        page.get_by_role("menuitem", name=top, exact=True).click()
        page.get_by_role("menuitem", name=item, exact=True).click()
        try:
            page.wait_for_function(done_js, timeout=5_000)
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise AssertionError(f"{top} > {item} had no effect; prompts: {page.evaluate(PROMPTS)}") from None


def run_all(page) -> None:
    """Clear every output, Run All from the Run menu, wait until every code cell has its number and the kernel idles."""
    menu(page, "Edit", "Clear Outputs of All Cells", f"() => {PROMPTS}.every(p => !/\\d/.test(p))")
    menu(page, "Run", "Run All Cells", f"() => {PROMPTS}.some(p => /\\[(\\*|\\d+)\\]/.test(p))")
    try:
        page.wait_for_function(f"() => {PROMPTS}.every(p => /\\[\\d+\\]/.test(p))", timeout=RUN_TIMEOUT_MS)
    except PlaywrightTimeout:
        raise AssertionError(f"Run All did not finish in {RUN_TIMEOUT_MS / 1000:.0f} s; "
                             f"prompts: {page.evaluate(PROMPTS)}") from None
    wait_kernel_idle(page, RUN_TIMEOUT_MS)


def error_outputs(page) -> list[str]:
    """Text of every error or stderr output, and of every widget that failed to display."""
    found = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    found += [text for text in page.locator(".jp-OutputArea-output").all_inner_texts()
              if "Error displaying widget" in text or "Traceback (most recent call last)" in text]
    return found


def summary_and_tables(explorer) -> tuple[str, str | None]:
    """The summary text, and the HTML of the explorer's tables (None if it shows no table)."""
    summary = explorer.locator(".explorer-summary").inner_text()
    tables = explorer.locator(".explorer-tables")
    html = tables.inner_html() if tables.count() else ""
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


def check_move(page, name: str, explorer, move: Move | None) -> float | None:
    """Move one control; the summary and the tables must change as EXPECTED says (generic: both change).

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
        assert after.startswith(REFUSED), f"{name}: after {done} expected a 'Not possible' message, got {after!r}"
        assert after_html is None, f"{name}: after {done} a refused combination still shows a table"
        return None
    assert not after.startswith(REFUSED), f"{name}: {done} was refused: {after!r}"
    assert after_html is not None, f"{name}: after {done} the explorer shows no table; summary: {after!r}"
    assert after_html != before_html, f"{name}: {done} did not change the tables; summary: {after!r}"
    if move is not None and move.masked is not None:
        hatched = explorer.locator(".explorer-tables td.masked").count()
        assert hatched == move.masked, f"{name}: after {done} {hatched} hatched cells, expected {move.masked}"
    return page.evaluate("window.__explorerUpdated")


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_chapter_runs_and_explorer_responds(path: Path, lab, browser, artifacts, update_times):
    name = path.name
    context, page = new_page(browser)
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(f"uncaught: {error}"))
    page.on("console", lambda msg: page_errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    try:
        open_notebook(page, lab, name)
        run_all(page)
        errors = error_outputs(page)
        assert not errors, f"{name}: error output after Run All:\n" + "\n---\n".join(errors)

        explorers = page.locator(".explorer")
        shown = len(EXPLORERS.get(name[:2], ()))
        stored = stored_widget_count(path)
        assert stored == shown, f"{name}: the notebook shows {stored} explorers, EXPLORERS lists {shown}"
        assert explorers.count() == shown, f"{name}: {explorers.count()} explorers rendered, EXPLORERS lists {shown}"
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
    finally:
        context.close()
        lab.shutdown_kernels()


@pytest.fixture(scope="module")
def update_times(artifacts):
    """Chapter -> the browser latency (ms) of each explorer update; written to update_ms.json at the end."""
    times: dict[str, list[float]] = {}
    yield times
    (artifacts / "update_ms.json").write_text(json.dumps(times, indent=1) + "\n")
