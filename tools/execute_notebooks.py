"""Execute notebooks in place, each in a fresh kernel, in the order given (make execute NB=...)."""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

for name in sys.argv[1:]:
    path = Path(name)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    nbformat.write(nb, path)
    print(f"executed {path}")
