# histtrim: developer tasks. Everything runs from the project venv (.venv).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
# The venv's tools by absolute path (PATH, the recipes), always quoted in a recipe: a clone
# may live under a folder whose name holds a space. Targets use the relative VENV_PYTHON,
# since make splits a target's name at spaces.
BIN := $(CURDIR)/$(VENV)/bin
VENV_PYTHON := $(VENV)/bin/python
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

# Extra arguments for `make lab`, e.g. LAB_ARGS="--port 8899 --ip 0.0.0.0".
LAB_ARGS ?=
# Jupyter refuses to run as root without --allow-root (containers, CI): add it only for root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: install test lint typecheck pytest spec lite site-test notebooks lab bench clean distclean vectors regenerate

$(VENV_PYTHON):
	$(PYTHON) -m venv $(VENV)

# Re-install when pyproject.toml or the pinned toolchain changes (or when the package first
# appears). constraints.txt pins every tool the notebooks, tests and site use, so committed
# outputs (pydantic's error texts, nbval, the site) stay byte-stable.
$(INSTALLED): pyproject.toml livingspec/pyproject.toml constraints.txt $(wildcard histtrim/__init__.py) | $(VENV_PYTHON)
	@echo "installing histtrim and its pinned toolchain (constraints.txt) into $(VENV) ..."
	@"$(BIN)/python" -m pip install -qq -U pip
	@"$(BIN)/python" -m pip install -qq -c constraints.txt -e ".[dev,notebooks,docs,review,tokenizers,langchain,pydantic-ai,openai-agents,lite]"
	@"$(BIN)/python" -m pip install -qq -c constraints.txt --no-deps -e ./livingspec
	@touch $@

install: $(INSTALLED)

lint: $(INSTALLED)
	"$(BIN)/ruff" check histtrim livingspec tests bench tools docs conformance conftest.py

typecheck: $(INSTALLED)
	"$(BIN)/mypy" histtrim livingspec conformance/example/shim.py

# Unit/property tests and strict nbval of every notebook, in one run.
# --dist loadscope keeps each notebook in a single kernel. The outcome (counts, commit) goes
# to build/test-status.json for the site's landing page, whether the run passed or not.
pytest: $(INSTALLED)
	@mkdir -p build
	rc=0; "$(BIN)/pytest" -n 2 --dist loadscope --hypothesis-profile=ci $(PYTEST_NBVAL) \
		--junitxml=build/pytest-junit.xml --ignore=tests/site tests notebooks || rc=$$?; \
	"$(BIN)/python" tools/test_status.py build/pytest-junit.xml $$rc; exit $$rc

# The site built with warnings as errors, then checked: anchors, links, and a real browser.
site-test: spec
	"$(BIN)/pytest" -q tests/site

test: lint typecheck pytest site-test

# Re-export the committed conformance vectors from the notebooks, the test strategies and the
# hostile rows, with histtrim's answers (tests/test_conformance.py checks they are fresh).
vectors: $(INSTALLED)
	"$(BIN)/python" -m livingspec.vectors export conformance/vectors

# The living spec site (Sphinx + MyST-NB + sphinx-book-theme) from the committed notebook
# outputs, nothing executed: quiet, one line per chapter, warnings are errors -> build/spec/.
# Then the in-browser spec into build/spec/lite/ (`make lite`), which the site links to.
spec: $(INSTALLED)
	@"$(BIN)/python" tools/build_site.py
	@"$(BIN)/python" tools/build_lite.py

# The in-browser spec alone (JupyterLite + Pyodide, offline: npm and PyPI, pinned) ->
# build/spec/lite/; lite/chapters.json says which chapters run there and why not the others.
lite: $(INSTALLED)
	@"$(BIN)/python" tools/build_lite.py

# Regenerate committed outputs in place (idempotent: `git diff --exit-code notebooks/` afterwards).
notebooks: $(INSTALLED)
	"$(BIN)/jupyter" nbconvert --to notebook --execute --inplace $(NB)
	# A kernel may split one print into two stream outputs under load: merge them.
	"$(BIN)/jupyter" nbconvert --to notebook --coalesce-streams --inplace $(NB)
	# Outputs and counts stay; language_info (version included) stays too, exactly as
	# JupyterLab writes it, so opening a notebook in Lab does not mark it modified.
	"$(BIN)/nbstripout" --keep-output --keep-count $(NB)

# `make nb/01_turns` == `make notebooks NB=notebooks/01_turns.ipynb`
nb/%: $(INSTALLED)
	$(MAKE) notebooks NB=notebooks/$*.ipynb

# Everything generated and committed, in dependency order: the notebooks, the vectors their
# calls make, then chapter 12, which reads the vectors. Run it after any library change.
regenerate: notebooks vectors
	$(MAKE) nb/12_conformance

# Headless: prints the URL (with its token) to open; works as root; LAB_ARGS for more.
lab: $(INSTALLED)
	"$(BIN)/jupyter" lab --no-browser $(ROOT_FLAG) $(LAB_ARGS) notebooks/

$(BENCH_INSTALLED): pyproject.toml $(INSTALLED)
	"$(BIN)/python" -m pip install -e ".[bench]"
	touch $@

# Both benchmarks (see bench/README.md): a few minutes, then about 10 for compare.py.
bench: $(INSTALLED) $(BENCH_INSTALLED)
	"$(BIN)/python" bench/trim_scaling.py
	"$(BIN)/python" bench/compare.py

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -type d \( -name __pycache__ -o -name .ipynb_checkpoints -o -name '*.egg-info' \) -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV)
