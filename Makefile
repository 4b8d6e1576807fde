# Two entry points: `make demo` (the main job, end to end) and `make test` (the whole suite).
# Everything they need is installed idempotently from pinned versions.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP_PY := $(VENV)/.installed
STAMP_NODE := node_modules/.installed
# Headless Chromium and its driver for the explorer's browser tests: Debian's packages (root here; sudo elsewhere).
BROWSER := /usr/bin/chromedriver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test lint setup clean bench

setup: $(STAMP_PY) $(STAMP_NODE)

$(STAMP_PY): requirements.lock pyproject.toml gensyn_py/crypto/_merkle_native.c gensyn_py/repro/_matmul_native.c gensyn_py/repro/_fused_native.c
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

# `npm install` rather than `npm ci`: the lock holds only this platform's anvil binary
# (npm 11 drops the other platforms' optional packages), which `npm ci` rejects;
# `npm install` still installs exactly the locked versions.
$(STAMP_NODE): package.json package-lock.json
	npm install --no-audit --no-fund --loglevel=error
	@touch $@

# brownie's own virtualenv (tests/integration/test_brownie.py uses it): minutes of pip on a fresh clone, so an
# install step before the suite rather than inside a test's set-up; the script is quick once installed.
BROWNIE := .venv-brownie/.installed
$(BROWNIE): scripts/setup_brownie.sh $(STAMP_NODE)
	bash scripts/setup_brownie.sh
	@touch $@

$(BROWSER):
	@command -v apt-get >/dev/null || { echo "install chromium and its chromedriver (the browser tests need them)"; exit 1; }
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver

demo: setup
	$(VENV)/bin/gensyn demo

# Two workers, one test file each at a time (a file's module fixtures, such as a market, stay in one worker):
# most integration tests wait on chain windows, so the other core runs the CPU-bound ones meanwhile.
test: setup $(BROWNIE) $(BROWSER) lint
	$(PY) -m pytest -q -n 2 --dist loadfile

# Python: ruff, mypy, the import layers (pyproject.toml's importlinter contract);
# Solidity: prettier (prettier-plugin-solidity) and solhint, pinned in package.json.
lint: setup
	$(PY) -m ruff check gensyn_py scripts tests bench examples
	$(PY) -m mypy gensyn_py scripts bench examples
	$(VENV)/bin/lint-imports
	npm run --silent lint:sol

bench: setup
	for b in bench/[a-z]*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache .devnet
