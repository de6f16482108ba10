"""The maintainers' scripts: run each from the repository root as `python -m tools.<name>`.

dev (also `python tools/dev.py`: make's targets without make, and the one place that spells out the set-up and
test commands), links (launch links, badge and Colab set-up cells), ja_sync (the Japanese edition), slides
(offline decks), portable (nbval under each CPU kernel), execute_notebooks, first_picture.
"""
