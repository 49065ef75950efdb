# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench samples screenshots train-judge clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Quiet: no setuptools notices (every data folder is a declared package; PYTHONWARNINGS hides the editable-install
# notice of the build backend).
$(STAMP): $(BIN)/python pyproject.toml
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $(STAMP)

# The dashboard on the sample runs; it opens a browser where there is a desktop, and prints its address.
run: $(STAMP)
	$(BIN)/python -m reporting dashboard $(CURDIR)/sample_runs

lint: $(STAMP)
	$(BIN)/ruff check reporting tests bench scripts app.py
	$(BIN)/ruff format --check reporting tests bench scripts app.py
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/bench_core.py

# docs/screenshots/: every dashboard page and every printed page type (needs Chromium and poppler-utils).
screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py

# The learned judge (reporting/scoring/models/learned_judge.bin) from the labelled data in ../shared/data; the same
# data gives the same bytes.
train-judge: $(STAMP)
	$(BIN)/python scripts/train_judge.py

samples: $(STAMP)
	$(BIN)/python scripts/make_sample_runs.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
