"""tools/lab_font.py: JupyterLab's Japanese web font covers every character of the Japanese edition, stays under
1 MB, carries its licence and a name that is not the original's, and reaches JupyterLab's custom.css."""

from __future__ import annotations

import base64
import re

import pytest

from helpers import cjk_font
from tools import dev, lab_font


def test_the_subset_covers_every_character_of_the_japanese_edition():
    assert lab_font.FONT.is_file(), f"no {lab_font.FONT.name}: run {lab_font.REBUILD}"
    assert lab_font.missing() == ""


def test_a_new_character_fails_with_its_name_and_the_command():
    texts = lab_font.sources()
    texts["notebooks/ja/99_new.ipynb"] = "新しい章：鬱蒼"  # 鬱 and 蒼 appear nowhere in the series
    assert not {"鬱", "蒼"} & lab_font.covered()
    message = lab_font.missing(texts)
    assert "'鬱' (U+9B31, in notebooks/ja/99_new.ipynb)" in message and "'蒼'" in message
    assert lab_font.REBUILD in message and "2 character(s)" in message


def test_the_sources_are_the_japanese_chapters_pages_and_helpers_strings():
    texts = lab_font.sources()
    assert "notebooks/ja/01_the_pad_question.ipynb" in texts and "notebooks/ja/cheatsheet.md" in texts
    assert any("正解" in text for name, text in texts.items() if name.startswith("helpers/")), "the verdicts"
    assert not [n for n in texts if n.startswith("notebooks/") and "/ja/" not in n], "the English chapters are not"


def test_size_name_and_licence():
    from fontTools.ttLib import TTFont

    size = lab_font.FONT.stat().st_size
    assert size < lab_font.MAX_BYTES, f"{size:,} bytes"
    assert lab_font.FONT.read_bytes()[:4] == b"wOFF"
    names = {record.nameID: str(record) for record in TTFont(lab_font.FONT)["name"].names}
    assert names[1] == names[4] == names[6] == lab_font.FAMILY, "the licence (3.1 (4)) forbids the original name"
    assert "IPA Font License Agreement v1.0" in lab_font.LICENSE.read_text(encoding="utf-8-sig")
    assert "ipaex" not in lab_font.FONT.name.lower()


def test_jupyter_config_inlines_it_in_custom_css(tmp_path):
    assert dev.LAB_FONT == lab_font.FONT
    css = (dev.jupyter_config(tmp_path) / "custom" / "custom.css").read_text(encoding="utf-8")
    data = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)\)", css)[1])
    assert data == lab_font.FONT.read_bytes()
    ranges = re.search(r"unicode-range:([^;]+);", css)[1]
    assert "U+72AC" in ranges and "U+3042" in ranges.replace("U+3041-", "U+3042 ")  # 犬, あ
    assert f"'{cjk_font.FAMILY}'}}" in css, "the prose font list ends with the font"


def test_ranges_merge_consecutive_code_points():
    assert cjk_font._ranges("あいう犬") == "U+3042,U+3044,U+3046,U+72AC"
    assert cjk_font._ranges("ぁあぃ") == "U+3041-3043"


def test_the_command_refuses_arguments(capsys: pytest.CaptureFixture):
    assert lab_font.main(["--help"]) == 2
    assert lab_font.REBUILD in capsys.readouterr().out
