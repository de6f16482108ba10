"""Give every chapter an "Open in Colab" / Binder badge cell and a Colab set-up cell (idempotent).

- badge cell (id `colab-badge`): a markdown cell right after the title cell with both launch links;
- set-up cell (id `colab-setup`): the first code cell. On Colab (where `google.colab` imports) it pip-installs
  helpers/ from the repository and matplotlib-fontja; anywhere else it does nothing and prints nothing.
Both are skipped in the slide decks. Running this again rewrites the two cells in place (same ids, same text),
so a changed repository slug in tools/links.py reaches every chapter.
Usage: python tools/colab.py [NOTEBOOK ...]   (default: every notebooks/NN_*.ipynb)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import links  # noqa: E402

ROOT = links.ROOT
BADGE_ID, SETUP_ID = "colab-badge", "colab-setup"
FONTJA = "matplotlib-fontja==1.1.0"  # the pin in requirements.txt (tests/test_colab.py checks they agree)
SKIP = {"slideshow": {"slide_type": "skip"}}


def badge_source(notebook: str) -> str:
    colab = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
    binder = "[![Binder](https://mybinder.org/badge_logo.svg)]"
    return f"{colab}({links.colab_url(notebook)}) {binder}({links.binder_url(notebook)})"


def setup_source() -> str:
    return f'''# Colab only: install this series' helpers and a Japanese font. Anywhere else this cell does nothing.
try:
    import google.colab  # noqa: F401  (importable only on Colab)
except ImportError:
    pass
else:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                    "{links.package_spec()}", "{FONTJA}"], check=True)'''


def relative(path: Path) -> str:
    """The notebook's path from the repository root, with forward slashes (for URLs)."""
    return path.resolve().relative_to(ROOT).as_posix()


def apply(nb: nbformat.NotebookNode, notebook: str) -> nbformat.NotebookNode:
    """nb with exactly one badge cell after the title and one set-up cell before the first other code cell."""
    cells = [c for c in nb.cells if c.get("id") not in (BADGE_ID, SETUP_ID)]
    if not cells or cells[0].cell_type != "markdown":
        raise ValueError(f"{notebook}: the first cell must be the markdown title cell")
    badge = nbformat.v4.new_markdown_cell(badge_source(notebook), id=BADGE_ID, metadata=dict(SKIP))
    setup = nbformat.v4.new_code_cell(setup_source(), id=SETUP_ID, metadata=dict(SKIP))
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
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        print(f"{path}: {'updated' if update(path) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
