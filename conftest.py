"""pytest's set-up for the whole repository: the tests in tests/ and the chapters under nbval.

`make test` runs on one worker per CPU core, at most 8 (pytest-xdist, `-n N --dist loadscope`: tools/dev.py's
default_jobs and xdist). The scheduler below says what must stay together, so that each of these units goes to one
worker whole:
- a notebook: nbval runs its cells in order in one kernel;
- the browser tests that use JupyterLab (LAB_MODULES): they share one JupyterLab server, one Chromium and one
  warm kernel;
- any other test module, in tests/browser/ too: its module-scoped fixtures (a trained model, a built venv, a
  built site) are made once; a browser module without JupyterLab starts its worker's own Chromium;
- except the long tests of ALONE, each a unit of its own (they share no module fixture), so that two of them can
  run at once on two workers (the two editions' deck walks, the whole series' static explorers, the new chapter).
Units start in the order below (`--no-loadscope-reorder` keeps it), longest first, so that the short ones fill
the end evenly: the JupyterLab browser tests, then the other browser modules, the ALONE tests and the modules with
a `slow` test, then the chapters from the last (the longest) to the first, both editions of each, then the other
test modules in their usual order. (The controller splits units from node ids alone: it collects nothing, so a
marker cannot choose a unit; it can choose an order, since each worker sorts its own collection the same way.)
(xdist's own `--dist loadgroup` would read `xdist_group` marks, but it renames node ids in a way pytest 9.2
ignores, so the marks have no effect there.) Without `-n`, none of this is used.
"""

from __future__ import annotations

import os
from pathlib import PurePath

import pytest

# One thread per worker: N workers on N cores, each with PyTorch's default of one thread per core, would
# oversubscribe the CPU, and OpenMP threads that wait by spinning make that several times slower. Set before
# anything imports torch; the kernels nbval and the browser tests start inherit it. (Chapters 6-9 set one thread
# themselves; every stored output is the same with one thread or two.)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

BROWSER = "tests/browser/"
LAB_MODULES = ("test_notebooks.py", "test_japanese_chapter.py", "test_lab_settings.py")  # they use the `lab` fixture
ALONE = (   # node id prefixes: each test a unit (20-45 s each, measured by benchmarks/bench_suite.py)
    "tests/browser/test_deck_fit.py::",
    "tests/test_static_explorer.py::test_the_whole_series_exports_within_budget",
    "tests/test_new_chapter.py::test_a_new_chapter_passes_the_layout_tests",
)


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to: 'browser' for the browser tests that use JupyterLab, the test itself for the
    tests of ALONE, else its file (a notebook, a test module)."""
    if nodeid.startswith(ALONE):
        return nodeid
    path = nodeid.split("::", 1)[0]
    return "browser" if path.startswith(BROWSER) and path[len(BROWSER):] in LAB_MODULES else path


def _rank(nodeid: str, slow_units: set[str]) -> tuple[int, str]:
    unit = unit_of(nodeid)
    if unit == "browser":
        return (0, "")
    if unit.startswith(BROWSER):
        return (1, unit)
    if unit.startswith(ALONE) or unit in slow_units:
        return (2, "")
    if unit.endswith(".ipynb"):  # the chapters in reverse order, each chapter's two editions together
        return (3, "".join(chr(0x10FFFF - ord(c)) for c in unit.rsplit("/", 1)[-1] + unit))
    return (4, "")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--chapter", metavar="NN", help="only the tests of chapter NN (`make check CH=NN`): both "
                     "editions' notebooks, its test module, and every test with the chapter as a parameter")


def about_chapter(item: pytest.Item, chapter: str) -> bool:
    """Whether a test is one of chapter `chapter`'s: its file is the chapter's notebook (either edition) or test
    module, or one of its parameters is the chapter (a path named NN_..., or the number NN itself)."""
    path = PurePath(item.nodeid.split("::", 1)[0])
    if path.suffix == ".ipynb" or path.parent.name == "chapters":
        return path.name.startswith((f"{chapter}_", f"test_ch{chapter}_"))
    params = item.callspec.params.values() if hasattr(item, "callspec") else ()
    return any(value == chapter or (isinstance(value, PurePath) and value.name.startswith(f"{chapter}_"))
               for value in params)


def only_chapter(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tools import series

    try:
        chapter = series.chapter_number(config.getoption("chapter"), "--chapter")
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    kept, dropped = [], []
    for item in items:
        (kept if about_chapter(item, chapter) else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest units first (a stable sort: each unit stays in one piece, in its own order); with --chapter NN,
    only that chapter's tests."""
    if config.getoption("chapter") is not None:
        only_chapter(config, items)
    slow_units = {unit_of(item.nodeid) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _rank(item.nodeid, slow_units))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return Units(config, log)
