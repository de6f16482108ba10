"""A git merge driver for the notebooks: a three-way merge cell by cell (by cell id), not line by line.

Two branches that change different cells of one notebook (a Japanese rewrite, an explorer's new labels, a moved
optional section) merge cleanly: each cell's source and metadata come from the side that changed them, cells
added or deleted on one side are added or deleted, and a cell order changed on one side is kept. Git's own line
merge sees a notebook's JSON as one long text and stops at every pair of neighbouring changes.
- A cell whose source both sides changed differently is a real conflict: the driver keeps ours, names the cell
  and exits 1, so git reports the file as conflicted (`git show :3:<path>` holds theirs).
- Outputs are not merged: a code cell's outputs come from the side whose source won. When both sides re-ran the
  cell and their outputs differ, ours are kept and the notebook must be run again; so too when both changed the
  notebook's metadata (the explorers' stored widget state). The driver prints which notebooks to run.

Install it once per clone (it writes .git/config and .git/info/attributes, nothing that is committed):
    python -m tools.nbmerge --install
Git then calls `python -m tools.nbmerge BASE OURS THEIRS PATH` for every notebook a merge touches.
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
from pathlib import Path

import nbformat

from tools import series

ATTRIBUTE = "*.ipynb merge=nbcells"


def _pick(base, ours, theirs):
    """(value, side, conflict) of a three-way choice: the side that changed wins."""
    if ours == theirs:
        return ours, "ours", False
    if ours == base:
        return theirs, "theirs", False
    if theirs == base:
        return ours, "ours", False
    return ours, "ours", True


def _order(base: list[str], ours: list[str], theirs: list[str]) -> tuple[list[str], bool]:
    """The merged order of cell ids, and whether the two orders could not be reconciled."""
    if ours == base:
        return list(theirs), False
    if theirs == base or ours == theirs:
        return list(ours), False
    common = [i for i in ours if i in theirs]
    if common != [i for i in theirs if i in ours]:
        return list(ours), True                         # both moved cells, in different ways
    merged = list(ours)
    for index, cell_id in enumerate(theirs):            # theirs' new cells, after their predecessor
        if cell_id not in merged and cell_id not in base:
            before = theirs[index - 1] if index else None
            merged.insert(merged.index(before) + 1 if before in merged else 0, cell_id)
    return merged, False


def merge(base: nbformat.NotebookNode, ours: nbformat.NotebookNode, theirs: nbformat.NotebookNode
          ) -> tuple[nbformat.NotebookNode, list[str], bool]:
    """(merged notebook, conflicts, whether it must be run again)."""
    by_id = [{cell.get("id"): cell for cell in nb.cells} for nb in (base, ours, theirs)]
    ids = [[cell.get("id") for cell in nb.cells] for nb in (base, ours, theirs)]
    order, tangled = _order(*ids)
    conflicts, rerun = (["the order of the cells"] if tangled else []), False
    for cell_id in ids[0]:                               # deleted on one side and left out of the order
        kept = by_id[1].get(cell_id) or by_id[2].get(cell_id)
        if cell_id not in order and kept is not None and kept.get("source") != by_id[0][cell_id].get("source"):
            conflicts.append(f"{cell_id}: deleted on one side, changed on the other")
    cells = []
    for cell_id in order:
        b, o, t = (cells_.get(cell_id) for cells_ in by_id)
        if b is not None and (o is None or t is None):   # deleted on one side
            other = o if o is not None else t
            if other.get("source") != b.get("source"):
                conflicts.append(f"{cell_id}: deleted on one side, changed on the other")
            continue
        if o is None or t is None:                       # added on one side
            cells.append(copy.deepcopy(o if o is not None else t))
            continue
        b = b or {}
        cell = copy.deepcopy(o)
        cell["source"], side, clash = _pick(b.get("source"), o.get("source"), t.get("source"))
        if clash:
            conflicts.append(f"{cell_id}: source")
        cell["metadata"], _, clash = _pick(b.get("metadata"), o.get("metadata"), t.get("metadata"))
        if clash:
            conflicts.append(f"{cell_id}: metadata")
        if cell.get("cell_type") == "code":
            base_out, our_out, their_out = (x.get("outputs") for x in (b, o, t))
            if our_out == their_out or their_out == base_out:
                winner = o
            elif our_out == base_out:
                winner = t
            else:                                        # both ran it: the side whose source won, and run again
                winner, rerun = (t if side == "theirs" else o), True
            cell["outputs"] = copy.deepcopy(winner.get("outputs"))
            cell["execution_count"] = winner.get("execution_count")
        cells.append(cell)
    merged = copy.deepcopy(ours)
    merged.cells = cells
    merged.metadata, _, clash = _pick(base.metadata, ours.metadata, theirs.metadata)
    rerun = rerun or clash
    return merged, conflicts, rerun


def install(root: Path = series.ROOT) -> None:
    """Register the driver in the git configuration of the clone at `root` (nothing committed): git runs this
    module with this checkout's tools/ and this Python."""
    python = Path(sys.executable)
    subprocess.run(["git", "-C", str(root), "config", "merge.nbcells.name", "notebooks, cell by cell"], check=True)
    subprocess.run(["git", "-C", str(root), "config", "merge.nbcells.driver",
                    f"PYTHONPATH='{series.ROOT}' '{python}' -m tools.nbmerge %O %A %B %P"], check=True)
    info = Path(subprocess.run(["git", "-C", str(root), "rev-parse", "--git-path", "info/attributes"],
                               check=True, capture_output=True, text=True).stdout.strip())
    info = info if info.is_absolute() else root / info
    info.parent.mkdir(parents=True, exist_ok=True)
    lines = info.read_text().splitlines() if info.exists() else []
    if ATTRIBUTE not in lines:
        info.write_text("\n".join([*lines, ATTRIBUTE]) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="register the driver in this clone's git config")
    parser.add_argument("files", nargs="*", metavar="BASE OURS THEIRS PATH", help="what git passes (%%O %%A %%B %%P)")
    args = parser.parse_args(argv)
    if args.install:
        install()
        print(f"installed: git merges notebooks cell by cell in {series.ROOT}")
        return 0
    if len(args.files) != 4:
        parser.error("expected BASE OURS THEIRS PATH (git passes them), or --install")
    base_path, ours_path, theirs_path, path = args.files
    base, ours, theirs = (nbformat.read(p, as_version=4) for p in (base_path, ours_path, theirs_path))
    merged, conflicts, rerun = merge(base, ours, theirs)
    Path(ours_path).write_text(nbformat.writes(merged) + "\n", encoding="utf-8")
    for conflict in conflicts:
        print(f"nbmerge: {path}: both sides changed {conflict}; kept ours", file=sys.stderr)
    if rerun:
        print(f"nbmerge: {path}: outputs or widget state changed on both sides; run it again "
              f"(python -m tools.execute_notebooks {path})", file=sys.stderr)
    return 1 if conflicts else 0


if __name__ == "__main__":
    sys.exit(main())
