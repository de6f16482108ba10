"""pytest's set-up for the whole repository: the tests in tests/ and the chapters under nbval.

`make test` runs on one worker per CPU core, at most 8 (pytest-xdist, `-n N --dist loadscope`: tools/dev.py's
default_jobs and xdist). The scheduler below says what must stay together, so that each of these units goes to one
worker whole:
- a notebook: nbval runs its cells in order in one kernel;
- the browser tests that use JupyterLab (LAB_MODULES): they share one JupyterLab server, one Chromium and one
  warm kernel;
- any other test module, in tests/browser/ too: its module-scoped fixtures (a trained model, a built venv, a
  built site) are made once; a browser module without JupyterLab starts its worker's own Chromium.
Units start in the order below (`--no-loadscope-reorder` keeps it), longest first, so that the short ones fill
the end evenly: the JupyterLab browser tests, then the other browser modules, then the chapters from the last (the
longest) to the first, both editions of each, then the test modules in their usual order.
(xdist's own `--dist loadgroup` would read `xdist_group` marks, but it renames node ids in a way pytest 9.2
ignores, so the marks have no effect there.) Without `-n`, none of this is used.
"""

from __future__ import annotations

import os

import pytest

# One thread per worker: N workers on N cores, each with PyTorch's default of one thread per core, would
# oversubscribe the CPU, and OpenMP threads that wait by spinning make that several times slower. Set before
# anything imports torch; the kernels nbval and the browser tests start inherit it. (Chapters 6-9 set one thread
# themselves; every stored output is the same with one thread or two.)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

BROWSER = "tests/browser/"
LAB_MODULES = ("test_notebooks.py", "test_japanese_chapter.py", "test_lab_settings.py")  # they use the `lab` fixture


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to: 'browser' for the browser tests that use JupyterLab, else its file (a notebook,
    a test module)."""
    path = nodeid.split("::", 1)[0]
    return "browser" if path.startswith(BROWSER) and path[len(BROWSER):] in LAB_MODULES else path


def _rank(nodeid: str) -> tuple[int, str]:
    unit = unit_of(nodeid)
    if unit == "browser":
        return (0, "")
    if unit.startswith(BROWSER):
        return (0, unit)
    if unit.endswith(".ipynb"):  # the chapters in reverse order, each chapter's two editions together
        return (1, "".join(chr(0x10FFFF - ord(c)) for c in unit.rsplit("/", 1)[-1] + unit))
    return (2, "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest units first (a stable sort: each unit stays in one piece, in its own order)."""
    items.sort(key=lambda item: _rank(item.nodeid))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return Units(config, log)
