"""tools/new_chapter.py: a throwaway chapter 14 made by the command, in a copy of the repository, passes the layout
tests there and runs from a fresh kernel in both editions; bad input is refused by name, with exit code 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import new_chapter, series

ROOT = series.ROOT
NEXT = f"{len(series.chapters('en')):02d}"
# Left out in the copy: the tests of chapters 2 and 6's whole static explorers (the `exported` fixture), which the
# new chapter cannot change (they run in the suite itself).
NOT_ABOUT_NEW = ("not test_every_setting_in_the_file_is_what_the_live_explorer_shows"
                 " and not test_the_file_is_within_budget")
LAYOUT_TESTS = ["tests/test_series.py", "tests/test_chapters.py", "tests/test_links.py", "tests/test_teaching.py",
                "tests/test_bench_reading.py",
                "tests/test_japanese_edition.py", "tests/test_portable_outputs.py", "tests/test_static_explorer.py"]


def copy_of_the_repository(to: Path) -> Path:
    """The files git tracks (and new ones it does not ignore), copied to `to`."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    return to


@pytest.mark.slow
def test_a_new_chapter_passes_the_layout_tests(tmp_path: Path):
    repo = copy_of_the_repository(tmp_path / "repo")
    env = dict(os.environ, PYTHONPATH=str(repo))
    env.pop("PYTEST_XDIST_WORKER", None)
    made = subprocess.run([sys.executable, "-m", "tools.new_chapter", NEXT, "throwaway", "A throwaway chapter"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr     # it also ran both new notebooks
    name = f"{NEXT}_throwaway"
    for edition in series.EDITIONS:
        assert series.chapters(edition, repo)[-1].stem == name
    assert series.helpers_module(name, repo).is_file() and series.tests_module(name, repo).is_file()
    new_tests = series.tests_module(name, repo).relative_to(repo).as_posix()
    checked = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                              "-m", "not slow and not browser", *LAYOUT_TESTS, new_tests, "-k", NOT_ABOUT_NEW],
                             cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout[-6000:] + checked.stderr[-2000:]


@pytest.mark.parametrize(("argv", "message"), [
    (["13", "again", "Again"], "chapter 13 exists already"),
    (["00", "again", "Again"], "chapter 00 exists already"),
    (["99", "later", "Later"], f"NN must be the next chapter's number, {NEXT}"),
    (["4", "later", "Later"], "NN must be two digits"),
    ([NEXT, "Bad-Stem", "Title"], "stem must be lower-case words"),
    ([NEXT, "trailing_", "Title"], "stem must be lower-case words"),
    ([NEXT, "1st", "Title"], "stem must be lower-case words"),
    ([NEXT, "fine", "  "], "Title must be one non-empty line"),
    ([NEXT, "fine", "two\nlines"], "Title must be one non-empty line"),
    ([NEXT, "fine", "Fine", "--ja-title", " "], "--ja-title must be one non-empty line"),
])
def test_bad_input_is_refused_by_name(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        new_chapter.main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_links_title_is_lower_case_unless_its_first_word_is_a_name():
    assert new_chapter.lower_first("Masks in training") == "masks in training"
    assert new_chapter.lower_first("A throwaway chapter") == "a throwaway chapter"
    assert new_chapter.lower_first("FlexAttention masks") == "FlexAttention masks"
    assert new_chapter.lower_first("KV caches") == "KV caches"
