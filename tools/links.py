"""Where the series lives on GitHub, and every link and cell that says so: the ONE place that names it.

REPOSITORY (owner/name) and REF below make every Binder and Colab link, Colab's install of helpers/, and the
address the book site (`make site`, tools/site.py) is published at (GitHub Pages: site_url):
- README.md and README.ja.md: their reference-style `[binder]:`, `[colab]:` and `[site]:` lines, and their launch
  line under the title (text links, no badge pictures: offline, a remote picture is a broken image), which says,
  as every launch link here does (published_note), that the links work once the repository is published at
  REPOSITORY;
- the site's "how to run" pages and each chapter page's launch links (tools/site.py builds them from here);
- every chapter, in both editions: a launch cell (id `colab-badge`) right after the title cell with both launch
  links for that notebook's own path and the same note in the edition's language, and a set-up cell (id
  `colab-setup`), the first code cell. The set-up cell sets the language the helpers speak (helpers.language:
  "ja" in notebooks/ja/, "en" in notebooks/), the one difference between the two editions' code; on Colab (where
  `google.colab` imports) it also pip-installs helpers/ from the repository and matplotlib-fontja at its pin in
  requirements.txt, and its comment says so and that this needs the published repository. It prints nothing.
  Slide decks skip both cells.
To publish from a fork or another branch, change REPOSITORY and REF, then run `python -m tools.links`: it
rewrites all of the above in place (idempotent: same ids, same text). tests/test_links.py fails while any link
names another repository or branch, or a chapter's two cells differ from what this module makes.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from helpers.language import VARIABLE as LANGUAGE_VARIABLE
from tools import series
from tools.dev import ROOT, pinned

REPOSITORY = "attention-masks/attention-masks"  # owner/name on GitHub
REF = "main"                                     # branch or tag the links open
START = series.start("en").relative_to(ROOT).as_posix()     # what the README's Binder badge opens
START_JA = series.start("ja").relative_to(ROOT).as_posix()  # ... and README.ja.md's (the Japanese edition)
READMES = {"README.md": START, "README.ja.md": START_JA}
BADGE_ID, SETUP_ID = "colab-badge", "colab-setup"
SKIP = {"slideshow": {"slide_type": "skip"}}


def binder_url(notebook: str = START) -> str:
    """Binder launch link opening `notebook` (path from the repository root) in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{REPOSITORY}/{REF}?urlpath=lab/tree/{notebook}"


def colab_url(notebook: str) -> str:
    """Colab link opening `notebook` (path from the repository root) straight from GitHub."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{REF}/{notebook}"


def site_url(edition: str = "") -> str:
    """Where GitHub Pages publishes build/site/ for REPOSITORY (a project site: https://OWNER.github.io/NAME/; a
    repository named OWNER.github.io is served at the root); with `edition` ("en", "ja"), that edition's start."""
    if edition not in ("", "en", "ja"):
        raise ValueError(f"edition must be '', 'en' or 'ja', got {edition!r}")
    owner, name = REPOSITORY.split("/")
    root = f"https://{owner.lower()}.github.io/" + ("" if name.lower() == f"{owner.lower()}.github.io" else f"{name}/")
    return root + (f"{edition}/" if edition else "")


def source_url(path: str) -> str:
    """GitHub's page for a file of the repository (path from the repository root) at REF."""
    return f"https://github.com/{REPOSITORY}/blob/{REF}/{path}"


def package_spec() -> str:
    """pip requirement that installs helpers/ from the repository (what Colab's set-up cell installs)."""
    return f"attention-masks-helpers[notebooks] @ git+https://github.com/{REPOSITORY}@{REF}"


def font_spec() -> str:
    """The Japanese font package at its pin in requirements.txt (Colab's set-up cell installs it too)."""
    return f"matplotlib-fontja=={pinned('matplotlib-fontja')}"


def readme_links(start: str = START) -> dict[str, str]:
    """A README's reference-style links: name -> URL (launch links for `start`, and its edition's site)."""
    return {"binder": binder_url(start), "colab": colab_url(start), "site": site_url(series.edition_of(start))}


def published_note(edition: str = "en") -> str:
    """What every launch link says beside it: it works once REPOSITORY is on GitHub (tools/links.py sets it)."""
    if edition not in SETUP_COMMENT:
        raise ValueError(f"edition must be one of {list(SETUP_COMMENT)}, got {edition!r}")
    return {"en": f"These links work once the repository is published at `github.com/{REPOSITORY}`, the address "
                  "set in `tools/links.py`; until then, run it on your machine with `make lab`.",
            "ja": f"これらのリンクは、リポジトリが `tools/links.py` で設定したアドレス `github.com/{REPOSITORY}` で"
                  "公開されてから使える。それまでは各自のマシンで `make lab` を使って実行する。"}[edition]


def readme_launch_line(edition: str = "en") -> str:
    """The README's launch line, under its title: text links (an offline page shows no broken badge image)."""
    if edition == "ja":
        return f"**オンラインで実行する：** [Binder で開く][binder] · [Colab で開く][colab]。{published_note('ja')}"
    return f"**Run it online:** [Open in Binder][binder] · [Open in Colab][colab]. {published_note('en')}"


def write_readme(path: Path = ROOT / "README.md", start: str = START) -> bool:
    """Point README's `[binder]:`, `[colab]:` and `[site]:` lines at the URLs above and write its launch line (the
    one line that uses `][binder]`); True if the file changed."""
    text = new = path.read_text(encoding="utf-8")
    for name, url in readme_links(start).items():
        line = re.compile(rf"^\[{name}\]: .*$", re.MULTILINE)
        if not line.search(new):
            raise ValueError(f"{path}: no '[{name}]: URL' reference line to update")
        new = line.sub(f"[{name}]: {url}", new)
    launch = re.compile(r"^.*\]\[binder\].*$", re.MULTILINE)
    if len(launch.findall(new)) != 1:
        raise ValueError(f"{path}: needs exactly one line that uses [binder] (the launch line)")
    new = launch.sub(lambda _: readme_launch_line(series.edition_of(start)), new)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def badge_source(notebook: str) -> str:
    """The chapter's launch cell: text links to Colab and Binder for `notebook`, in its edition's language, with
    published_note() (no badge images: offline, a remote picture is a broken image and a failed request)."""
    edition = series.edition_of(notebook)
    colab, binder = colab_url(notebook), binder_url(notebook)
    if edition == "ja":
        return (f"**この章をオンラインで実行する：** [Colab で開く]({colab}) · "
                f"[Binder で開く]({binder})。{published_note('ja')}")
    return f"**Run this chapter online:** [Open in Colab]({colab}) · [Open in Binder]({binder}). {published_note('en')}"


SETUP_COMMENT = {
    "en": "# The helpers speak English in this edition. On Colab, this cell also installs them and a Japanese font\n"
          f"# (from github.com/{REPOSITORY}: it works once the repository is published there, see tools/links.py).",
    "ja": "# 日本語版なので、helpers のヒントや表示を日本語にする。Colab ではさらに helpers と日本語フォントを入れる\n"
          f"# （github.com/{REPOSITORY} から入れるので、リポジトリがそこで公開されてから使える。"
          "tools/links.py を参照）。",
}


def setup_source(edition: str = "en") -> str:
    """The chapter's first code cell: the language the helpers speak (helpers.language), and Colab's install."""
    if edition not in SETUP_COMMENT:
        raise ValueError(f"edition must be one of {list(SETUP_COMMENT)}, got {edition!r}")
    return f'''{SETUP_COMMENT[edition]}
import os

os.environ["{LANGUAGE_VARIABLE}"] = "{edition}"
try:
    import google.colab  # noqa: F401  (importable only on Colab)
except ImportError:
    pass
else:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                    "{package_spec()}", "{font_spec()}"], check=True)'''


def relative(path: Path) -> str:
    """The notebook's path from the repository root, with forward slashes (for URLs)."""
    return path.resolve().relative_to(ROOT).as_posix()


def apply(nb: nbformat.NotebookNode, notebook: str) -> nbformat.NotebookNode:
    """nb with exactly one badge cell after the title and one set-up cell before the first other code cell.
    A cell that already has the right text is kept as it is (an executed chapter keeps its execution count)."""
    old = {c.get("id"): c for c in nb.cells if c.get("id") in (BADGE_ID, SETUP_ID)}
    cells = [c for c in nb.cells if c.get("id") not in (BADGE_ID, SETUP_ID)]
    if not cells or cells[0].cell_type != "markdown":
        raise ValueError(f"{notebook}: the first cell must be the markdown title cell")
    badge = nbformat.v4.new_markdown_cell(badge_source(notebook), id=BADGE_ID, metadata=dict(SKIP))
    setup = nbformat.v4.new_code_cell(setup_source(series.edition_of(notebook)), id=SETUP_ID, metadata=dict(SKIP))
    badge, setup = (old[c.id] if c.id in old and old[c.id].source == c.source and old[c.id].cell_type == c.cell_type
                    and old[c.id].metadata.get("slideshow") == SKIP["slideshow"] and not old[c.id].get("outputs")
                    else c for c in (badge, setup))
    previous = old.get(SETUP_ID)
    if setup is not previous and previous is not None and previous.cell_type == "code" and not previous.outputs:
        setup.execution_count = previous.execution_count  # a new comment: the stored run's numbering stays as it was
    cells.insert(1, badge)
    first_code = next((i for i, c in enumerate(cells) if c.cell_type == "code"), len(cells))
    cells.insert(first_code, setup)
    nb.cells = cells
    return nb


def update(path: Path) -> bool:
    """Rewrite the two cells of the notebook at path; True if the file changed."""
    text = path.read_text(encoding="utf-8")
    nb = apply(nbformat.reads(text, as_version=4), relative(path))
    new = nbformat.writes(nb) + "\n"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: the READMEs and every chapter")
    args = parser.parse_args(argv)
    if not args.notebooks:
        for name, start in READMES.items():
            print(f"{name}: {'updated' if write_readme(ROOT / name, start) else 'unchanged'}")
    for path in args.notebooks or series.every_chapter():
        print(f"{relative(path)}: {'updated' if update(path) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
