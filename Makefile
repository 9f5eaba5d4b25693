# Build/test entry points. CI runs `bash .ci/run`, which is `make test` in a fresh clone.

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

SPARK_LOCAL_IP ?= 127.0.0.1
export SPARK_LOCAL_IP

.DEFAULT_GOAL := help
.PHONY: help venv java-check run progress browser test clean

help:
	@echo "Targets:"
	@echo "  make venv        create .venv, install the project with the [spark,dev] extras, compile the kernels"
	@echo "  make java-check  check that Java 17 or newer is available (needed by Spark)"
	@echo "  make run         run the WCC job on the bundled sample graph (tfront wcc, 4 epochs)"
	@echo "  make progress    the same with --progress-log, drawn by tfront progress (PNG + HTML in build/)"
	@echo "  make browser     install Debian's chromium for the headless-browser test (apt-get; else says why not)"
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

$(SAMPLE): spark_plugin/jobs/wcc/sample.py | venv
	$(VENV)/bin/python -m spark_plugin.jobs.wcc.sample $@

# The flagship job on the bundled sample graph (generated deterministically), embedded Spark.
run: venv java-check $(SAMPLE)
	rm -rf $(WCC_OUT)
	$(VENV)/bin/tfront wcc $(SAMPLE) --epochs 4 --out $(WCC_OUT)

# The sample job with its progress log, drawn: build/progress.{jsonl,png,html}. While it runs,
# `tfront progress build/progress.jsonl --html build/progress.html --watch` keeps the page live.
PROGRESS := build/progress
progress: venv java-check $(SAMPLE)
	rm -rf $(WCC_OUT)
	$(VENV)/bin/tfront wcc $(SAMPLE) --epochs 4 --out $(WCC_OUT) --progress-log $(PROGRESS).jsonl
	$(VENV)/bin/tfront progress $(PROGRESS).jsonl --png $(PROGRESS).png --html $(PROGRESS).html

# The progress page is tested in a real headless browser (tests/engine/operate/test_progress_view.py), Debian's
# `chromium`. Installed here with apt-get when missing and apt-get can be used (as root, or with
# password-less sudo); otherwise this says why and the browser test is skipped. Never fails.
CHROMIUM_PKG ?= chromium
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		echo "browser: $$(command -v chromium || command -v chromium-browser) found"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "browser: no chromium and no apt-get: the headless-browser test of the progress page will be skipped (install chromium to run it)"; \
	else \
		if [ "$$(id -u)" = 0 ]; then sudo=; \
		elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
		else echo "browser: no chromium, and apt-get needs root (no password-less sudo): the headless-browser test of the progress page will be skipped"; exit 0; fi; \
		echo "browser: installing $(CHROMIUM_PKG) with apt-get (for the headless-browser test of the progress page)"; \
		if DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $(CHROMIUM_PKG) >/dev/null 2>&1 \
		   || { $$sudo apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $(CHROMIUM_PKG) >/dev/null 2>&1; }; then \
			echo "browser: installed $$(command -v chromium || command -v chromium-browser)"; \
		else \
			echo "browser: apt-get could not install $(CHROMIUM_PKG): the headless-browser test of the progress page will be skipped"; \
		fi; \
	fi

test: venv java-check browser
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis spark-warehouse metastore_db derby.log
	find . -path ./.git -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -prune -exec rm -rf {} +
	find . -path ./.git -prune -o \( -name '*.nbi' -o -name '*.nbc' \) -type f -exec rm -f {} +
