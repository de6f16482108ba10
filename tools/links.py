"""Where the series lives on GitHub: the ONE place that names the repository for Binder and Colab links.

To publish from a fork or another branch, change REPOSITORY (owner/name) and REF below, then run
    python tools/links.py
which rewrites the Binder link in README.md and, through tools/colab.py, every chapter's badge cell and
Colab set-up cell. tests/test_links.py fails while any link still names another repository or branch.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "attention-masks/attention-masks"  # owner/name on GitHub
REF = "main"                                     # branch or tag the links open
START = "notebooks/00_start_here.ipynb"          # what the README's Binder badge opens


def binder_url(notebook: str = START) -> str:
    """Binder launch link opening `notebook` (path from the repository root) in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{REPOSITORY}/{REF}?urlpath=lab/tree/{notebook}"


def colab_url(notebook: str) -> str:
    """Colab link opening `notebook` (path from the repository root) straight from GitHub."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{REF}/{notebook}"


def package_spec() -> str:
    """pip requirement that installs helpers/ from the repository (what Colab's set-up cell installs)."""
    return f"attention-masks-helpers[notebooks] @ git+https://github.com/{REPOSITORY}@{REF}"


def readme_links() -> dict[str, str]:
    """README's reference-style launch links: name -> URL."""
    return {"binder": binder_url(), "colab": colab_url(START)}


def write_readme(path: Path = ROOT / "README.md") -> bool:
    """Point README's `[binder]: ...` and `[colab]: ...` lines at the URLs above; True if the file changed."""
    text = new = path.read_text(encoding="utf-8")
    for name, url in readme_links().items():
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

    print(f"README.md: {'updated' if write_readme() else 'unchanged'}")
    return colab.main([])


if __name__ == "__main__":
    sys.exit(main())
