# Two commands for a fresh machine: `make run` and `make test`. Both install exactly what uv.lock holds (uv sync
# --locked: never a fresh resolution); `make lock` refreshes the lock, `make test-latest` tries the newest releases.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# uv itself comes from PyPI through pip, pinned with the hashes of every platform's wheel.
TOOLS  := .tools
UV     := $(TOOLS)/bin/uv
# The machine's own Python, never one that uv would download; the project's venv is .venv.
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

.PHONY: run test lint bench samples screenshots train-judge clean lock test-latest

$(UV): scripts/uv-requirements.txt
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
		-r scripts/uv-requirements.txt
	touch $(UV)

# An install that does not match the lock stops here with the way out, before anything is installed.
$(STAMP): $(UV) pyproject.toml uv.lock Makefile
	@$(UV) lock --check --quiet --python $(PYTHON) || { \
		echo "error: uv.lock does not match pyproject.toml; run \`make lock\` to refresh it, then commit uv.lock" >&2; \
		exit 2; }
	@# --compile-bytecode, as pip does: uv writes no .pyc, so each command would compile its libraries from source
	@# (pyarrow, pandas, scikit-learn: 7.5 s against 2.7 s CPU, measured), every time where PYTHONDONTWRITEBYTECODE is set
	$(UV) sync --locked --all-extras --quiet --compile-bytecode --python $(PYTHON)
	touch $(STAMP)

# Refreshes uv.lock from pyproject.toml's ranges (newest allowed releases), for Linux and macOS, Python 3.10-3.13.
lock: $(UV)
	$(UV) lock --upgrade --python $(PYTHON)

# The suite on the newest releases pyproject.toml allows, in a venv of its own (.venv-latest): a breaking release
# is seen here before it reaches the lock. Not part of CI.
test-latest: $(UV)
	$(UV) venv --quiet --python $(PYTHON) .venv-latest
	VIRTUAL_ENV=.venv-latest $(UV) pip install --quiet --upgrade --resolution highest -e ".[test,spark]"
	.venv-latest/bin/python -m pytest -q

# The dashboard on the sample runs; it opens a browser where there is a desktop, and prints its address.
run: $(STAMP)
	$(BIN)/python -m reporting dashboard $(CURDIR)/sample_runs

lint: $(STAMP)
	$(BIN)/ruff check reporting tests bench scripts app.py
	$(BIN)/ruff format --check reporting tests bench scripts app.py
	$(BIN)/mypy

test: lint
	@# the sign-in tests' OpenID Connect provider (npm, pinned by tests/oidc/package-lock.json), once
	@if [ ! -d tests/oidc/node_modules ] && command -v npm >/dev/null 2>&1; then \
		(cd tests/oidc && npm ci --no-audit --no-fund --loglevel=error); fi
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/bench_core.py

# docs/screenshots/: every dashboard page and every printed page type (needs Chromium and poppler-utils).
screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py

# The learned judge (reporting/scoring/models/learned_judge.bin) and the built-in judges' cards (judge_cards.json,
# left one source out) from the labelled data in ../shared/data; the same data gives the same bytes.
train-judge: $(STAMP)
	$(BIN)/python scripts/train_judge.py

samples: $(STAMP)
	$(BIN)/python scripts/make_sample_runs.py

clean:
	rm -rf $(VENV) $(TOOLS) .venv-latest build *.egg-info .pytest_cache
