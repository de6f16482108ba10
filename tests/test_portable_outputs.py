"""Stored outputs hold only what is the same on every CPU: no float rounding residue in printed text.

nbval compares every cell's printed output with the stored one. A rounding residue (4.9e-09 on one machine,
4.3e-09 on a CPU whose vector kernels add in another order) fails it elsewhere, so it belongs in an assert
with its bound, and the output prints the verdict (`max |Δ| < 1e-6: True`). This guard scans the stored
outputs of both editions for the usual form of a residue: a number in scientific notation, not zero, smaller
than 1e-5 in size. Such a number passes only when the words just before it say what it is (ALLOWED): a bound
the value is compared with, an input or a tolerance the code was given, or a dtype constant. It is a cheap
guard, not the proof: that is `make portable`, the series under nbval with each of PyTorch's x86 CPU kernels
(README, "How the tests work").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest

from tools import series

ROOT = series.ROOT
NOTEBOOKS = series.every_chapter()
SMALL = 1e-5
SCIENTIFIC = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)[eE]-\d+(?![\w.])")
# What may stand right before a small number, by name. Keep this list short: anything else is a residue.
ALLOWED = {
    "a bound the value is compared with": re.compile(r"(?:<|<=|≤|\bbelow|\bwithin|\bagree to)\s*$"),
    "an input or a tolerance the code was given": re.compile(r"\b(?:[ar]tol|fill)\s*=?\s*$"),
    "a dtype constant": re.compile(r"\b(?:eps|tiny)\s*=\s*$"),
}


class Residue(NamedTuple):
    number: str
    context: str   # the text just before it, and the number


def output_texts(cell: nbformat.NotebookNode) -> list[str]:
    """The text nbval compares in a code cell's stored outputs: streams, text/* data, error values."""
    texts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            texts.append(output["text"])
        texts += [value for key, value in output.get("data", {}).items() if key.startswith("text/")]
        if "evalue" in output:
            texts.append(output["evalue"])
    return [text if isinstance(text, str) else "".join(text) for text in texts]


def residues(text: str) -> list[Residue]:
    """Every small, non-zero number in scientific notation in `text` that no ALLOWED context explains."""
    found = []
    for match in SCIENTIFIC.finditer(text):
        value = abs(float(match[0]))
        if value == 0 or value >= SMALL:
            continue
        before = text[max(0, match.start() - 20):match.start()]
        if not any(pattern.search(before) for pattern in ALLOWED.values()):
            found.append(Residue(match[0], (before + match[0]).splitlines()[-1].strip()))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(series.notebooks())))
def test_no_stored_output_prints_a_rounding_residue(path: Path):
    nb = nbformat.read(path, as_version=4)
    found = [f"cell {index} (id {cell.id}): {r.number} in {r.context!r}"
             for index, cell in enumerate(nb.cells) if cell.cell_type == "code"
             for text in output_texts(cell) for r in residues(text)]
    assert not found, (
        f"{path.relative_to(ROOT)} stores what looks like a float rounding residue, which differs between CPUs:\n  "
        + "\n  ".join(found) + "\nPrint a verdict against a bound instead (`max |Δ| < 1e-6: True`) and keep the "
        "value in an assert. A bound, an input, a tolerance or a dtype constant says so just before the number "
        "(ALLOWED).")


@pytest.mark.parametrize("text", [
    "each sentence alone                  True              4.9e-09\n",
    "block-1 weights differ by at most 1.2e-07, logits by 1.9e-06",
    "tensor([1.0000e+00, 3.7835e-44])",
    "max |renormalised - masked softmax|: 1e-07",
    "-2.5E-08",
])
def test_a_planted_residue_is_found(text):
    assert residues(text), text


@pytest.mark.parametrize("text", [
    "same output as MHA bool (max |diff| < 1e-6): True",
    "padding invariance: FAILED (20 trials, atol=1e-05, worst max-abs-diff 42, relative 37)",
    "float32 eps = 1.2e-07; 64 eps of it: 5e-05",
    "max |logit difference| below 1e-5: True;  masked mean: agree to 1e-5: True",
    "nested SDPA == each sequence alone, within 1e-6",
    "fill 1e-09      weights [0.086, 0.3]",
    "weights [0.1945, 0.7506, 0.0544, 0.0002, 0.0002] 0.0e+00 1.5e-03 x1e-9y",
])
def test_bounds_constants_and_large_numbers_pass(text):
    assert residues(text) == [], text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(series.notebooks())))
def test_an_output_that_varies_is_not_stored(path: Path):
    """A cell marked `# NBVAL_IGNORE_OUTPUT` (chapter 10's timings) prints what differs between runs and machines:
    tools/execute_notebooks.py stores it without outputs (no timings in a stored output)."""
    from tools.execute_notebooks import varies

    nb = nbformat.read(path, as_version=4)
    stored = [f"cell {index} (id {cell.id})" for index, cell in enumerate(nb.cells) if varies(cell) and cell.outputs]
    assert not stored, f"{path.name}: stored outputs of cells marked NBVAL_IGNORE_OUTPUT: {stored}"
