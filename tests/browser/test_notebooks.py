"""Every chapter in JupyterLab in Chromium: Run All, no error output, move an explorer control, screenshot.

EXPECTED says, per chapter, which control of which explorer to move and what its summary must
contain before and after (read from the chapter's explorer in helpers/widgets.py). A chapter not in
the table gets the generic check on every explorer it shows: the first control moves one step, and
the summary text and the figure both change. Screenshots: test-artifacts/browser/<notebook>.png.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from browserlib import VIEWPORT, chapter_notebooks
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = pytest.mark.browser

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_TIMEOUT_MS = 120_000    # Run All of one chapter (a few seconds expected)
UPDATE_TIMEOUT_MS = 15_000  # one explorer update (~0.2 s expected)


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
    explorer: int = 0


# chapter number -> the moves to make, in order (fill in as chapters land; see helpers/widgets.py).
EXPECTED: dict[str, list[Move]] = {}


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
PROMPTS = "[...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent)"


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


def summary_and_figure(explorer) -> tuple[str, str | None]:
    summary = explorer.locator(".explorer-summary").inner_text()
    images = explorer.locator(".explorer-figure img")
    return summary, images.first.get_attribute("src") if images.count() else None


def control_of(explorer, move: Move | None):
    """The control to move: the one labelled move.label, or the explorer's first control."""
    controls = explorer.locator(":scope > .widget-hbox").first.locator(":scope > *")
    if move is None:
        return controls.first
    label = explorer.page.locator(".widget-label", has_text=re.compile(rf"^\s*{re.escape(move.label)}\s*:?\s*$"))
    return controls.filter(has=label)


def move_control(control, move: Move | None) -> str:
    """Move the control (generic: one slider step, the next dropdown option, a click); say what was done."""
    classes = control.get_attribute("class") or ""
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


def check_move(page, name: str, explorer, move: Move | None) -> None:
    """Move one control; the summary and the figure must both change, as EXPECTED says."""
    explorer.locator(".explorer-figure img").first.wait_for(timeout=UPDATE_TIMEOUT_MS)
    before, before_src = summary_and_figure(explorer)
    if move is not None and move.before is not None:
        assert move.before in before, f"{name}: the summary is {before!r} before the move, expected {move.before!r}"
    control = control_of(explorer, move)
    if move is not None:
        assert control.count() == 1, f"{name}: explorer {move.explorer} has no single control labelled {move.label!r}"
    done = move_control(control, move)
    try:
        page.wait_for_function("""([box, text, src]) => {
            const img = box.querySelector('.explorer-figure img');
            return box.querySelector('.explorer-summary').innerText !== text && img && img.src !== src;
        }""", arg=[explorer.element_handle(), before, before_src], timeout=UPDATE_TIMEOUT_MS)
    except PlaywrightTimeout:
        pass  # the asserts below say what did not change
    after, after_src = summary_and_figure(explorer)
    assert after != before, f"{name}: {done} did not change the summary {before!r}"
    assert after_src is not None, f"{name}: after {done} the explorer shows no figure; summary: {after!r}"
    assert after_src != before_src, f"{name}: {done} did not change the figure; summary: {after!r}"
    if move is not None and move.after is not None:
        assert move.after in after, f"{name}: after {done} the summary is {after!r}, expected {move.after!r}"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_chapter_runs_and_explorer_responds(path: Path, lab, browser, artifacts):
    name = path.name
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(f"uncaught: {error}"))
    page.on("console", lambda msg: page_errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    try:
        open_notebook(page, lab, name)
        run_all(page)
        errors = error_outputs(page)
        assert not errors, f"{name}: error output after Run All:\n" + "\n---\n".join(errors)

        explorers = page.locator(".explorer")
        shown = stored_widget_count(path)
        assert explorers.count() == shown, f"{name}: {explorers.count()} explorers rendered, the notebook shows {shown}"
        moves = EXPECTED.get(name[:2]) or [Move(label="", explorer=i) for i in range(shown)]
        for move in moves:
            explorer = explorers.nth(move.explorer)
            explorer.scroll_into_view_if_needed()
            check_move(page, name, explorer, move if move.label else None)
        errors = error_outputs(page)
        assert not errors, f"{name}: error output after moving a control:\n" + "\n---\n".join(errors)
        assert not page_errors, f"{name}: errors in the page:\n" + "\n".join(page_errors)

        if shown:  # the first explorer with its code cell; else the last figure
            target = explorers.first.locator("xpath=ancestor::div[contains(@class, 'jp-CodeCell')]")
            target.evaluate("cell => cell.scrollIntoView({block: 'start'})")
        elif page.locator(".jp-OutputArea-output img").count():
            page.locator(".jp-OutputArea-output img").last.evaluate("img => img.scrollIntoView({block: 'center'})")
        page.screenshot(path=artifacts / f"{path.stem}.png")
    finally:
        context.close()
        lab.shutdown_kernels()
