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


def test_setup_reinstalls_torch_when_a_torch_index_is_asked_for_later(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch):
    """`make lab TORCH_INDEX=cpu` after a plain first install: the stamp records the index, so torch is reinstalled."""
    python = tmp_path / "python"
    python.write_text("")
    stamp = tmp_path / ".installed"
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\n")
    (tmp_path / "pyproject.toml").write_text("")
    stamp.write_text("torch-index=\n")
    calls = []
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "STAMP", stamp)
    monkeypatch.setattr(dev, "venv_python", lambda: python)
    monkeypatch.setattr(dev, "run", lambda *command, **kwargs: calls.append([str(c) for c in command]))
    dev.setup("")                                   # nothing asked for: the fresh stamp stands
    assert calls == []
    dev.setup("cpu")                                # asked for now, not before: reinstall torch from the CPU index
    assert any("--force-reinstall" in call and dev.TORCH_CPU_INDEX in call for call in calls)
    assert stamp.read_text() == "torch-index=cpu\n"
    calls.clear()
    dev.setup("cpu")                                # recorded: nothing to do
    assert calls == []
