"""helpers.cjk_font: a small inlined web font with the series' CJK glyphs (the browser test checks it renders)."""

import base64
import json
import re

import pytest

from helpers import chapters, cjk_font
from helpers.chapters.ch01_the_pad_question import pad_cells_view
from helpers.explorer import view_html


def test_css_is_a_small_font_face_for_the_series_characters():
    rule = cjk_font.css()
    assert f"font-family:'{cjk_font.FAMILY}'" in rule
    ranges = re.search(r"unicode-range:([^;]+);", rule)[1].split(",")
    assert {f"U+{ord(c):X}" for c in cjk_font.SERIES_CHARS} == set(ranges)
    assert set("犬猫鳥牛馬魚好嫌") <= set(cjk_font.SERIES_CHARS)
    data = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)\)", rule)[1])
    assert data[:4] == b"wOFF" and len(data) < 8_000, f"{len(data)} bytes"


def test_the_shipped_font_is_the_subset_of_the_series_characters():
    assert cjk_font.SERIES_CHARS == "".join(sorted(set(cjk_font.SERIES_CHARS)))    # css() compares sorted strings
    assert cjk_font.SHIPPED.read_bytes() == cjk_font._subset_woff(cjk_font.SERIES_CHARS), (
        "cjk_font.woff is stale: run python -m helpers.cjk_font")


def test_the_explorers_need_no_font_cutting():
    from helpers.chapters import ch08_a_trained_classifier as ch08

    words = " ".join([*ch08.VOCAB, *ch08.SENTENCES])
    assert {c for c in words if cjk_font._is_cjk(c)} <= set(cjk_font.SERIES_CHARS)
    misses = cjk_font._subset_woff.cache_info().misses
    for chapter in ("01", "03", "06"):
        for make in chapters.explorers(chapter):
            make()
    assert cjk_font._subset_woff.cache_info().misses == misses, "an explorer cut a font: extend SERIES_CHARS"


def test_css_adds_other_cjk_characters_of_the_text():
    assert "U+65E5" in cjk_font.css("日 and ascii")
    assert "U+65E5" not in cjk_font.css("ascii only")
    with pytest.raises(TypeError, match="text must be a str"):
        cjk_font.css(["犬"])


def test_view_html_carries_the_font():
    html = view_html(pad_cells_view(2))
    assert "@font-face" in html and f"'{cjk_font.FAMILY}'" in html.split("<style>")[0], "the tables use the font"


def test_install_jupyter_css(tmp_path):
    (tmp_path / "jupyter_lab_config.json").write_text('{"LabApp": {"collaborative": false}}')
    css_path = cjk_font.install_jupyter_css(tmp_path)
    assert css_path == tmp_path / "custom" / "custom.css"
    assert "--jp-code-font-family" in css_path.read_text(encoding="utf-8")
    config = json.loads((tmp_path / "jupyter_lab_config.json").read_text())
    assert config == {"LabApp": {"collaborative": False, "custom_css": True}}


def test_the_shipped_subsets_are_renamed_and_carry_the_licence():
    """The IPA Font License (article 3.1): a subset is passed on only under another name, with the licence."""
    import io

    from fontTools.ttLib import TTFont

    from tools import lab_font

    for font, family in ((cjk_font.SHIPPED, cjk_font.FAMILY), (lab_font.FONT, lab_font.FAMILY)):
        names = {record.toUnicode() for record in TTFont(io.BytesIO(font.read_bytes()))["name"].names
                 if record.nameID in (1, 4, 6)}
        assert names == {family}, f"{font.name} is named {names}"
        assert font.with_name("IPA_Font_License_Agreement_v1.0.txt").is_file(), f"no licence beside {font.name}"
    assert lab_font.subset("犬") == cjk_font.subset_woff("犬", lab_font.FAMILY, features=("vert", "vrt2"))
