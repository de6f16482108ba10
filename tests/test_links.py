"""Launch links and the Colab set-up cell: one repository slug (tools/links.py) everywhere, every chapter of
both editions has its badge cell and set-up cell (tools/links.py writes them), and the set-up cell is a silent
no-op off Colab."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers.language import VARIABLE
from tools import links, series

ROOT = links.ROOT
CHAPTERS = series.every_chapter()  # both editions
LAUNCH = re.compile(r"https://(?:mybinder\.org/v2/gh|colab\.research\.google\.com/github)/([^/\s)]+/[^/\s)]+)/"
                    r"(?:blob/)?([\w.\-]+)")


@pytest.mark.parametrize(("readme", "start"), links.READMES.items())
def test_readme_launch_links_are_the_ones_from_links_py(readme: str, start: str):
    text = (ROOT / readme).read_text(encoding="utf-8")
    for name, url in links.readme_links(start).items():
        assert f"[{name}]: {url}" in text, "run `python -m tools.links`"
    assert text.count("mybinder.org/v2/gh/") == 1, f"{readme} sets its Binder link in one place"
    assert (ROOT / start).is_file()
    assert links.readme_launch_line(series.edition_of(start)) in text.splitlines(), "run `python -m tools.links`"


REMOTE_IMAGE = re.compile(r"!\[[^\]]*\]\(https?://|<img[^>]+src=[\"']https?://")


@pytest.mark.parametrize("path", [ROOT / "README.md", ROOT / "README.ja.md", *CHAPTERS],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_launch_links_say_they_need_the_published_repository_and_show_no_remote_image(path: Path):
    """Offline (and before the repository is published) a badge picture is a broken image and a failed request;
    the launch links are text, and each says where and when they work."""
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        [badge] = [cell for cell in nb.cells if cell.get("id") == links.BADGE_ID]
        edition = series.edition_of(links.relative(path))
        assert links.published_note(edition) in badge.source
        assert f"github.com/{links.REPOSITORY}" in [c for c in nb.cells if c.get("id") == links.SETUP_ID][0].source
        texts = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    else:
        texts = [path.read_text(encoding="utf-8")]
        assert links.published_note(series.edition_of(links.READMES[path.name])) in texts[0]
    assert not [t for t in texts if REMOTE_IMAGE.search(t)], f"{path.name}: a picture from the web"


@pytest.mark.parametrize("path", [ROOT / "README.md", ROOT / "README.ja.md", *CHAPTERS],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_launch_link_uses_the_slug(path: Path):
    for slug, ref in LAUNCH.findall(path.read_text(encoding="utf-8")):
        assert (slug, ref) == (links.REPOSITORY, links.REF), f"{path.name}: a link to {slug}@{ref}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.relative_to(series.notebooks()).as_posix())
def test_every_chapter_has_its_badge_and_setup_cell(path: Path):
    nb = nbformat.read(path, as_version=4)
    fix = "run `python -m tools.links` (then re-execute the chapter)"
    ids = [cell.get("id") for cell in nb.cells]
    assert ids.count(links.BADGE_ID) == 1 and ids.count(links.SETUP_ID) == 1, f"{path.name}: {fix}"
    badge = nb.cells[ids.index(links.BADGE_ID)]
    assert ids.index(links.BADGE_ID) == 1 and badge.source == links.badge_source(links.relative(path)), fix
    first_code = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert first_code.get("id") == links.SETUP_ID, f"{path.name}: the set-up cell must be the first code cell"
    assert first_code.source == links.setup_source(series.edition_of(links.relative(path))), f"{path.name}: {fix}"
    assert not first_code.outputs, f"{path.name}: outside Colab the set-up cell prints nothing"


def test_colab_installs_the_pinned_font():
    assert f"{links.font_spec()}\n" in (ROOT / "requirements.txt").read_text()


def test_apply_is_idempotent_and_keeps_other_cells():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[md("# Title"), md("Goals."), code("x = 1"), code("y = 2")])
    once = links.apply(nbformat.from_dict(json.loads(json.dumps(nb))), "notebooks/99_x.ipynb")
    twice = links.apply(nbformat.from_dict(json.loads(json.dumps(once))), "notebooks/99_x.ipynb")
    assert once == twice
    assert [c.get("id") for c in once.cells][1] == links.BADGE_ID
    assert [c.source for c in once.cells] == ["# Title", links.badge_source("notebooks/99_x.ipynb"), "Goals.",
                                             links.setup_source(), "x = 1", "y = 2"]
    assert all(c.metadata["slideshow"] == {"slide_type": "skip"} for c in once.cells[1:4:2])
    with pytest.raises(ValueError, match="title cell"):
        links.apply(nbformat.v4.new_notebook(cells=[code("x = 1")]), "notebooks/99_x.ipynb")


HARNESS = """
import json, os, subprocess, sys, types
calls = []
def record(*args, **kwargs):
    calls.append(list(args[0]) if args else kwargs)
    return subprocess.CompletedProcess(args, 0)
for name in ("run", "call", "check_call", "check_output", "Popen"):
    setattr(subprocess, name, record)
os.system = record
if sys.argv[1] == "colab":
    google = types.ModuleType("google")
    google.colab = types.ModuleType("google.colab")
    sys.modules.update({"google": google, "google.colab": google.colab})
else:
    class NoColab:
        def find_spec(self, name, path=None, target=None):
            if name == "google.colab":
                raise ModuleNotFoundError("No module named 'google.colab'")
    sys.meta_path.insert(0, NoColab())
exec(compile(sys.stdin.read(), "colab-setup", "exec"), {"__name__": "__main__"})
if calls:
    sys.stderr.write(json.dumps(calls))
"""


def run_setup_cell(where: str, edition: str = "en") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HARNESS, where], input=links.setup_source(edition),
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize("edition", ["en", "ja"])
def test_setup_cell_only_sets_the_language_off_colab(edition):
    harness = HARNESS.replace("if calls:", f"print(os.environ[{VARIABLE!r}])\nif calls:")
    result = subprocess.run([sys.executable, "-c", harness, "local"], input=links.setup_source(edition),
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == (edition + "\n", ""), "no pip call and no output outside Colab"


def test_each_edition_sets_its_language():
    assert series.edition_of("notebooks/ja/04_key_padding_mask.ipynb") == "ja"
    assert series.edition_of("notebooks/04_key_padding_mask.ipynb") == "en"
    assert f'os.environ["{VARIABLE}"] = "ja"' in links.setup_source("ja")
    with pytest.raises(ValueError, match="edition"):
        links.setup_source("fr")


def test_setup_cell_installs_on_colab():
    result = run_setup_cell("colab")
    assert result.returncode == 0 and result.stdout == ""
    [call] = json.loads(result.stderr)
    assert call[1:4] == ["-m", "pip", "install"]
    assert links.package_spec() in call and links.font_spec() in call


SHEET_LINK = re.compile(r"((?:\.\./)*(?:notebooks/)?(?:ja/)?)(cheatsheet|reference)\.md#([^)\s\"\\]+)")


def _anchors(page: Path) -> set[str]:
    """The anchors of a cheat sheet or reference page: its raw <a id="x"></a> and its headings' (as the site and
    JupyterLab make them: tools.site.heading_anchor)."""
    from tools.site import heading_anchor

    text = page.read_text(encoding="utf-8")
    headings = {heading_anchor(line.lstrip("#").strip()) for line in text.splitlines() if line.startswith("#")}
    return set(re.findall(r'<a id="([\w\-]+)"></a>', text)) | headings


@pytest.mark.parametrize("edition", series.EDITIONS)
def test_the_dead_row_table_has_its_anchor(edition: str):
    """The chapters link the one dead-row table as cheatsheet.md#dead-rows: the anchor sits right above its heading."""
    lines = (series.notebooks(edition) / "cheatsheet.md").read_text(encoding="utf-8").splitlines()
    at = lines.index('<a id="dead-rows"></a>')
    assert lines[at + 1].startswith("## ") and "|" in "".join(lines[at + 2:at + 5])


def test_every_link_to_a_cheat_sheet_anchor_resolves():
    """Links such as cheatsheet.md#dead-rows or reference.md#x, anywhere in the notebooks, READMEs, docs and
    helpers, reach an anchor of that page in the same edition."""
    sources = [*series.every_chapter(), *sorted(series.notebooks().rglob("*.md")), *sorted(ROOT.glob("README*.md")),
               *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "helpers").rglob("*.py"))]
    broken = []
    for source in sources:
        for prefix, page, anchor in SHEET_LINK.findall(source.read_text(encoding="utf-8")):
            folder = (source.parent / prefix).resolve() if prefix else source.parent
            if folder == ROOT:
                folder = series.notebooks()
            target = folder / f"{page}.md"
            if not target.is_file() or anchor not in _anchors(target):
                broken.append(f"{source.relative_to(ROOT)}: {page}.md#{anchor}")
    assert not broken, broken
