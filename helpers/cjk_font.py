"""A tiny web font so 犬 猫 鳥 render in the browser on machines without Japanese fonts.

The matplotlib figures embed their own glyphs; HTML (the explorers' tables) and plain-text output
(print_table) use the browser's fonts, and many Linux machines have none with Japanese glyphs: they show
empty boxes. `css(text)` returns an @font-face rule whose font is a subset of IPAexGothic (the font that
matplotlib-fontja ships, IPA Font License) cut down to the series' few CJK characters and those in `text`,
inlined as a data URI (about 4 kB for the series' 19 characters, shipped pre-cut as cjk_font.woff; the
alternative, Debian's fonts-noto-cjk, is a 57 MB download). `FAMILY` is its name for a font-family list, and the
name inside the font: the licence (IPA_Font_License_Agreement_v1.0.txt, beside it) lets a subset be passed on
only under a name that is not the original's; `subset_woff` cuts and renames every subset the series ships.
`page_css()` adds the font to JupyterLab's code and prose fonts; `install_jupyter_css(config_dir, font)` writes it
as JupyterLab's custom.css (`make lab`, Binder), there with the bigger subset of tools/lab_font.py, which covers
every character of the Japanese edition (its prose and headings too, not only the tables).
"""

from __future__ import annotations

import base64
import functools
import io
import json
from pathlib import Path

FAMILY = "helpers-cjk"
# Every CJK character the helpers put in a table: the nouns, and chapter 8's words (が とても 好き 嫌い じゃない けど).
SERIES_CHARS = "いがきけじてとどなもゃ好嫌牛犬猫馬魚鳥"
# _subset_woff(SERIES_CHARS), written by `python -m helpers.cjk_font`:
SHIPPED = Path(__file__).with_name("cjk_font.woff")


def _is_cjk(char: str) -> bool:
    return 0x2E80 <= ord(char) <= 0x9FFF or 0xF900 <= ord(char) <= 0xFAFF or 0xFF00 <= ord(char) <= 0xFFEF


def font_path() -> Path:
    """The TrueType font matplotlib-fontja installs (IPAexGothic)."""
    import matplotlib_fontja

    return Path(matplotlib_fontja.__file__).parent / "fonts" / "ipaexg.ttf"


def subset_woff(chars: str, family: str, features: tuple[str, ...] = ()) -> bytes:
    """WOFF bytes of IPAexGothic cut down to `chars` and renamed `family`, with the OpenType `features` kept.

    The IPA Font License (article 3.1) lets a subset be passed on only under a name that is not the original's,
    so every subset the series ships is renamed: this module's small one and tools/lab_font.py's JupyterLab one
    (both call this). Same bytes on every run (no timestamp)."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    options = subset.Options()
    options.layout_features = list(features)
    options.hinting = False
    options.notdef_outline = True
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6]   # copyright, family, style, unique id, full name, version, PostScript
    font = TTFont(font_path(), lazy=True, recalcTimestamp=False)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=chars)
    subsetter.subset(font)
    names = {1: family, 3: f"{family} (subset of IPAexGothic 004.01, IPA Font License v1.0)", 4: family, 6: family}
    for record in font["name"].names:
        if record.nameID in names:
            record.string = names[record.nameID]
    font.flavor = "woff"  # zlib-compressed; WOFF2 would need the brotli package
    buffer = io.BytesIO()
    font.save(buffer)
    return buffer.getvalue()


@functools.cache
def _subset_woff(chars: str) -> bytes:
    """subset_woff(chars) named FAMILY, no features (about 0.8 s the first time per set, then cached).

    For the series' own characters, css() reads the same bytes from SHIPPED instead: no fontTools, no wait."""
    return subset_woff(chars, FAMILY)


@functools.cache
def _shipped() -> bytes:
    return SHIPPED.read_bytes()


def _ranges(chars: str) -> str:
    """A unicode-range value for `chars` (sorted, distinct): runs of consecutive code points as U+A-B."""
    codes, runs = sorted({ord(c) for c in chars}), []
    for code in codes:
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return ",".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in runs)


def _face(data: bytes, ranges: str, note: str) -> str:
    return (f"/* {note} */@font-face{{font-family:'{FAMILY}';src:url(data:font/woff;base64,"
            f"{base64.b64encode(data).decode('ascii')}) format('woff');unicode-range:{ranges};"
            "font-display:block}")


def css(text: str = "") -> str:
    """An @font-face rule for FAMILY covering the series' CJK characters and any in `text`."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    chars = "".join(sorted(set(SERIES_CHARS) | {c for c in text if _is_cjk(c)}))
    data = _shipped() if chars == SERIES_CHARS else _subset_woff(chars)
    ranges = ",".join(f"U+{ord(c):X}" for c in chars)
    return _face(data, ranges, f"glyphs from IPAexGothic (IPA Font License v1.0), cut to {chars}")


def font_face(font: Path) -> str:
    """An @font-face rule for FAMILY from a WOFF file (tools/lab_font.py's subset for JupyterLab), covering the
    characters it has glyphs for."""
    from fontTools.ttLib import TTFont

    font = Path(font)
    chars = "".join(chr(code) for code in sorted(TTFont(font, lazy=True).getBestCmap()))
    note = f"{font.name}: {len(chars)} characters of IPAexGothic (IPA Font License v1.0, beside the font)"
    return _face(font.read_bytes(), _ranges(chars), note)


def page_css(font: Path | None = None) -> str:
    """css() (or, with `font`, font_face(font): the JupyterLab subset of the whole Japanese edition) plus FAMILY
    appended to JupyterLab's code and prose font lists (for custom.css).

    A hidden line of the characters loads the font with the page: Chromium may leave the first text it
    shaped while the font was still loading as empty boxes, so the font must be ready before any output.
    """
    return ((css() if font is None else font_face(font)) + "\nbody{"
            f"--jp-code-font-family:var(--jp-code-font-family-default),'{FAMILY}';"
            "--jp-content-font-family:system-ui,-apple-system,blinkmacsystemfont,'Segoe UI',helvetica,arial,"
            f"sans-serif,'{FAMILY}'}}\n"
            f"body::after{{content:'{SERIES_CHARS}';font-family:'{FAMILY}';position:absolute;left:-999px;"
            "top:0;visibility:hidden}\n")


def install_jupyter_css(config_dir: Path, font: Path | None = None) -> Path:
    """Write page_css(font) to <config_dir>/custom/custom.css and turn on JupyterLab's custom CSS in
    <config_dir>/jupyter_lab_config.json (other settings in that file are kept)."""
    config_dir = Path(config_dir)
    custom = config_dir / "custom" / "custom.css"
    custom.parent.mkdir(parents=True, exist_ok=True)
    custom.write_text(page_css(font), encoding="utf-8")
    settings = config_dir / "jupyter_lab_config.json"  # LabApp reads this one (not jupyter_server_config.d)
    config = json.loads(settings.read_text(encoding="utf-8")) if settings.exists() else {}
    config.setdefault("LabApp", {})["custom_css"] = True
    settings.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return custom


if __name__ == "__main__":  # rewrite the shipped font after changing SERIES_CHARS
    SHIPPED.write_bytes(_subset_woff(SERIES_CHARS))
    print(f"wrote {SHIPPED.name}: {SHIPPED.stat().st_size} bytes, glyphs {SERIES_CHARS}")
