# ReX-MLE developer entry points. `make demo` and `make test` work on a fresh machine:
# they create .venv, install the package with its dev extras, then run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-agents lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rexmle demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# opt-in: installs AIDE's and ML-Master's environments, runs them through the LLM gateway
test-agents: $(STAMP)
	$(BIN)/python -m pytest -q -m agents tests/agents/test_agents_e2e.py

lint: $(STAMP)
	$(BIN)/ruff format --check rexmle tests bench
	$(BIN)/ruff check rexmle tests bench
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format rexmle tests bench
	$(BIN)/ruff check --fix rexmle tests bench

bench: $(STAMP)
	for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
