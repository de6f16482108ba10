"""helpers.chapters: one module per chapter, found by the notebook's number or stem, each listing its explorers."""

import importlib

import pytest

from helpers import chapters
from helpers.chapters import ch04_key_padding_mask as ch04
from helpers.chapters import ch05_attn_mask_and_causality as ch05
from tools import series

NOTEBOOKS = series.chapters("en")


def test_every_chapter_module_has_a_notebook_a_test_module_and_explorers():
    modules = chapters.chapters()
    assert modules, "no chapter module found"
    stems = {series.number(path): path.stem for path in NOTEBOOKS}
    for number, name in modules.items():
        assert name == f"ch{stems[number]}", f"{name} does not match its notebook {stems.get(number)}"
        assert series.tests_module(stems[number]).exists(), f"{name} has no test module"
        module = importlib.import_module(f"helpers.chapters.{name}")
        assert module.__doc__ and module.__doc__.splitlines()[0].strip(), f"{name}: no one-line summary"
        assert isinstance(module.EXPLORERS, tuple) and all(callable(make) for make in module.EXPLORERS)


def test_explorers_by_number_or_stem():
    assert chapters.explorers("04") == (ch04.kpm_explorer,)
    assert chapters.explorers("04_key_padding_mask") == (ch04.kpm_explorer,)
    assert chapters.module("05_attn_mask_and_causality") is ch05
    assert chapters.explorers("00") == () and chapters.module("00_start_here") is None   # no code of its own
    assert chapters.explorers("04_some_other_chapter") == ()
    with pytest.raises(ValueError, match="chapter must be a chapter number"):
        chapters.explorers("four")


def test_subgrids_sit_beside_the_chapters_explorers(monkeypatch):
    from helpers.chapters import ch13_windows_prefixes_and_chunks as ch13
    assert chapters.subgrids("13") == {ch13.mask_explorer: ch13.SUBGRIDS[ch13.mask_explorer]}
    assert chapters.subgrids("04") == {} and chapters.subgrids("00") == {}   # none kept; no module
    stray = type(ch04)("helpers.chapters.ch14_stray")
    stray.EXPLORERS, stray.SUBGRIDS = (ch04.kpm_explorer,), {ch05.causal_explorer: {"n": (1,)}}
    monkeypatch.setattr(chapters, "module", lambda chapter: stray)
    with pytest.raises(ValueError, match=r"ch14_stray.SUBGRIDS names what is not one of its EXPLORERS: "
                                         r"\['causal_explorer'\]"):
        chapters.subgrids("14")


@pytest.mark.parametrize("make", [*chapters.explorers("04"), *chapters.explorers("05")])
def test_first_control_one_step_gives_a_new_valid_picture(make):
    """What the generic browser check does: move the first control one step (next option / +1)."""
    box = make()
    first = next(iter(box.controls.values()))
    before = box.summary.value
    if hasattr(first, "options"):
        values = [o[1] if isinstance(o, tuple) else o for o in first.options]
        first.value = values[(values.index(first.value) + 1) % len(values)]
    else:
        first.value = first.value + 1
    after = box.summary.value
    assert after != before and not after.startswith("<b>Not possible")
