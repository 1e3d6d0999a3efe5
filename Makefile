# Two commands do all the set-up: `make demo` and `make test`.
# Each creates or refreshes .venv, installs lakenorm with the locked versions of constraints.txt, resolves Delta's
# jars from Maven Central into .lakenorm/jars once, then does its job. Later runs download nothing and work offline.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The exact set every install below uses (pyproject.toml has the ranges): `make lock` writes it again.
CONSTRAINTS := constraints.txt
PIP_INSTALL := $(PY) -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS)
# The test extras (dlt, DuckDB, moto, singer-sdk, polars, uv: the peers and services the tests and the stack run),
# the docs extra (MkDocs + Material: the suite builds the docs strictly) and the stack's (dagster-postgres):
# `make test` installs them, `make demo` does not need them (it installs lakenorm with Dagster's UI).
TEST_STAMP := $(VENV)/.installed-test
JARS := .lakenorm/jars/jars.txt
# hadoop-aws + the AWS SDK bundle (~690 MB) for s3a:// locations: the tests need them, the demo does not.
S3_JARS := .lakenorm/jars/s3/jars.txt
# Apache Hive's metastore server and the Hive client Spark talks to it with (~350 MB): the stack's catalog.
METASTORE_JARS := .lakenorm/jars/metastore/jars.txt
# The driver JVM's class archive (~200 MB): Spark's and Delta's classes as a recorded run loaded them, so a cold
# JVM maps them instead of loading and verifying them (normalization_core/runtime/class_archive.py). ~1 min, once.
CLASSES := .lakenorm/jars/jvm-classes.json
export LAKENORM_JARS_DIR := $(CURDIR)/.lakenorm/jars
export DAGSTER_HOME := $(CURDIR)/.lakenorm/dagster_home

BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: lock demo test test-fast ui screenshots bench bench-small clean stack-up stack-down stack-demo stack-status docs docs-serve

demo: $(STAMP) $(JARS) $(CLASSES)
	$(VENV)/bin/lakenorm demo --root .lakenorm

# Two worker processes, each with its own SparkSession; a test module stays on one worker.
test: $(TEST_STAMP) $(JARS) $(S3_JARS) $(METASTORE_JARS) $(CLASSES)
	$(PY) -m pytest -n 2 --dist loadscope --no-loadscope-reorder --durations=25

test-fast: $(TEST_STAMP) $(JARS) $(S3_JARS) $(CLASSES)
	$(PY) -m pytest -m "not slow"

# 1M nested orders (generated once under bench/out): bare copy, plain-Spark floor, lakenorm, then real dlt
# and DuckDB on the same files. See BENCHMARKS.md.
bench: $(BENCH_STAMP) $(JARS) $(CLASSES)
	$(PY) bench/bench_normalize.py --packages 10 --orders 100000 --files 2 --out bench/out --floor --peers

# A small load (3 streams x 1,000 records): lakenorm cold and warm beside real dlt and DuckDB.
bench-small: $(BENCH_STAMP) $(JARS) $(CLASSES)
	$(PY) bench/bench_small.py

# Started from inside $(DAGSTER_HOME): `dagster dev` warns when the working folder holds a dagster.yaml
# (the repository's template, copied there by `make demo`) that is not DAGSTER_HOME's. The demo's configuration
# names a local engine (`spark: {remote: sc://...}`): it is started first and every run is its client; an engine
# started here is stopped when `dagster dev` ends (Ctrl-C), one that was already running is left running.
UI_CONFIG := $(CURDIR)/.lakenorm/lakenorm.yaml
LAKENORM := $(CURDIR)/$(VENV)/bin/lakenorm --config $(UI_CONFIG)
ui: $(STAMP) $(JARS) $(CLASSES)
	mkdir -p $(DAGSTER_HOME) && test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/
	test -f $(UI_CONFIG) || { echo "no $(UI_CONFIG): run make demo first" >&2; exit 1; }
	engine=$$($(LAKENORM) engine start --if-remote) || exit 1; echo "$$engine"; \
	case "$$engine" in "engine: started"*) trap '$(LAKENORM) engine stop' EXIT; trap 'exit 130' INT TERM;; esac; \
	cd $(DAGSTER_HOME) && LAKENORM_CONFIG=$(UI_CONFIG) $(CURDIR)/$(VENV)/bin/dagster dev -w $(CURDIR)/workspace.yaml

# The whole deployment on this machine, every service on loopback (deploy/README.md): PostgreSQL, an S3 server,
# a Spark master and 2 workers, dagster-daemon and dagster-webserver. State, pids and logs in .lakenorm/stack.
stack-up: $(TEST_STAMP) $(JARS) $(S3_JARS) $(METASTORE_JARS) $(CLASSES)
	$(PY) -m deploy.stack up

stack-demo: $(TEST_STAMP) $(JARS) $(S3_JARS) $(CLASSES)
	$(PY) -m deploy.stack demo

stack-status: $(STAMP)
	$(PY) -m deploy.stack status

stack-down: $(STAMP)
	$(PY) -m deploy.stack down

# The documentation site (mkdocs.yml, docs/): built strictly into site/ (a broken link or a page missing from the
# navigation fails); the reference pages are generated from the code by docs/hooks/reference.py.
DOCS_STAMP := $(VENV)/.installed-docs
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# The Dagster pictures of the README and the docs site (docs/*.png): a fresh demo in a temporary folder, dagster-webserver on loopback,
# Debian's Chromium (`apt-get install chromium`: /usr/bin/chromium) driven by playwright-core. Not part of `make test`.
screenshots: $(STAMP) $(JARS)
	test -x /usr/bin/chromium || { echo "needs Debian's chromium: apt-get install chromium" >&2; exit 1; }
	npm ci --prefix docs/screenshots --no-audit --no-fund
	$(PY) docs/make_screenshots.py --out docs

$(STAMP): pyproject.toml $(CONSTRAINTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -e ".[ui]"
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(PIP_INSTALL) -e ".[test,docs,deploy]"
	touch $(TEST_STAMP)

$(DOCS_STAMP): $(STAMP)
	$(PIP_INSTALL) -e ".[docs]"
	touch $(DOCS_STAMP)

$(BENCH_STAMP): $(STAMP)
	$(PIP_INSTALL) -e ".[test,bench]"
	touch $(BENCH_STAMP)

# constraints.txt again from the newest versions pyproject.toml's ranges allow (every extra), resolved in a
# venv of its own; then `make test` installs and tests them. Needs the package registry.
LOCK_VENV := .lakenorm/lock-venv
lock:
	rm -rf $(LOCK_VENV) && $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --disable-pip-version-check -e ".[ui,deploy,test,docs,bench]"
	{ sed -n '/^#/p;/^#/!q' $(CONSTRAINTS); $(LOCK_VENV)/bin/pip freeze --all --exclude-editable | grep -v '^pip=='; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS) && rm -rf $(LOCK_VENV)

$(JARS): $(STAMP)
	$(PY) -m normalization_core.runtime.jars

$(S3_JARS): $(STAMP)
	$(PY) -m normalization_core.runtime.jars --s3

$(METASTORE_JARS): $(STAMP)
	$(PY) -m deploy.metastore_jars

$(CLASSES): $(JARS) $(STAMP)
	$(PY) -m lakenorm_app.record_classes && touch $(CLASSES)

clean:
	rm -rf $(VENV) .lakenorm .pytest_cache site
