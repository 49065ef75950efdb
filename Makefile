# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench samples clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	REPORTING_RUNS_DIR=$(CURDIR)/sample_runs $(BIN)/streamlit run app.py --server.address 127.0.0.1

lint: $(STAMP)
	$(BIN)/ruff check reporting tests bench scripts app.py
	$(BIN)/ruff format --check reporting tests bench scripts app.py
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/bench_core.py

samples: $(STAMP)
	$(BIN)/python scripts/make_sample_runs.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
