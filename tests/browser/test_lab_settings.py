"""The series' JupyterLab configuration (tools/dev.py's jupyter_config, which `make lab`, Binder's postBuild and
this suite's server use), seen in a real JupyterLab: a double-clicked cheat sheet opens rendered, and no news
question shows."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

# What a double-click in the file browser runs: docmanager:open without a factory, so the file type's default
# viewer.
OPEN_DEFAULT = """async path => {
    const app = window.jupyterapp;
    const widget = await app.commands.execute('docmanager:open', {path});
    app.shell.activateById(widget.id);
    await widget.context.ready;
}"""
# Which view the current document shows, once it shows one (null until then).
SHOWN = """() => {
    const node = window.jupyterapp.shell.currentWidget?.node;
    const preview = Boolean(node?.querySelector('.jp-MarkdownViewer .jp-RenderedMarkdown h1'));
    const editor = Boolean(node?.querySelector('.jp-FileEditor .cm-content'));
    return preview || editor ? {preview, editor} : null;
}"""
CLOSE = "() => window.jupyterapp.shell.currentWidget?.dispose()"


@pytest.mark.parametrize("path", ["notebooks/cheatsheet.md", "notebooks/ja/cheatsheet.md"])
def test_markdown_opens_rendered(lab, lab_page, path: str):
    lab_page.evaluate(OPEN_DEFAULT, path)
    try:
        shown = lab_page.wait_for_function(SHOWN, timeout=30_000).json_value()
    finally:
        lab_page.evaluate(CLOSE)
    assert shown == {"preview": True, "editor": False}, f"{path} opened as {shown}, not as Markdown Preview"


def test_no_news_question(lab, lab_page):
    """JupyterLab asks "Would you like to receive official Jupyter news?" on first open unless fetchNews is set;
    the page has been open for every earlier browser test by now, or at least since the app was restored."""
    page = lab_page
    page.wait_for_timeout(1_000)
    toasts = page.locator(".Toastify__toast").all_inner_texts()
    assert not [t for t in toasts if "news" in t.lower()], f"a news toast shows: {toasts}"
    settings = lab.api("GET", "/lab/api/settings/@jupyterlab/apputils-extension:notification")
    assert settings["schema"]["properties"]["fetchNews"]["default"] == "false"
