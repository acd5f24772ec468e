PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench bench-compare clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/memlane demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# LoCoMo retrieval quality (data: ../shared/data/locomo-dev.json, never shipped)
bench-quality: $(STAMP)
	$(BIN)/python benchmarks/quality/locomo.py

bench-compare: $(STAMP)
	$(BIN)/python benchmarks/compare_memsearch.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
