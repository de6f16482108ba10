"""Chapter 2's static explorer (helpers/static_explorer.py) opened in Chromium from disk with every network
request refused: it starts, its controls move, and its summary and tables are the live explorer's for each
setting, a refused one included. tests/test_static_explorer.py checks every chapter's export in Python."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from browserlib import VIEWPORT, offline_page

from helpers import static_explorer as se
from helpers.chapters.ch02_softmax_on_masked_rows import softmax_explorer


def live(setting: dict) -> tuple[str, int, int]:
    """The live explorer's summary as text, its number of panels and of hatched cells, for `setting`."""
    box = softmax_explorer()
    for name, value in setting.items():
        box.controls[name].value = value
    summary, tables = box.summary.value, box.tables.value
    box.close()
    return (html.unescape(re.sub(r"<[^>]+>", "", summary)), tables.count('class="explorer-panel"'),
            len(re.findall(r'<td class="masked[ "]', tables)))


@pytest.mark.browser
def test_static_explorer_02_moves_offline(browser, artifacts, tmp_path: Path):
    path = se.export_chapter("02", tmp_path).path
    with offline_page(browser, VIEWPORT) as offline:
        page, errors, refused = offline.page, offline.errors, offline.refused
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_selector(".static-explorer.ready", timeout=15_000)
        root = page.locator(".static-explorer").first
        summary = root.locator(".explorer-summary")

        def shown() -> tuple[str, int, int]:
            return (summary.inner_text(), root.locator(".explorer-tables .explorer-panel").count(),
                    root.locator(".explorer-tables td.masked").count())

        setting = {"n_pads": 2, "fill": "-1e9", "dtype": "float32", "mask_pad_rows": False}  # the live start
        assert shown() == live(setting)
        assert root.locator(".static-note").inner_text().startswith("Static explorer: all 144 settings")
        assert [d.strip() for d in root.locator(".static-control .description").all_inner_texts()] == [
            "pads", "fill", "dtype", "mask pad rows too"]
        before = summary.inner_text()

        root.locator('[data-name="n_pads"] input[type=range]').fill("4")       # move the slider
        setting["n_pads"] = 4
        assert summary.inner_text() != before, "moving the slider changes the summary"
        assert shown() == live(setting)
        assert root.locator('[data-name="n_pads"] .readout').inner_text() == "4"

        root.locator('[data-name="fill"] select').select_option(label="-inf")  # a dropdown
        setting["fill"] = "-inf"
        assert shown() == live(setting)

        root.locator('[data-name="mask_pad_rows"] input[type=checkbox]').check()  # the checkbox
        setting["mask_pad_rows"] = True
        assert shown() == live(setting)

        root.locator('[data-name="fill"] select').select_option(label="-1e9")   # -1e9 in float16: refused
        root.locator('[data-name="dtype"] select').select_option(label="float16")
        setting.update(fill="-1e9", dtype="float16")
        text, panels, _ = shown()
        assert text.startswith("Not possible: fill -1e9 does not fit in float16") and panels == 0
        assert shown() == live(setting)
        page.screenshot(path=str(artifacts / "static_explorer_02.png"), full_page=True)
        assert not errors, f"script errors: {errors}"
        assert not refused, f"the static explorer asked the network for {refused}"
