# Entry point: `make lab` to learn, `make test` to check everything. Without make: python tools/dev.py lab|test.
# Python 3.11: the chapters' outputs were measured on it (the pins also install on 3.12 and 3.13, untested).
# PYTHON=/path/to/python3.11 picks one; otherwise the first of python3.11, python3, python that is 3.11.
PY_VERSION := 3.11
PYTHON ?= $(shell for p in python$(PY_VERSION) python3 python; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit("%d.%d" % sys.version_info[:2] != "$(PY_VERSION)")' \
	2>/dev/null && { command -v $$p; break; }; done)
# TORCH_INDEX=cpu (Linux): install torch (its pin in requirements.txt) from PyTorch's CPU-only wheel index, about
# 200 MB instead of the several GB of the CUDA build that Linux gets from the default index. Off by default (CI
# cannot reach that index).
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

define NO_PYTHON
No Python $(PY_VERSION) found (tried python$(PY_VERSION), python3, python). The chapters' outputs were measured on it.
  Debian/Ubuntu:  sudo apt install python3.11 python3.11-venv   (Ubuntu: from the deadsnakes PPA)
  macOS:          brew install python@3.11, or the installer from python.org
  anywhere:       pyenv install 3.11 && pyenv local 3.11
  Windows:        the python.org installer, then  py -3.11 tools\dev.py lab
Or name one: make lab PYTHON=/path/to/python3.11  (3.12 and 3.13 install the same pins, untested).
endef
export NO_PYTHON

.PHONY: lab test lint unit check portable execute slides explorers site pdf clean versions

# TORCH_INDEX given now but not at the last install (the stamp records it): set up again, torch from that index.
ifneq ($(TORCH_INDEX),)
ifneq ($(shell cat $(STAMP) 2>/dev/null),torch-index=$(TORCH_INDEX))
.PHONY: $(STAMP)
endif
endif

# The set-up itself is tools/dev.py's (the same for people without make): .venv, the pins, helpers/ editable.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || test -n "$(PYTHON)" || { echo "$$NO_PYTHON" >&2; exit 1; }
	$(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) tools/dev.py setup --torch-index "$(TORCH_INDEX)"

# JupyterLab on 127.0.0.1 with a random token, rooted at the repository; it prints one URL, which opens
# my-notebooks/00_start_here.ipynb: your git-ignored copies of the chapters (no browser is started; see tools/dev.py,
# also for the JupyterLab configuration it shares with Binder and the browser tests).
# make lab EDITION=ja opens the Japanese edition (notebooks/ja/) instead. (Not LANG=ja: LANG is the locale.)
EDITION ?= en
lab: $(STAMP)
	$(BIN)/python tools/dev.py lab --no-setup --edition $(EDITION)

lint: $(STAMP)
	$(BIN)/python tools/dev.py lint --no-setup

# ruff, then one pytest call: unit tests, browser tests and every notebook of both editions through nbval, on
# JOBS workers (pytest-xdist; conftest.py says what stays together; default: one per CPU core, at most 8). The
# command itself is in tools/dev.py (test_command), which runs the same for people without make. The Japanese
# edition's code is the English code (tests/test_japanese_edition.py); its outputs are its own (Japanese hints).
JOBS ?=
test: $(STAMP)
	$(BIN)/python tools/dev.py test --no-setup $(if $(JOBS),--jobs $(JOBS))

# Unit tests only: no browser, no notebooks, nothing `slow` (the packaging venv, every chapter's deck).
unit: $(STAMP)
	$(BIN)/python tools/dev.py unit --no-setup $(if $(JOBS),--jobs $(JOBS))

# One chapter's loop, for someone changing it: make check CH=13 runs both editions of notebooks/13_*.ipynb through
# nbval, tests/chapters/test_ch13_*.py, and every test that takes chapter 13 as a parameter (its JupyterLab browser
# row, its deck export, its static explorer's sub-grid, its layout tests; conftest.py's --chapter).
CH ?=
check: $(STAMP)
	$(BIN)/python tools/dev.py check --no-setup --chapter "$(CH)" $(if $(JOBS),--jobs $(JOBS))

# Every chapter through nbval under each of PyTorch's x86 CPU kernels (default, AVX2, AVX-512) and MKL's AVX2 code:
# stored outputs must not depend on which one a machine picks (tools/portable.py).
portable: $(STAMP)
	$(BIN)/python -m tools.portable $(if $(JOBS),--jobs $(JOBS))

# Every chapter of both editions through nbval under each torch release of tools/versions.py's MATRIX, each in its
# own cached venv under build/versions/ (a multi-GB CUDA download per release the first time; not part of make test);
# writes docs/versions.md.
versions: $(STAMP)
	$(BIN)/python -m tools.versions $(if $(JOBS),--jobs $(JOBS))

# Re-run every English chapter in order from a fresh kernel and store its outputs (do this before committing one);
# NB="notebooks/04_key_padding_mask.ipynb notebooks/ja/04_key_padding_mask.ipynb" re-runs only those.
execute: $(STAMP)
	$(BIN)/python -m tools.execute_notebooks $(NB)

# A reveal.js deck per chapter in build/slides/, its static explorer in build/slides/explorers/, opening from disk
# with no network (see tools/slides.py; the explorers take ~30 s to precompute).
# make slides EDITION=ja: the Japanese decks (notebooks/ja/) in build/slides/ja/.
slides: $(STAMP)
	$(BIN)/python -m tools.slides --edition $(EDITION) --out build/slides$(if $(filter ja,$(EDITION)),/ja)

# Each chapter's explorers as one HTML file in build/explorers/, their views precomputed: they move in a browser with
# no kernel and no network (helpers/static_explorer.py; a sub-grid where a chapter has too many settings).
explorers: $(STAMP)
	$(BIN)/python -m tools.static_explorers --edition $(EDITION)

# The series as a static site in build/site/ (both editions: en/, ja/; open index.html), from the committed notebooks
# without running them and with no network: Sphinx + myst-nb + Furo (tools/site.py).
site: $(STAMP)
	$(BIN)/python -m tools.site --out build/site

# The book as one PDF per edition, build/pdf/attention-masks-en.pdf and attention-masks-ja.pdf: the site above
# (built first, as make site builds it) printed by Chromium, A4, with its figures and each static explorer's first
# view, no network (tools/pdf.py).
pdf: $(STAMP)
	$(BIN)/python -m tools.pdf --site build/site --out build/pdf

clean:
	rm -rf build .pytest_cache .hypothesis
