"""tools/pdf.py without a browser: its arguments, and its PDF reader on a small PDF written here in the form
Chromium writes (a classic cross-reference table, a Type0 font with a ToUnicode map, a Flate-compressed page).
tests/browser/test_site.py prints real books and reads them with it."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tools import pdf

CMAP = b"""/CIDInit /ProcSet findresource begin
begincmap
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
2 beginbfchar
<0001> <0041>
<0002> <72AC>
endbfchar
1 beginbfrange
<0003> <0004> <0062>
endbfrange
endcmap
"""


def small_pdf(path: Path, embedded: bool = True) -> Path:
    """A two-page A4 PDF: page 1 shows 'Ab犬' and 'c', page 2 nothing; one font, its file embedded or not."""
    content = zlib.compress(b"BT /F1 12 Tf 10 10 Td <000100030002> Tj ET BT /F1 12 Tf [<0004> 120] TJ ET")
    font_file = zlib.compress(b"glyphs")
    objects = [
        b"<</Type /Catalog /Pages 2 0 R>>",
        b"<</Type /Pages /Kids [3 0 R 9 0 R] /Count 2>>",
        b"<</Type /Page /Parent 2 0 R /Resources <</Font <</F1 5 0 R>>>> /MediaBox [0 0 595.91998 842.88]"
        b" /Contents 4 0 R>>",
        b"<</Filter /FlateDecode /Length %d>> stream\n%s\nendstream" % (len(content), content),
        b"<</Type /Font /Subtype /Type0 /BaseFont /AAAAAA+Test /Encoding /Identity-H /DescendantFonts [6 0 R]"
        b" /ToUnicode 8 0 R>>",
        b"<</Type /Font /Subtype /CIDFontType2 /BaseFont /AAAAAA+Test /FontDescriptor 7 0 R>>",
        b"<</Type /FontDescriptor /FontName /AAAAAA+Test" + (b" /FontFile2 10 0 R" if embedded else b"") + b">>",
        b"<</Length %d>> stream\n%s\nendstream" % (len(CMAP), CMAP),
        b"<</Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]>>",
        b"<</Filter /FlateDecode /Length %d /Length1 6>> stream\n%s\nendstream" % (len(font_file), font_file),
        b"<</Title (Attention masks\\, settled)>>",
    ]
    data, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<</Size %d /Root 1 0 R /Info 11 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(data))
    return path


def test_the_reader_on_a_small_pdf(tmp_path: Path):
    book = pdf.read(small_pdf(tmp_path / "a.pdf"))
    assert book.sizes == [(595.91998, 842.88), (612.0, 792.0)]
    assert [pdf.is_a4(size) for size in book.sizes] == [True, False], "the second page is US Letter"
    assert book.texts == ["Ab犬\nc\n", ""]
    assert [(font.name, font.embedded, font.chars) for font in book.fonts] == [("AAAAAA+Test", True, "Abc犬")]
    assert book.title == "Attention masks, settled" and book.images == 0
    assert not pdf.read(small_pdf(tmp_path / "b.pdf", embedded=False)).fonts[0].embedded


def test_bad_arguments(tmp_path: Path):
    assert pdf.pdf_name("ja") == "attention-masks-ja.pdf"
    with pytest.raises(ValueError, match="edition"):
        pdf.pdf_name("fr")
    with pytest.raises(TypeError, match="path"):
        pdf.read(str(tmp_path / "a.pdf"))
    with pytest.raises(TypeError, match="site_dir"):
        pdf.book_pages("build/site", "en")
    with pytest.raises(ValueError, match="site_dir"):
        pdf.book_pages(tmp_path, "en")   # no site there
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.5\n1 0 obj\n<<>>\nendobj\nstartxref\n9\n%%EOF\n")
    with pytest.raises(ValueError, match="cross-reference"):
        pdf.read(tmp_path / "a.pdf")
