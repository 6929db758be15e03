# loopsight: `make run` starts everything with demo traffic; `make test` runs the suite.
# Both create .venv and install the project on a fresh machine.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.PHONY: run test install browser bench clean record-frameworks

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e '.[dev]' -c constraints.txt
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the real-browser dashboard test (Playwright drives it; it cannot
# download browsers here). Needs root; elsewhere the browser test skips and says why.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "note: /usr/bin/chromium missing and not root: the browser test will be skipped"; \
	  fi; \
	fi

run: $(STAMP)
	$(PY) -m loopsight up --demo

test: $(STAMP) browser
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) bench/run_all.py

# Re-record tests/frameworks/recordings: one venv per framework from recorder/pins/ (under
# RECORDER_VENVS, default .recorder-venvs/), each real framework driven against the scripted model
# server. Not part of `make test`, which replays the committed recordings.
record-frameworks: $(STAMP)
	$(PY) recorder/record.py $(if $(RECORDER_VENVS),--venvs $(RECORDER_VENVS),)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache test-artifacts
