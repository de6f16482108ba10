# Entry point: `make lab` to learn, `make test` to check everything.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

.PHONY: lab test lint unit execute slides clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet -e ".[notebooks]"
	touch $@

# JupyterLab on 127.0.0.1 with a random token (printed in the URL), no browser needed.
lab: $(STAMP)
	$(BIN)/jupyter lab --no-browser --ServerApp.ip=127.0.0.1 $(ROOT_FLAG) \
		--ServerApp.root_dir=notebooks --LabApp.default_url=/lab/tree/00_start_here.ipynb

lint: $(STAMP)
	$(BIN)/ruff check helpers tests notebooks benchmarks tools

# One pytest call: unit tests, browser tests and every notebook through nbval.
test: lint
	$(BIN)/python -m pytest tests notebooks --nbval --nbval-current-env \
		--nbval-sanitize-with tests/sanitize.cfg -q

# Unit tests only (no browser, no notebooks).
unit: $(STAMP)
	$(BIN)/python -m pytest tests -q -m "not browser"

# Re-run every chapter in order from a fresh kernel and store its outputs (do this before committing one).
execute: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py $(or $(NB),$(NOTEBOOKS))

# A reveal.js deck per chapter in build/slides/ (cells tagged by rules at export time, see tools/slides.py).
slides: $(STAMP)
	$(BIN)/python tools/slides.py --out build/slides

clean:
	rm -rf build .pytest_cache .hypothesis
