"""A wrong answer in a chapter of the Japanese edition gets its one-line hint in Japanese, under nbval.

Japanese chapter 1, up to its first exercise, with a wrong answer (the book's mask with its polarity flipped) and
the check cell tagged `raises-exception`: run from a fresh kernel, the check's error is the Mistake with its
Japanese hint, shown as one red line; then nbval runs the notebook again and compares the stored error
(`ename`, `evalue`) with the new one. (The browser test does the same in JupyterLab:
tests/browser/test_japanese_chapter.py.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tools import series

ROOT = series.ROOT
CHAPTER = series.notebooks("ja") / "01_the_pad_question.ipynb"
ANSWER, CHECK = "c31", "c32"      # exercise 1: the answer cell and its check cell
WRONG = "answer_1 = (ids_batch == pad_id).unsqueeze(1)"  # True at the pads: the opposite polarity
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@pytest.mark.slow  # two kernels, a few seconds each
def test_a_wrong_answer_gets_a_japanese_hint_under_nbval(tmp_path: Path):
    nb = nbformat.read(CHAPTER, as_version=4)
    ids = [cell.id for cell in nb.cells]
    nb.cells = nb.cells[: ids.index(CHECK) + 1]
    answer, check = nb.cells[ids.index(ANSWER)], nb.cells[ids.index(CHECK)]
    assert "answer_1 = None" in answer.source
    answer.source = re.sub(r"answer_1 = None[^\n]*", WRONG, answer.source)
    check.metadata["tags"] = ["raises-exception"]
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(CHAPTER.parent)}}).execute()
    [error] = check.outputs
    assert error.output_type == "error" and error.ename == "Mistake"
    assert JAPANESE.search(error.evalue) and "polarity" not in error.evalue, error.evalue
    assert error.traceback == [f"\x1b[31m✗ まだ正解ではない：{error.evalue}\x1b[0m"]  # one line, no traceback
    path = tmp_path / CHAPTER.name
    nbformat.write(nb, path)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
                          "--nbval-current-env", path.name], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
