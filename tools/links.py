"""Where the series lives on GitHub: the ONE place that names the repository for Binder and Colab links.

To publish from a fork or another branch, change REPOSITORY (owner/name) and REF below, then run
    python tools/links.py
which rewrites the Binder and Colab links in README.md and README.ja.md and, through tools/colab.py and
tools/ja_sync.py, every chapter's badge cell and Colab set-up cell, in both editions.
tests/test_links.py fails while any link still names another repository or branch.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "attention-masks/attention-masks"  # owner/name on GitHub
REF = "main"                                     # branch or tag the links open
START = "notebooks/00_start_here.ipynb"          # what the README's Binder badge opens
START_JA = "notebooks/ja/00_start_here.ipynb"    # ... and README.ja.md's (the Japanese edition)
READMES = {"README.md": START, "README.ja.md": START_JA}


def binder_url(notebook: str = START) -> str:
    """Binder launch link opening `notebook` (path from the repository root) in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{REPOSITORY}/{REF}?urlpath=lab/tree/{notebook}"


def colab_url(notebook: str) -> str:
    """Colab link opening `notebook` (path from the repository root) straight from GitHub."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{REF}/{notebook}"


def package_spec() -> str:
    """pip requirement that installs helpers/ from the repository (what Colab's set-up cell installs)."""
    return f"attention-masks-helpers[notebooks] @ git+https://github.com/{REPOSITORY}@{REF}"


def readme_links(start: str = START) -> dict[str, str]:
    """A README's reference-style launch links: name -> URL."""
    return {"binder": binder_url(start), "colab": colab_url(start)}


def write_readme(path: Path = ROOT / "README.md", start: str = START) -> bool:
    """Point README's `[binder]: ...` and `[colab]: ...` lines at the URLs above; True if the file changed."""
    text = new = path.read_text(encoding="utf-8")
    for name, url in readme_links(start).items():
        line = re.compile(rf"^\[{name}\]: .*$", re.MULTILINE)
        if not line.search(new):
            raise ValueError(f"{path}: no '[{name}]: URL' reference line to update")
        new = line.sub(f"[{name}]: {url}", new)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main() -> int:
    sys.path.insert(0, str(ROOT / "tools"))
    import colab
    import ja_sync

    for name, start in READMES.items():
        print(f"{name}: {'updated' if write_readme(ROOT / name, start) else 'unchanged'}")
    return colab.main([]) or ja_sync.main([])  # the Japanese edition takes the new cells, with its own badges


if __name__ == "__main__":
    sys.exit(main())
