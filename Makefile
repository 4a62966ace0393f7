# make demo | make test | make lint | make fmt | make bench | make schema | make clean
#
# Everything runs from .venv, which `make .venv` (and every target that needs
# it) builds with a Python >= 3.12 found by scripts/find_python.sh; set
# VENV_PYTHON=/path/to/python to choose one. The venv is reinstalled whenever
# pyproject.toml or constraints.txt changes.
#
# PostgreSQL: scripts/with_database.py picks DATABASE_URL if set, else a
# server on 127.0.0.1:5432, else a throwaway embedded one (see README.md).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
RUFF := $(VENV)/bin/ruff
STAMP := $(VENV)/.installed
WITH_DB := $(PY) scripts/with_database.py --

PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: help test soak demo bench lint fmt schema clean browser

help:
	@echo "make demo    migrate, enqueue sample jobs, run workers and serve the admin"
	@echo "make test    run the test suite (PYTEST_ARGS='-k name' to narrow it)"
	@echo "make lint    ruff check and ruff format --check"
	@echo "make fmt     ruff check --fix and ruff format"
	@echo "make soak    the chaos test at length (SOAK_ROUNDS=200 chaos actions)"
	@echo "make bench   run the benchmarks (BENCH_ARGS=... passed on)"
	@echo "make schema  rewrite docs/schema.sql from the migrations (review the diff)"
	@echo "make browser install Debian's chromium for the admin's browser tests (as root)"
	@echo "make .venv   (re)build the virtualenv; make clean removes it"

# The directory is the target people type; the stamp records a finished
# install, so an interrupted one is redone.
$(VENV): $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@if ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
	    python="$$(scripts/find_python.sh)"; \
	    echo "creating $(VENV) with $$python"; \
	    rm -rf $(VENV); \
	    "$$python" -m venv $(VENV); \
	fi
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -c constraints.txt -e '.[test,embedded]'
	@touch $@

test: $(VENV)
	$(WITH_DB) $(PY) -m pytest $(PYTEST_ARGS)

# make test runs the chaos test with 6 actions; this runs it with many more.
SOAK_ROUNDS ?= 200
soak: $(VENV)
	WORKHORSE_SOAK_ROUNDS=$(SOAK_ROUNDS) $(WITH_DB) $(PY) -m pytest -m soak -rA $(PYTEST_ARGS)

demo: $(VENV)
	$(WITH_DB) $(PY) testproject/manage.py demo

bench: $(VENV)
	$(WITH_DB) $(PY) -m bench $(BENCH_ARGS)

schema: $(VENV)
	WORKHORSE_WRITE_SCHEMA=1 $(WITH_DB) $(PY) -m pytest -q tests/migration/test_schema_snapshot.py

lint: $(VENV)
	$(RUFF) check .
	$(RUFF) format --check .

# Fix first, then format what the fixes changed; still fail on what is left.
fmt: $(VENV)
	status=0; $(RUFF) check --fix . || status=$$?; $(RUFF) format .; exit $$status

# tests/browser drive Debian's chromium through Playwright; Playwright's own
# browser download is not used (and cannot reach its servers here).
browser:
	@if command -v chromium >/dev/null; then echo "chromium: $$(command -v chromium)"; \
	else apt-get update && apt-get install -y --no-install-recommends chromium; fi

clean:
	rm -rf $(VENV)
