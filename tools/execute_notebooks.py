"""Execute notebooks in place, each in a fresh kernel, in the order given (make execute NB=...); with none given,
every English chapter in order (tools/series.py; the Japanese ones are named: NB=notebooks/ja/NN_<stem>.ipynb).

A cell whose first line is `# NBVAL_IGNORE_OUTPUT` prints what differs from run to run and machine to machine
(chapter 10's timings): it runs, but is stored without its outputs, since a stored output must be the same on
every machine (tests/test_portable_outputs.py checks it). The learner sees its output when running the chapter.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools import series

VARIES = "# NBVAL_IGNORE_OUTPUT"


def varies(cell: nbformat.NotebookNode) -> bool:
    """True for a code cell whose output nbval ignores because it varies: it is stored without outputs."""
    return cell.cell_type == "code" and cell.source.lstrip().startswith(VARIES)


def main(names: list[str | Path]) -> None:
    for name in names or series.chapters("en"):
        path = Path(name)
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=120, kernel_name="python3", record_timing=False,
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute()
        for cell in nb.cells:
            if varies(cell):
                cell.outputs = []
        nbformat.write(nb, path)
        print(f"executed {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
