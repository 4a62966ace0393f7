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
# Every run ends with its slowest tests, so that the suite's time stays in view.
DURATIONS := --durations=15 --durations-min=1
# Test processes (pytest-xdist), each on its own test database. Most tests
# wait on real worker processes, so two share this 2-core machine well
# (7:44 -> 4:32 for the main line). PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
# With --dist worksteal a process that has run its share takes half of what
# another still has queued, so that a run does not end with one process
# working alone; tests/conftest.py collects the longest tests (marked
# fresh_venv or soak) first, so that none of them is what is left at the end.
XDIST := -n $(PYTEST_WORKERS) --dist worksteal
# The tests start hundreds of Python processes (workers, manage.py) that
# import this checkout's modules. Where PYTHONDONTWRITEBYTECODE is set (as in
# many containers) none of them saves the bytecode it compiles, and each
# would compile them all again (a sixth of a second of CPU each): the test
# targets compile them once first (on later runs, only what changed).
COMPILE = -m compileall -q -j 0 django_workhorse testproject
BENCH_ARGS ?=

# make test's second run: these tests again with the test database behind a
# real PgBouncer in transaction mode (tests/conftest.py, WORKHORSE_TEST_PGBOUNCER):
# the tests' own Django connection, the admin pages and every worker they
# start, whose wake-ups come through a direct LISTEN connection. One or two of
# each: claims, finishes, retries, crashes and heartbeats, checkpoints, sleeps,
# cancels, limits, schedules, retention, the admin pages. (The leak test and
# the wake-up tests of tests/acceptance/test_pgbouncer.py run in the first
# run; so does everything else, direct.) Skipped when PYTEST_ARGS narrows the run.
PGBOUNCER_TESTS ?= \
	tests/acceptance/test_retries.py::test_a_job_failing_twice_succeeds_at_attempt_3_after_backoff \
	tests/acceptance/test_retries.py::test_an_attempt_outliving_its_timeout_ends_timed_out \
	tests/acceptance/test_crashes.py::test_jobs_of_a_sigkilled_worker_are_recovered_without_using_an_attempt \
	tests/acceptance/test_crashes.py::test_a_frozen_worker_past_its_lease_has_its_late_finish_refused \
	tests/acceptance/test_durable_checkpoints.py::test_a_stage_completed_before_a_crash_is_not_run_again \
	tests/acceptance/test_durable_checkpoints.py::test_a_frozen_worker_cannot_record_a_stage_after_another_took_its_job \
	tests/acceptance/test_durable_sleep.py::test_a_sleeping_job_frees_its_slot_and_uses_no_attempt \
	tests/acceptance/test_running_cancels.py::test_a_cancel_told_by_notification_ends_the_running_job_canceled \
	tests/acceptance/test_running_cancels.py::test_a_cancel_told_by_the_heartbeat_ends_the_running_job_canceled \
	tests/acceptance/test_queue_limits_across_workers.py::test_a_global_concurrency_limit_of_2_holds_across_3_workers_of_4_slots \
	tests/acceptance/test_queue_limits_across_workers.py::test_a_rate_limit_of_10_per_second_holds_over_5_seconds \
	tests/acceptance/test_schedule_fleet.py::test_a_worker_stopped_across_several_slots_makes_one_catch_up_job \
	tests/acceptance/test_retention_settings.py \
	tests/admin/test_admin_job_page.py::test_the_job_list_shows_run_at_for_a_live_job_and_finished_for_a_terminal_one \
	tests/admin/test_admin_job_page.py::test_the_job_page_shows_a_succeeded_jobs_result \
	tests/admin/test_admin_queue_page.py::test_the_queues_page_says_a_rate_limit_per_its_period \
	tests/admin/test_admin_queue_page.py::test_the_queues_page_charts_the_jobs_finished_in_the_last_hour \
	tests/admin/test_admin_pages.py::test_the_job_list_shows_state_attempt_and_no_count_query \
	tests/admin/test_admin_pages.py::test_bulk_retry_and_cancel_act_where_the_state_allows

# The second supported line: Django 5.2 LTS on Python 3.12 with the
# django-tasks backport, in its own venv pinned by constraints-django52.txt.
VENV_LTS := .venv-lts
PY_LTS := $(VENV_LTS)/bin/python
STAMP_LTS := $(VENV_LTS)/.installed
# What make test-lts runs: every unit, integration, migration and docs test, the
# Django Tasks, handle and testing-helper tests, and the acceptance tests of
# the core lifecycle (retries, crashes, shutdown, async). The chaos, drain,
# process and connection-loss acceptance tests run on the main line only.
LTS_TESTS ?= tests/unit tests/integration tests/migration tests/docs testproject/shop \
	tests/acceptance/test_django_tasks.py tests/acceptance/test_handles.py \
	tests/acceptance/test_retries.py tests/acceptance/test_crashes.py \
	tests/acceptance/test_shutdown.py tests/acceptance/test_async.py

.PHONY: help test test-pgbouncer test-lts soak demo bench lint fmt schema clean browser browser-for-tests pgbouncer pgbouncer-for-tests

help:
	@echo "make demo    migrate, enqueue sample jobs, run workers and serve the admin"
	@echo "make test    run the test suite (PYTEST_ARGS='-k name' to narrow it)"
	@echo "make test-lts  the LTS_TESTS on Django 5.2 LTS / Python 3.12 (.venv-lts)"
	@echo "make lint    ruff check, ruff format --check and mypy (strict, on django_workhorse/)"
	@echo "make fmt     ruff check --fix and ruff format"
	@echo "make soak    the soak tests at length (SOAK_ROUNDS=200 chaos actions; the"
	@echo "             schedule fleet sweeps for SOAK_ROUNDS seconds)"
	@echo "make bench   run the benchmarks (BENCH_ARGS=... passed on)"
	@echo "make schema  rewrite docs/schema.sql from the migrations (review the diff)"
	@echo "make browser install Debian's chromium for the admin's browser tests (as root;"
	@echo "             make test does this itself when chromium is missing)"
	@echo "make pgbouncer  install Debian's pgbouncer for the tests that run through it"
	@echo "             (as root; make test does this itself when it is missing)"
	@echo "make test-pgbouncer  only PGBOUNCER_TESTS, through PgBouncer"
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

test: $(VENV) browser-for-tests pgbouncer-for-tests
	$(PY) $(COMPILE)
	status=0; $(WITH_DB) $(PY) -m pytest $(XDIST) $(DURATIONS) $(PYTEST_ARGS) || status=$$?; \
	if [ -z "$(strip $(PYTEST_ARGS))" ]; then $(MAKE) --no-print-directory test-pgbouncer || status=1; fi; \
	exit $$status

test-pgbouncer: $(VENV) pgbouncer-for-tests
	$(PY) $(COMPILE)
	WORKHORSE_TEST_PGBOUNCER=1 $(WITH_DB) $(PY) -m pytest $(XDIST) $(DURATIONS) $(PGBOUNCER_TESTS)

$(VENV_LTS): $(STAMP_LTS)

$(STAMP_LTS): pyproject.toml constraints-django52.txt
	@if ! $(PY_LTS) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then \
	    python="$$(PYTHON_MINOR=12 scripts/find_python.sh)"; \
	    echo "creating $(VENV_LTS) with $$python"; \
	    rm -rf $(VENV_LTS); \
	    "$$python" -m venv $(VENV_LTS); \
	fi
	$(PY_LTS) -m pip install --upgrade pip
	$(PY_LTS) -m pip install -c constraints-django52.txt -e '.[test,embedded,tasks-backport]'
	@touch $@

test-lts: $(VENV) $(VENV_LTS)
	$(PY_LTS) $(COMPILE)
	$(WITH_DB) $(PY_LTS) -m pytest $(XDIST) $(DURATIONS) $(LTS_TESTS) $(PYTEST_ARGS)

# The tests marked soak: make test runs each chaos test with 6 actions and
# the schedule fleet (three workers sweeping an every-second schedule) for
# 10 s; this runs them with SOAK_ROUNDS actions, the fleet for as many seconds.
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
	$(VENV)/bin/mypy

# Fix first, then format what the fixes changed; still fail on what is left.
fmt: $(VENV)
	status=0; $(RUFF) check --fix . || status=$$?; $(RUFF) format .; exit $$status

# tests/browser drive a real Chromium through Playwright: Debian's chromium
# package where it can be had (this target installs it, as root), else the
# browser of Playwright's own `playwright install chromium`.
browser:
	@if command -v chromium >/dev/null; then echo "chromium: $$(command -v chromium)"; \
	else apt-get update && apt-get install -y --no-install-recommends chromium; fi

# What make test does first: a chromium on the PATH is used as it is; else
# root installs Debian's, and anyone else gets Playwright's download.
browser-for-tests: $(VENV)
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then $(MAKE) --no-print-directory browser; \
	else $(PY) -m playwright install chromium \
	    || echo "make test: no chromium for tests/browser: run 'make browser' as root" >&2; fi

# The tests through PgBouncer use Debian's pgbouncer (scripts/pgbouncer.py
# starts one per test process, in transaction mode, as any user but root).
pgbouncer:
	@if command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ]; then \
	    echo "pgbouncer: $$(command -v pgbouncer || echo /usr/sbin/pgbouncer)"; \
	else apt-get update && apt-get install -y --no-install-recommends pgbouncer; fi

# What make test does first: root installs Debian's pgbouncer when it is
# missing; anyone else is told how (the tests through it then fail saying so).
pgbouncer-for-tests:
	@if command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then $(MAKE) --no-print-directory pgbouncer; \
	else echo "make test: no pgbouncer for the tests that run through it: run 'make pgbouncer' as root" >&2; fi

clean:
	rm -rf $(VENV) $(VENV_LTS)
