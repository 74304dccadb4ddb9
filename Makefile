# histtrim: developer tasks. Everything runs from the project venv (.venv).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
INSTALLED := $(VENV)/.installed
BENCH_INSTALLED := $(VENV)/.installed-bench

# The venv's jupyter/python first on PATH, so the "python3" kernel of nbconvert,
# nbval and jupyter lab is the venv's interpreter (which imports the editable histtrim).
export PATH := $(BIN):$(PATH)
# No debugger frozen-modules warning on a kernel's stderr (it would fail an nbval cell).
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export PYTHONHASHSEED := 0

# `make notebooks NB=notebooks/01_turns.ipynb` regenerates just one notebook.
NB ?= notebooks/*.ipynb

PYTEST_NBVAL := --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg

.PHONY: install test lint typecheck pytest spec notebooks lab bench clean distclean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install when pyproject.toml changes (or when the package first appears).
$(INSTALLED): pyproject.toml $(wildcard histtrim/__init__.py) | $(BIN)/python
	$(BIN)/python -m pip install -U pip
	$(BIN)/python -m pip install -e ".[dev,notebooks,review]"
	touch $@

install: $(INSTALLED)

lint: $(INSTALLED)
	$(BIN)/ruff check histtrim tests bench tools conftest.py

typecheck: $(INSTALLED)
	$(BIN)/mypy histtrim

# Unit/property tests and strict nbval of every notebook, in one run.
# --dist loadscope keeps each notebook in a single kernel.
pytest: $(INSTALLED)
	$(BIN)/pytest -n 2 --dist loadscope --hypothesis-profile=ci $(PYTEST_NBVAL) tests notebooks

test: lint typecheck pytest

# Executed notebooks as HTML plus an index of notebooks and rule IDs.
spec: $(INSTALLED)
	mkdir -p build/spec
	$(BIN)/jupyter nbconvert --to html --execute --output-dir build/spec notebooks/*.ipynb
	$(BIN)/python tools/render_index.py --notebooks notebooks --rules notebooks/spec/RULES.md --out build/spec/index.html

# Regenerate committed outputs in place (idempotent: `git diff --exit-code notebooks/` afterwards).
notebooks: $(INSTALLED)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace $(NB)
	# A kernel may split one print into two stream outputs under load: merge them.
	$(BIN)/jupyter nbconvert --to notebook --coalesce-streams --inplace $(NB)
	$(BIN)/nbstripout --keep-output --keep-count --extra-keys "metadata.language_info.version" $(NB)

# `make nb/01_turns` == `make notebooks NB=notebooks/01_turns.ipynb`
nb/%: $(INSTALLED)
	$(MAKE) notebooks NB=notebooks/$*.ipynb

lab: $(INSTALLED)
	$(BIN)/jupyter lab notebooks/

$(BENCH_INSTALLED): pyproject.toml $(INSTALLED)
	$(BIN)/python -m pip install -e ".[bench]"
	touch $@

# Both benchmarks (see bench/README.md): a few minutes, then about 10 for compare.py.
bench: $(INSTALLED) $(BENCH_INSTALLED)
	$(BIN)/python bench/trim_scaling.py
	$(BIN)/python bench/compare.py

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -type d \( -name __pycache__ -o -name .ipynb_checkpoints -o -name '*.egg-info' \) -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV)
