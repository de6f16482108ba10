"""The book as one PDF per edition: `make pdf` -> build/pdf/attention-masks-en.pdf and attention-masks-ja.pdf.

Chromium (Debian's /usr/bin/chromium, driven by Playwright; no network) prints the built site (tools/site.py, which
`make pdf` builds first, or --site DIR as it is). For each edition, every page of the site in reading order
(site.pages: the chapters, then site.REFERENCE's pages: the cheat sheet, the glossary, ...) is opened from disk; its
math is already typeset (KaTeX); each static explorer's iframe is replaced by a picture of its first view (a
screenshot of the frame once its page says it is ready: an iframe does not print); the ids of the page get the
page's name in front (two chapters both have a "Summary"), and links to another page of the book become links inside
the PDF (links out of the book go to the published site). The pages' articles are then put one after the other,
after a title page, into the first page, and Chromium prints that one document: A4, a page number at the foot, an
outline from the headings, and tools/site_theme/book-print.css, which hides the site's navigation and lets code and
wide tables wrap. One document printed once, rather than pages printed one by one and joined: nothing to concatenate
(no PDF library needed) and each font is embedded once.

`read(path)` reads such a PDF back without a PDF library (the classic cross-reference table Chromium writes): each
page's size and text, each font's name, whether it is embedded and which characters it has. The tests check the
books with it (tests/browser/test_site.py); `python -m tools.pdf --describe FILE...` prints the same.
Usage: python -m tools.pdf [--site DIR] [--no-build] [--out DIR] [--editions en ja] [--chapters 00 02 ...]
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import functools
import html
import re
import sys
import time
import zlib
from pathlib import Path

from tools import links, series, site

ROOT = series.ROOT
OUT = ROOT / "build" / "pdf"
SITE = ROOT / "build" / "site"
PRINT_CSS = site.THEME / "book-print.css"
CHROMIUM = Path("/usr/bin/chromium")
# A4 is 210 mm wide; 12 mm margins leave 186 mm = 703 CSS px. The pages are laid out (and the explorers drawn) at
# about that width, so that the pictures print near their size.
VIEWPORT = {"width": 735, "height": 1000}
MARGIN = {"top": "14mm", "bottom": "16mm", "left": "12mm", "right": "12mm"}
A4 = (595.92, 842.88)   # points, as Chromium writes A4 (8.27 in x 11.71 in)
SUBTITLES = {"en": "Padding and causal masks in PyTorch attention, step by step",
             "ja": "PyTorch のアテンションにおけるパディングマスクと因果マスクを一歩ずつ"}
WORDS = {"en": {"explorer": "The static explorer's first view. On the site and in the chapter's notebook it moves.",
                "edition": "English edition", "site": "The site, once the repository is published"},
         "ja": {"explorer": "静的エクスプローラの最初の表示。サイトと章のノートブックでは操作できる。",
                "edition": "日本語版", "site": "ウェブ版（リポジトリの公開後）"}}
ONE_SHEET_MARKS = ".print-one-page"   # site.PRINT_MARK's element: print.css puts a page that holds it on one sheet
FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#666">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')

# Run in a page of the site (article), from Python: give its ids the page's name in front, and point its links at
# the PDF's own anchors (a page of the book) or at the published site (anything else that is relative).
PAGE_JS = """([name, inBook, siteUrl, marks]) => {
  const article = document.querySelector("article[role=main]");
  // a page's mark for the site's own print style (print.css: the cheat sheet on one sheet) would lay out the
  // whole book so: the book prints each page in its own style (book-print.css)
  article.querySelectorAll(marks).forEach((e) => e.remove());
  article.querySelectorAll("[id]").forEach((e) => { e.id = name + "--" + e.id; });
  article.querySelectorAll("a[href]").forEach((a) => {
    const href = a.getAttribute("href");
    if (href === "#" || /^[a-z][a-z0-9+.-]*:/i.test(href)) return;
    if (href.startsWith("#")) { a.setAttribute("href", "#" + name + "--" + href.slice(1)); return; }
    const [path, anchor] = href.split("#");
    const page = path.split("?")[0].replace(/\\.html$/, "");
    if (!path.includes("/") && inBook.includes(page)) {
      a.setAttribute("href", "#" + page + "--" + (anchor || "top"));
    } else {
      a.setAttribute("href", new URL(href, siteUrl).href);
    }
  });
  return article.innerHTML;
}"""
# Run in the first page: its article becomes the whole book.
BOOK_JS = """([html, title, lang]) => {
  document.querySelector("article[role=main]").innerHTML = html;
  document.title = title;
  document.documentElement.lang = lang;
  return Promise.all([...document.images].map((img) => img.decode().catch(() => null)))
    .then(() => document.fonts.ready).then(() => document.images.length);
}"""


def pdf_name(edition: str) -> str:
    """The file name of an edition's book: attention-masks-en.pdf, attention-masks-ja.pdf."""
    if edition not in site.EDITIONS:
        raise ValueError(f"edition must be one of {sorted(site.EDITIONS)}, got {edition!r}")
    return f"attention-masks-{edition}.pdf"


def book_pages(site_dir: Path, edition: str) -> list[str]:
    """The edition's pages in reading order (site.pages) that the site in site_dir has (a small site leaves
    chapters out); chapter 0 must be one (the book's first page)."""
    if not isinstance(site_dir, Path):
        raise TypeError(f"site_dir must be a Path, got {type(site_dir).__name__}")
    names = [name for name in site.pages(edition) if (site_dir / edition / f"{name}.html").is_file()]
    if site.ROOT_DOC not in names:
        raise ValueError(f"site_dir has no {edition}/{site.ROOT_DOC}.html: build the site first ({site_dir})")
    return names


def title_page(edition: str) -> str:
    words = WORDS[edition]
    url = links.site_url(edition)
    return (f'<section class="book-title" id="book-title"><h1>{html.escape(site.TITLES[edition])}</h1>'
            f'<p class="book-subtitle">{html.escape(SUBTITLES[edition])}</p>'
            f'<p class="book-edition">{words["edition"]}</p>'
            f'<p class="book-site">{words["site"]}: <a href="{url}">{url}</a></p></section>')


def explorers_as_pictures(page, edition: str) -> int:
    """Replace each static explorer's iframe on `page` by a picture of its first view (once its page is ready, at
    its content's height); how many."""
    count = 0
    while page.locator("iframe.site-explorer").count():
        frame = page.locator("iframe.site-explorer").first
        frame.scroll_into_view_if_needed()
        inner = frame.content_frame
        inner.locator(".static-explorer.ready").first.wait_for(timeout=60_000)
        height = inner.locator("body").evaluate("b => Math.ceil(b.getBoundingClientRect().height) + 2")
        frame.evaluate("(f, h) => { f.style.height = h + 'px'; }", height)
        page.wait_for_timeout(50)
        picture = base64.b64encode(frame.screenshot()).decode()
        frame.evaluate("""(f, [src, caption]) => {
          const figure = document.createElement("figure");
          figure.className = "book-explorer";
          figure.innerHTML = '<img alt=""><figcaption></figcaption>';
          figure.querySelector("img").src = src;
          figure.querySelector("figcaption").textContent = caption;
          f.replaceWith(figure);
        }""", [f"data:image/png;base64,{picture}", WORDS[edition]["explorer"]])
        count += 1
    return count


def print_edition(browser, site_dir: Path, edition: str, out: Path, pages: list[str] | None = None) -> Path:
    """The edition's book, out/<pdf_name>: every page of the site in site_dir, in reading order (module doc), or
    only those named in `pages` (chapter 0 first: the tests print a few pages)."""
    names = book_pages(site_dir, edition)
    if pages is not None:
        unknown = [name for name in pages if name not in names]
        if unknown or not pages or pages[0] != site.ROOT_DOC:
            raise ValueError(f"pages must be pages of the built site, {site.ROOT_DOC} first; got {pages}")
        names = [name for name in names if name in pages]
    folder = site_dir / edition
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=2, color_scheme="light")
    context.route(re.compile(r"^(?!file:|data:)[a-z][a-z0-9+.-]*:"), lambda route: route.abort())  # offline
    try:
        page = context.new_page()
        parts = [title_page(edition)]
        for name in names:
            page.goto((folder / f"{name}.html").as_uri(), wait_until="load")
            explorers_as_pictures(page, edition)
            article = page.evaluate(PAGE_JS, [name, names, links.site_url(edition), ONE_SHEET_MARKS])
            parts.append(f'<section class="book-page" id="{name}--top" data-page="{name}">{article}</section>')
        page.goto((folder / f"{names[0]}.html").as_uri(), wait_until="load")
        page.add_style_tag(content=PRINT_CSS.read_text(encoding="utf-8"))
        page.evaluate(BOOK_JS, ["\n".join(parts), site.TITLES[edition], edition])
        out.mkdir(parents=True, exist_ok=True)
        path = out / pdf_name(edition)
        page.pdf(path=str(path), format="A4", margin=MARGIN, print_background=True, outline=True,
                 display_header_footer=True, header_template="<div></div>", footer_template=FOOTER)
        return path
    finally:
        context.close()


def print_books(site_dir: Path, out: Path, editions: list[str] | None = None) -> list[Path]:
    """Each edition's book (default: both) from the built site in site_dir into out; their paths."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        raise SystemExit(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                                   "--disable-component-update", "--no-first-run"])
        try:
            return [print_edition(browser, site_dir, edition, out) for edition in (editions or list(site.EDITIONS))]
        finally:
            browser.close()


# --- reading a PDF back (what Chromium writes: a classic cross-reference table, no object streams) ---

@dataclasses.dataclass
class Font:
    name: str          # its BaseFont, e.g. AAAAAA+LiberationSans (a subset)
    embedded: bool     # its glyphs are in the file (a font file, or a Type3 font's drawings)
    chars: str         # the characters it maps to (its ToUnicode map), sorted


@dataclasses.dataclass
class Pdf:
    sizes: list[tuple[float, float]]   # each page's width and height in points, in order
    texts: list[str]                   # each page's text (its glyphs through the fonts' ToUnicode maps)
    fonts: list[Font]
    title: str                         # the document's title (its Info dictionary)
    images: int                        # how many pictures it holds (image objects: figures, explorers' views)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        start = int(re.findall(rb"startxref\s+(\d+)", data)[-1])
        if not data.startswith(b"xref", start):
            raise ValueError("the PDF has no classic cross-reference table (an xref stream): not Chromium's format")
        self.offsets: dict[int, int] = {}
        pos = start + 4
        while True:
            head = re.compile(rb"\s*(\d+) (\d+)\s*\n").match(data, pos)
            if not head:
                break
            first, count = int(head[1]), int(head[2])
            pos = head.end()
            for k in range(count):
                entry = data[pos:pos + 20]
                if entry[17:18] == b"n":
                    self.offsets[first + k] = int(entry[:10])
                pos += 20
        self.trailer = data[pos:data.find(b"startxref", pos)]
        self._cache: dict[int, tuple[bytes, int | None]] = {}

    def obj(self, number: int, decode: bool = True) -> tuple[bytes, bytes | None]:
        """Object `number`: its dictionary's (or value's) text and, for a stream, its decoded data (unless not
        `decode`: then None)."""
        if number not in self._cache:
            start = self.offsets[number]
            head = re.compile(rb"\d+ \d+ obj\s*").match(self.data, start)
            body_start = head.end()
            end = self.data.find(b"endobj", body_start)
            stream = _STREAM.search(self.data, body_start, end)   # (a stream's data comes after its dictionary)
            if stream is None:
                self._cache[number] = (self.data[body_start:end].strip(), None)
            else:
                self._cache[number] = (self.data[body_start:stream.start()], stream.end())
        text, start = self._cache[number]
        if not decode or start is None:
            return text, None
        raw = self.data[start:start + int(self.value(text, b"Length"))]
        return text, zlib.decompress(raw) if re.search(rb"/Filter\s*/FlateDecode", text) else raw

    def value(self, text: bytes, key: bytes) -> bytes | None:
        """The value of /key in a dictionary's text: a number or a name, following one indirect reference."""
        found = re.search(rb"/" + key + rb"\s+(\d+) 0 R", text)
        if found:
            return self.obj(int(found[1]))[0]
        found = re.search(rb"/" + key + rb"(?![\w.+-])\s*(/[^\s/<>\[\]()]+|[\d.\-]+)", text)
        return found[1] if found else None

    def ref(self, text: bytes, key: bytes) -> int | None:
        found = re.search(rb"/" + key + rb"\s+(\d+) 0 R", text)
        return int(found[1]) if found else None

    def pages(self, number: int) -> list[int]:
        text, _ = self.obj(number)
        if re.search(rb"/Type\s*/Pages\b", text):
            kids = re.search(rb"/Kids\s*\[([^\]]*)\]", text)[1]
            return [page for kid in re.findall(rb"(\d+) 0 R", kids) for page in self.pages(int(kid))]
        return [number]

    def resources(self, text: bytes) -> bytes:
        number = self.ref(text, b"Resources")
        return self.obj(number)[0] if number is not None else text

    def font_refs(self, text: bytes) -> dict[bytes, int]:
        resources = self.resources(text)
        number = self.ref(resources, b"Font")
        fonts = self.obj(number)[0] if number is not None else re.search(rb"/Font\s*<<(.*?)>>", resources, re.S)
        if fonts is None:
            return {}
        body = fonts if isinstance(fonts, bytes) else fonts[1]
        return {name: int(ref) for name, ref in re.findall(rb"/([^\s/<>\[\]()]+)\s+(\d+) 0 R", body)}

    @functools.cache  # noqa: B019 (one reader per file, read once)
    def unicode_map(self, font: int) -> tuple[int, dict[bytes, str]]:
        """A font's code width in bytes and its ToUnicode map (code -> text)."""
        text, _ = self.obj(font, decode=False)
        number = self.ref(text, b"ToUnicode")
        if number is None:
            return 1, {}
        _, cmap = self.obj(number)
        space = re.search(rb"begincodespacerange\s*<([0-9A-Fa-f]+)>", cmap)
        width = len(space[1]) // 2 if space else 2
        mapping: dict[bytes, str] = {}
        for block in re.findall(rb"beginbfchar(.*?)endbfchar", cmap, re.S):
            for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>", block):
                mapping[bytes.fromhex(src.decode())] = _utf16(dst)
        for block in re.findall(rb"beginbfrange(.*?)endbfrange", cmap, re.S):
            for low, high, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f]*>|\[[^\]]*\])",
                                             block):
                lo, hi = int(low, 16), int(high, 16)
                targets = re.findall(rb"<([0-9A-Fa-f]*)>", dst)
                for k, code in enumerate(range(lo, hi + 1)):
                    key = code.to_bytes(len(low) // 2, "big")
                    if dst.startswith(b"["):
                        mapping[key] = _utf16(targets[k]) if k < len(targets) else ""
                    else:
                        base = bytes.fromhex(targets[0].decode())
                        last = int.from_bytes(base[-2:], "big") + k
                        mapping[key] = (base[:-2] + last.to_bytes(2, "big")).decode("utf-16-be", "replace")
        return width, mapping

    def text(self, page: int) -> str:
        text, _ = self.obj(page)
        fonts = self.font_refs(text)
        contents = re.search(rb"/Contents\s*(\[[^\]]*\]|\d+ 0 R)", text)
        streams = [self.obj(int(n))[1] or b"" for n in re.findall(rb"(\d+) 0 R", contents[1])] if contents else []
        maps = {name: self.unicode_map(number) for name, number in fonts.items()}
        out, current = [], (1, {})
        token = re.compile(rb"/([^\s/<>\[\]()]+)\s+[\d.\-]+\s+Tf|(\[(?:[^\]\\]|\\.)*\])\s*TJ|<([0-9A-Fa-f\s]*)>\s*Tj"
                           rb"|\bET\b")
        for stream in streams:
            for match in token.finditer(stream):
                if match[1] is not None:
                    current = maps.get(match[1], (1, {}))
                elif match[2] is not None or match[3] is not None:
                    hexes = re.findall(rb"<([0-9A-Fa-f\s]*)>", match[2]) if match[2] is not None else [match[3]]
                    width, mapping = current
                    for chunk in hexes:
                        raw = bytes.fromhex(re.sub(rb"\s", b"", chunk).decode())
                        out.extend(mapping.get(raw[k:k + width], "") for k in range(0, len(raw), width))
                else:
                    out.append("\n")
        return "".join(out)

    def fonts(self) -> list[Font]:
        found = []
        for number in sorted(self.offsets):
            text, _ = self.obj(number, decode=False)
            if not re.search(rb"/Type\s*/Font\b", text):
                continue
            subtype = self.value(text, b"Subtype")
            if subtype == b"/CIDFontType2" or subtype == b"/CIDFontType0":
                continue   # a Type0 font's descendant: counted with it
            name = (self.value(text, b"BaseFont") or b"/(Type3)").decode("latin-1").lstrip("/")
            if subtype == b"/Type3":
                embedded = True
            else:
                described = text
                descendants = re.search(rb"/DescendantFonts\s*\[\s*(\d+) 0 R", text)
                if descendants:
                    described = self.obj(int(descendants[1]))[0]
                descriptor = self.ref(described, b"FontDescriptor")
                embedded = descriptor is not None and bool(
                    re.search(rb"/FontFile[23]?\s+\d+ 0 R", self.obj(descriptor)[0]))
            chars = "".join(sorted(set("".join(self.unicode_map(number)[1].values()))))
            found.append(Font(name, embedded, chars))
        return found


_STREAM = re.compile(rb"stream\r?\n")


def _utf16(hexes: bytes) -> str:
    return bytes.fromhex(hexes.decode()).decode("utf-16-be", "replace")


def _text_string(value: bytes) -> str:
    """A PDF text string: <FEFF...> (UTF-16) or (literal) with its escapes."""
    if value.startswith(b"<"):
        raw = bytes.fromhex(value[1:-1].decode())
        return raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("latin-1")
    escapes = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}
    body = re.sub(rb"\\([0-7]{1,3}|.)", lambda m: bytes([int(m[1], 8) & 0xFF]) if m[1][:1].isdigit()
                  else escapes.get(m[1], m[1]), value[1:-1], flags=re.S)
    return body[2:].decode("utf-16-be") if body.startswith(b"\xfe\xff") else body.decode("latin-1")


def read(path: Path) -> Pdf:
    """A PDF that Chromium printed (module doc): its pages' sizes and texts, its fonts, its title."""
    if not isinstance(path, Path):
        raise TypeError(f"path must be a Path, got {type(path).__name__}")
    reader = _Reader(path.read_bytes())
    root = reader.obj(reader.ref(reader.trailer, b"Root"))[0]
    pages = reader.pages(reader.ref(root, b"Pages"))
    sizes = []
    for number in pages:
        box = re.search(rb"/MediaBox\s*\[([^\]]*)\]", reader.obj(number)[0])[1].split()
        sizes.append((float(box[2]) - float(box[0]), float(box[3]) - float(box[1])))
    info = reader.ref(reader.trailer, b"Info")
    title = ""
    if info is not None:
        found = re.search(rb"/Title\s*(<[0-9A-Fa-f]*>|\((?:[^()\\]|\\.)*\))", reader.obj(info)[0], re.S)
        title = _text_string(found[1]) if found else ""
    images = sum(1 for number in reader.offsets
                 if re.search(rb"/Subtype\s*/Image\b", reader.obj(number, decode=False)[0]))
    return Pdf(sizes, [reader.text(number) for number in pages], reader.fonts(), title, images)


def is_a4(size: tuple[float, float]) -> bool:
    """Whether a page size (points) is A4 portrait, to within a point."""
    return abs(size[0] - A4[0]) < 1 and abs(size[1] - A4[1]) < 1


def describe(path: Path) -> str:
    book = read(path)
    sizes = sorted({f"{w:.1f} x {h:.1f} pt" for w, h in book.sizes})
    fonts = ", ".join(f"{f.name}{'' if f.embedded else ' (NOT embedded)'}" for f in book.fonts)
    return (f"{path}: {len(book.sizes)} pages ({'; '.join(sizes)}), {book.images} pictures, "
            f"{path.stat().st_size / 1e6:.1f} MB, "
            f"title {book.title!r}; fonts: {fonts}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built site (default: build/site)")
    parser.add_argument("--no-build", action="store_true", help="print the site in --site as it is")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--editions", nargs="*", choices=list(site.EDITIONS), default=list(site.EDITIONS))
    parser.add_argument("--chapters", nargs="*", help="build only these chapters' site (00 is always needed)")
    parser.add_argument("--describe", nargs="*", type=Path, help="print what these PDFs hold, and stop")
    args = parser.parse_args(argv)
    if args.describe:
        for path in args.describe:
            print(describe(path))
        return 0
    start = time.perf_counter()
    site_dir = args.site.resolve()
    if not args.no_build:
        chapters = [c.zfill(2) for c in args.chapters] if args.chapters else None
        site.build(site_dir, chapters)
    built = time.perf_counter()
    for path in print_books(site_dir, args.out.resolve(), args.editions):
        print(describe(path))
    print(f"pdf: site {built - start:.1f} s, printing {time.perf_counter() - built:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
