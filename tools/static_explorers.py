"""Export every chapter's explorers as static explorers: `make explorers` -> build/explorers/NN_<stem>.html.

Each file holds one chapter's explorers with their views precomputed in Python (helpers/static_explorer.py): it
opens from disk in a browser with no kernel and no network. Its title is the chapter notebook's first heading, in
the edition's language (`export`, which tools/slides.py and tools/site.py use too). Prints, per chapter, the
settings precomputed, the distinct views among them, the file's size against the budget, and the export time;
exits 1 if a file is over budget.
Usage: python -m tools.static_explorers [--edition en|ja] [--out DIR] [CHAPTER ...]  (chapters as numbers, e.g.
04 13; default: every chapter with explorers), also writes DIR/index.html linking the files. --edition ja: the
Japanese edition's (notes, summaries and titles in Japanese), into build/explorers/ja by default.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
from pathlib import Path

import torch

from helpers import chapters, static_explorer
from tools import series

ROOT = series.ROOT


def heading(chapter: str, edition: str = "en", root: Path = ROOT) -> str:
    """The chapter's name as its notebook's first heading says it, in the edition ("en" or "ja"); "" if the
    notebook has none."""
    stem = chapters.chapters()[chapter][2:]
    try:
        first = json.loads((series.notebooks(edition, root) / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return ""
    return "".join(first["source"]).split("\n", 1)[0].lstrip("#").strip()


def export(chapter: str, out: Path, edition: str = "en") -> static_explorer.Exported | None:
    """static_explorer.export_chapter, the page titled by the chapter notebook's heading in the edition."""
    return static_explorer.export_chapter(chapter, out, edition, heading(chapter, edition))


def index(exported: list[static_explorer.Exported], out: Path) -> Path:
    """DIR/index.html: a link to each chapter's static explorer (all the files in DIR, not only these)."""
    files = [p.name for p in series.chapters_in(out, ".html")]
    items = "".join(f'<li><a href="{html.escape(name)}">{html.escape(name[:-5].replace("_", " "))}</a></li>'
                    for name in files)
    path = out / "index.html"
    path.write_text('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Static explorers</title>'
                    "</head><body style=\"font-family:system-ui,sans-serif;margin:1.5em\"><h1>Static explorers</h1>"
                    f"<p>Each chapter's explorers, precomputed: they work offline, with no kernel.</p><ul>{items}</ul>"
                    "</body></html>\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers (default: every chapter with explorers)")
    parser.add_argument("--edition", choices=series.EDITIONS, default="en")
    parser.add_argument("--out", type=Path, help="default: build/explorers (en), build/explorers/ja (ja)")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = series.edition_folder(ROOT / "build" / "explorers", args.edition)
    torch.set_num_threads(1)  # tiny tensors: one thread is fastest, and no spinning threads on a busy machine
    known = [c for c in chapters.chapters() if chapters.explorers(c)]
    wanted = [c.zfill(2) for c in args.chapters] or known
    unknown = [c for c in wanted if c not in known]
    if unknown:
        parser.error(f"no explorers in chapter(s) {', '.join(unknown)}; chapters with explorers: {', '.join(known)}")
    done, over = [], []
    print(f"{'chapter':<8} {'settings':>8} {'distinct':>8} {'KB':>7} {'budget KB':>9} {'seconds':>7}  file")
    for chapter in wanted:
        result = export(chapter, args.out, args.edition)
        done.append(result)
        if not result.within_budget:
            over.append(chapter)
        print(f"{chapter:<8} {result.settings:>8} {result.distinct:>8} {result.bytes / 1000:>7.1f} "
              f"{static_explorer.BUDGET_BYTES / 1000:>9.0f} {result.seconds:>7.2f}  "
              f"{os.path.relpath(result.path)}{'  OVER BUDGET' if not result.within_budget else ''}")
    print(f"index: {os.path.relpath(index(done, args.out))}")
    if over:
        print(f"over the {static_explorer.BUDGET_BYTES} byte budget: chapter(s) {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
