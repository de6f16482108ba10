"""tools/dev.py's work copies: learners' runs never touch notebooks/, and a pull still reaches unchanged copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import dev

ROOT = dev.ROOT


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "notebooks").mkdir()
    for name in ("00_start_here.ipynb", "01_a.ipynb"):
        (tmp_path / "notebooks" / name).write_text(f"{name} v1")
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "WORK", tmp_path / "my-notebooks")
    return tmp_path


def test_work_copies(repo: Path, capsys: pytest.CaptureFixture):
    start = dev.work_copies()
    assert start == repo / "my-notebooks" / "00_start_here.ipynb"
    assert start.read_text() == "00_start_here.ipynb v1"
    ours = repo / "my-notebooks" / "01_a.ipynb"
    ours.write_text("01 with my outputs")                    # the learner runs chapter 1
    for name in ("00_start_here.ipynb", "01_a.ipynb"):        # git pull brings new versions
        (repo / "notebooks" / name).write_text(f"{name} v2")
    dev.work_copies()
    assert start.read_text() == "00_start_here.ipynb v2", "an unchanged copy follows its chapter"
    assert ours.read_text() == "01 with my outputs", "a learner's copy is never overwritten"
    assert "01_a.ipynb changed; your copy" in capsys.readouterr().out
    assert (repo / "notebooks" / "01_a.ipynb").read_text() == "01_a.ipynb v2"
    ours.unlink()                                            # delete it to get the new chapter
    dev.work_copies()
    assert ours.read_text() == "01_a.ipynb v2"


def test_gitignored():
    assert "my-notebooks/" in (ROOT / ".gitignore").read_text().splitlines()
