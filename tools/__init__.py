"""The maintainers' scripts: run each from the repository root as `python -m tools.<name>`.

series (the layout: the editions' folders, the chapters, each chapter's twin, module, test module and deck; every
other script and test asks it), dev (also `python tools/dev.py`: make's targets without make, and the one place
that spells out the set-up and test commands), links (launch links, badge and Colab set-up cells), ja_sync (the
Japanese edition), slides (offline decks), portable (nbval under each CPU kernel), execute_notebooks, first_picture.
"""
