# loopsight: `make run` starts everything with demo traffic; `make test` runs the suite.
# Both create .venv and install the project on a fresh machine.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
FAST   := not subprocess and not browser and not chdb
# two workers, a test file per worker at a time (module fixtures stay in one process): the
# subprocess and browser tests wait on their processes half the time (5 min instead of 9 here)
XDIST  := -n 2 --dist loadfile

.PHONY: run test test-fast test-wheel lint install browser bench record-frameworks clean

$(STAMP): pyproject.toml constraints.txt hatch_build.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]' -c constraints.txt
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the real-browser dashboard tests (Playwright drives it; it cannot
# download browsers here). Needs root; elsewhere the browser tests skip and say why.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "note: /usr/bin/chromium missing and not root: the browser tests will be skipped"; \
	  fi; \
	fi

run: $(STAMP)
	$(PY) -m loopsight up --demo

# ruff (lint and format) and mypy over the package as the wheel lays it out.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) .ci/typecheck.py

# The whole suite (the wheel test included).
test: $(STAMP) browser
	$(PY) -m pytest $(XDIST)

# What needs no process, browser or chdb: under two minutes.
test-fast: $(STAMP)
	LOOPSIGHT_TEST_FAST=1 $(PY) -m pytest -m "$(FAST)" -q $(XDIST)

# Build the sdist and wheel, install the wheel with [all] in a fresh venv, run it.
test-wheel: $(STAMP)
	$(PY) -m pytest -m wheel tests/packaging -q

bench: $(STAMP)
	$(PY) bench/run_all.py

# Re-record tests/frameworks/recordings: one venv per framework from recorder/pins/ (under
# RECORDER_VENVS, default .recorder-venvs/), each real framework driven against the scripted model
# server. Not part of `make test`, which replays the committed recordings.
record-frameworks: $(STAMP)
	$(PY) recorder/record.py $(if $(RECORDER_VENVS),--venvs $(RECORDER_VENVS),)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache test-artifacts
