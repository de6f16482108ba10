"""Each chapter's own code, one module per chapter: notebooks/NN_<stem>.ipynb -> helpers/chapters/chNN_<stem>.py.

A chapter module holds that chapter's lesson code (its toy data, models and experiments), its explorers' view
functions and explorer functions, and `EXPLORERS`: the explorers its notebook shows, in notebook order; and,
if an explorer's grid is too big for its static explorer to precompute whole, `SUBGRIDS`: {explorer function:
{control name: the values the static explorer keeps}} (helpers/static_explorer.py; controls not named keep all).
What every chapter shares stays at the top of helpers/: the core (masks, attention, checks), the display
(plots, cjk_font, explorer) and the runtime (versions, training), and toy, the running example of chapters 1-7.
A chapter without code of its own (chapter 0) has no module. Adding a chapter: `python -m tools.new_chapter NN stem
"Title"` writes its notebooks, its module here and its test module, and registers it in every list (README.md,
"Adding a chapter", says what is then left by hand).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType

from helpers.explorer import Explorer


def chapters() -> dict[str, str]:
    """Chapter number ("01", ...) -> its module's name (e.g. "ch01_the_pad_question"), for every chapter module."""
    names = (info.name for info in pkgutil.iter_modules(__path__))
    return {name[2:4]: name for name in sorted(names) if name[:2] == "ch" and name[2:4].isdigit()}


def module(chapter: str) -> ModuleType | None:
    """The module of a chapter, given its number ("04") or its notebook's stem ("04_key_padding_mask"); None for a
    chapter without a module of its own."""
    if not isinstance(chapter, str) or not chapter[:2].isdigit():
        raise ValueError(f"chapter must be a chapter number like '04' or a notebook stem like "
                         f"'04_key_padding_mask', got {chapter!r}")
    name = chapters().get(chapter[:2])
    if name is None or (len(chapter) > 2 and name[2:] != chapter):
        return None
    return importlib.import_module(f"{__name__}.{name}")


def explorers(chapter: str) -> tuple[Callable[[], Explorer], ...]:
    """The explorers the chapter's notebook shows, in notebook order (its module's EXPLORERS); () if it has none."""
    found = module(chapter)
    return () if found is None else tuple(found.EXPLORERS)


def subgrids(chapter: str) -> dict[Callable[[], Explorer], Mapping[str, Sequence]]:
    """The chapter's explorers whose static explorers keep fewer values, each with what it keeps (its module's
    SUBGRIDS; {} if it has none). ValueError if SUBGRIDS names a function that is not one of its EXPLORERS."""
    found = module(chapter)
    kept = dict(getattr(found, "SUBGRIDS", {}))
    strangers = [getattr(make, "__name__", repr(make)) for make in kept if make not in found.EXPLORERS]
    if strangers:
        raise ValueError(f"{found.__name__}.SUBGRIDS names what is not one of its EXPLORERS: {strangers}")
    return kept
