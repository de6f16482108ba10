"""JupyterLab's Japanese web font: a subset of IPAexGothic covering every character of the Japanese edition.

The figures embed their glyphs, and the explorers' HTML carries helpers/cjk_font.py's small font; the rest of the
Japanese edition in JupyterLab (its prose, headings, hints, printed lines) uses the browser's fonts, and a machine
without a Japanese font (WSL, containers, minimal Linux) draws it as boxes. This module cuts the font that
matplotlib-fontja ships (IPAexGothic, IPA Font License v1.0) down to the characters of:
- every Japanese chapter and page, notebooks/ja/*.ipynb (cells and stored outputs) and notebooks/ja/*.md;
- every string literal in helpers/ (the hints, verdicts, explorers' words in Japanese);
that is, every non-ASCII character there that the font has. The result, FONT (a WOFF, zlib-compressed: WOFF2
would need brotli, which is not installed here), is committed with the licence beside it; `jupyter_config` in
tools/dev.py (make lab, tools/dev.py lab --current-env, Binder's postBuild) inlines it in JupyterLab's
custom.css (helpers.cjk_font.install_jupyter_css).

The licence (article 3.1) lets a subset be redistributed under the same licence, with the licence text, with a
way to get the original font back, and under a name that is not the original's: the subset is named FAMILY
inside and "series-ja-gothic" on disk. The original: the ipaexg.ttf that matplotlib-fontja installs, or IPA's own
download (https://moji.or.jp/ipafont/); delete FONT and the custom.css falls back to the browser's fonts.

Rebuild after a Japanese chapter gains a character (tests/test_lab_font.py names it):
    python -m tools.lab_font
"""

from __future__ import annotations

import ast
import json
import shutil
import sys
from pathlib import Path

from tools import series

ROOT = series.ROOT
FOLDER = ROOT / "tools" / "fonts"
FONT = FOLDER / "series-ja-gothic.woff"  # tools/dev.py names it too (LAB_FONT): it runs before .venv exists
LICENSE = FOLDER / "IPA_Font_License_Agreement_v1.0.txt"
FAMILY = "series-ja-gothic"
REBUILD = "python -m tools.lab_font"
MAX_BYTES = 1_000_000


def _strings(value) -> list[str]:
    """Every string inside a JSON value (a notebook: its cells' sources and its stored outputs)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def sources(root: Path = ROOT) -> dict[str, str]:
    """The texts the font must cover, by file (path from `root`)."""
    texts = {}
    ja = series.notebooks("ja", root)
    for path in sorted(ja.glob("*.ipynb")):
        texts[path.relative_to(root).as_posix()] = "\n".join(_strings(json.loads(path.read_text(encoding="utf-8"))))
    for path in sorted(ja.glob("*.md")):
        texts[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    for path in sorted((root / "helpers").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        texts[path.relative_to(root).as_posix()] = "\n".join(literals)
    return texts


def full_cmap() -> set[int]:
    """The code points the original font (matplotlib-fontja's IPAexGothic) has glyphs for."""
    from fontTools.ttLib import TTFont

    from helpers.cjk_font import font_path

    return set(TTFont(font_path(), lazy=True).getBestCmap())


def needed(texts: dict[str, str] | None = None) -> dict[str, str]:
    """character -> the first file that uses it: every non-ASCII character of `texts` (default: sources()) that
    the original font has."""
    has = full_cmap()
    first = {}
    for name, text in (sources() if texts is None else texts).items():
        for char in text:
            if ord(char) > 0x7F and ord(char) in has:
                first.setdefault(char, name)
    return dict(sorted(first.items()))


def covered(font: Path = FONT) -> set[str]:
    """The characters the committed subset has glyphs for."""
    from fontTools.ttLib import TTFont

    return {chr(code) for code in TTFont(font, lazy=True).getBestCmap()}


def missing(texts: dict[str, str] | None = None, font: Path = FONT) -> str:
    """'' if the subset covers every needed character, else a message naming each missing one, where it is used,
    and the command that rebuilds the subset."""
    have = covered(font) if font.exists() else set()
    lacking = {c: where for c, where in needed(texts).items() if c not in have}
    if not lacking:
        return ""
    listed = ", ".join(f"{c!r} (U+{ord(c):04X}, in {where})" for c, where in list(lacking.items())[:20])
    more = f" and {len(lacking) - 20} more" if len(lacking) > 20 else ""
    return (f"the Japanese web font {font.relative_to(ROOT).as_posix()} lacks {len(lacking)} character(s): "
            f"{listed}{more}. Rebuild it: {REBUILD}")


def subset(chars: str) -> bytes:
    """WOFF bytes of the original font cut to `chars`, renamed FAMILY (the licence forbids the original name)."""
    from helpers.cjk_font import subset_woff

    return subset_woff(chars, FAMILY, features=("vert", "vrt2"))  # vertical forms only; the series sets no other


def build() -> Path:
    """Write FONT (the subset of needed()) and the licence beside it; returns FONT."""
    from helpers.cjk_font import font_path

    data = subset("".join(needed()))
    if len(data) >= MAX_BYTES:
        raise SystemExit(f"the subset is {len(data):,} bytes, over the {MAX_BYTES:,} the series allows")
    FOLDER.mkdir(parents=True, exist_ok=True)
    FONT.write_bytes(data)
    shutil.copyfile(font_path().with_name(LICENSE.name), LICENSE)
    return FONT


def main(argv: list[str] | None = None) -> int:
    if argv:
        print(__doc__.strip())
        return 2
    path = build()
    print(f"wrote {path.relative_to(ROOT).as_posix()}: {path.stat().st_size:,} bytes, {len(covered(path)):,} "
          "characters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
