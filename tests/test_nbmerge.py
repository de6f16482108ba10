"""tools/nbmerge.py: notebooks merged cell by cell, in a real git repository (git calls the driver)."""

import subprocess
from pathlib import Path

import nbformat
import pytest

from tools import nbmerge, series


def notebook(*cells: tuple[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for cell_id, source in cells:
        cell = nbformat.v4.new_markdown_cell(source) if cell_id.startswith("m") else nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        nb.cells.append(cell)
    return nb


def test_changes_to_different_cells_merge():
    base = notebook(("m1", "a"), ("c1", "x = 1"), ("m2", "b"))
    ours = notebook(("m1", "a, rewritten"), ("c1", "x = 1"), ("m2", "b"))
    theirs = notebook(("m1", "a"), ("c1", "x = 1"), ("m3", "new"), ("m2", "b, rewritten"))
    merged, conflicts, rerun = nbmerge.merge(base, ours, theirs)
    assert [(c.id, c.source) for c in merged.cells] == [("m1", "a, rewritten"), ("c1", "x = 1"), ("m3", "new"),
                                                         ("m2", "b, rewritten")]
    assert not conflicts and not rerun


def test_a_moved_cell_and_an_edit_merge_and_a_real_conflict_is_named():
    base = notebook(("m1", "a"), ("m2", "b"), ("m3", "c"))
    moved = notebook(("m1", "a"), ("m3", "c"), ("m2", "b"))
    edited = notebook(("m1", "a"), ("m2", "b!"), ("m3", "c"))
    merged, conflicts, _ = nbmerge.merge(base, moved, edited)
    assert [(c.id, c.source) for c in merged.cells] == [("m1", "a"), ("m3", "c"), ("m2", "b!")] and not conflicts
    other = notebook(("m1", "a"), ("m2", "b?"), ("m3", "c"))
    assert nbmerge.merge(base, edited, other)[1] == ["m2: source"]
    deleted = notebook(("m1", "a"), ("m3", "c"))
    assert nbmerge.merge(base, deleted, edited)[1] == ["m2: deleted on one side, changed on the other"]


def test_outputs_follow_the_source_and_both_runs_ask_for_a_rerun():
    base, ours, theirs = (notebook(("c1", "print(1)")) for _ in range(3))
    theirs.cells[0].source = "print(2)"
    theirs.cells[0].outputs = [nbformat.v4.new_output("stream", text="2\n")]
    merged, _, rerun = nbmerge.merge(base, ours, theirs)
    assert merged.cells[0].outputs == theirs.cells[0].outputs and not rerun
    ours.cells[0].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    assert nbmerge.merge(base, ours, theirs)[2], "both sides re-ran the cell: the notebook must run again"


@pytest.mark.skipif(not series.ROOT.joinpath(".git").exists(), reason="needs the repository's git")
def test_git_calls_the_driver(tmp_path: Path):
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    nbmerge.install(tmp_path)
    assert nbmerge.ATTRIBUTE in (tmp_path / ".git" / "info" / "attributes").read_text()
    path = tmp_path / "a.ipynb"

    def write(nb: nbformat.NotebookNode) -> None:
        path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")

    write(notebook(("m1", "a"), ("m2", "b"), ("m3", "c")))
    git("add", "a.ipynb")
    git("commit", "-qm", "base")
    git("checkout", "-qb", "other")
    write(notebook(("m1", "a"), ("m2", "b, theirs"), ("m3", "c")))
    git("commit", "-qam", "theirs")
    git("checkout", "-q", "main")
    write(notebook(("m1", "a"), ("m3", "c"), ("m2", "b")))     # ours moves m2 to the end
    git("commit", "-qam", "ours")
    git("merge", "-q", "--no-edit", "other")   # a line merge cannot tell a moved cell from a deleted one
    assert [(c.id, c.source) for c in nbformat.read(path, as_version=4).cells] == [
        ("m1", "a"), ("m3", "c"), ("m2", "b, theirs")]
