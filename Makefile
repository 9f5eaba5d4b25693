# Build/test entry points. CI runs `bash .ci/run`, which is `make test` in a fresh clone.

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

SPARK_LOCAL_IP ?= 127.0.0.1
export SPARK_LOCAL_IP

.DEFAULT_GOAL := help
.PHONY: help venv java-check run test clean

help:
	@echo "Targets:"
	@echo "  make venv        create .venv, install the project with the [spark,dev] extras, compile the kernels"
	@echo "  make java-check  check that Java 17 or newer is available (needed by Spark)"
	@echo "  make run         run the WCC job on the bundled sample graph (tfront wcc, 4 epochs)"
	@echo "  make test        run the test suite (extra pytest args: PYTEST_ARGS='-k foo')"
	@echo "  make clean       remove .venv, build artefacts and caches"
	@echo "Variables: PYTHON=$(PYTHON) (interpreter used to create .venv)"

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[spark,dev]'
	$(VENV)/bin/python -m engine.jit
	touch $@

# Spark uses $JAVA_HOME/bin/java when JAVA_HOME is set, else `java` on PATH: check the same one.
# `java -version` prints e.g. `openjdk version "17.0.15" 2025-04-15` or `java version "1.8.0_392"`
# (old scheme: major is the second field) on stderr.
java-check:
	@java="$${JAVA_HOME:+$$JAVA_HOME/bin/}java"; \
	msg='Java 17 or newer is needed for Spark: install it with `apt-get install openjdk-17-jre-headless` (Debian/Ubuntu) or `conda install openjdk=17`, or set JAVA_HOME'; \
	if ! command -v "$$java" >/dev/null 2>&1; then \
		echo "java-check: no '$$java' found." >&2; echo "$$msg" >&2; exit 1; \
	fi; \
	ver=$$("$$java" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1); \
	case "$$ver" in \
		1.*) major=$$(echo "$$ver" | cut -d. -f2) ;; \
		*)   major=$$(echo "$$ver" | sed 's/[^0-9].*//') ;; \
	esac; \
	if [ -z "$$major" ] || [ "$$major" -lt 17 ]; then \
		echo "java-check: '$$java' reports version '$${ver:-unknown}' (major $${major:-unknown})." >&2; \
		echo "$$msg" >&2; exit 1; \
	fi; \
	echo "java-check: OK, Java $$major ($$ver) at $$(command -v "$$java")"

SAMPLE := build/sample_edges.txt
WCC_OUT := build/wcc-out

$(SAMPLE): spark_plugin/wcc_sample.py | venv
	$(VENV)/bin/python -m spark_plugin.wcc_sample $@

# The flagship job on the bundled sample graph (generated deterministically), embedded Spark.
run: venv java-check $(SAMPLE)
	rm -rf $(WCC_OUT)
	$(VENV)/bin/tfront wcc $(SAMPLE) --epochs 4 --out $(WCC_OUT)

test: venv java-check
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis spark-warehouse metastore_db derby.log
	find . -path ./.git -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -prune -exec rm -rf {} +
	find . -path ./.git -prune -o \( -name '*.nbi' -o -name '*.nbc' \) -type f -exec rm -f {} +
