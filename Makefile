# gwtrace: the two commands a newcomer needs are `make demo` and `make test`.
# `make demo` needs only python3 (>= 3.9, with venv) and bash: no root, no
# apt-get, no npm, so it runs on a shared login node. `make test` also installs
# the test tools (pytest and selenium in the venv, bats-core with npm, Debian's
# chromium, shellcheck, strace, busybox and dash with apt-get as root).

PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
PIP     := $(VENV)/bin/pip
GWTRACE := $(VENV)/bin/gwtrace
TOOLS   := .tools
BATS    := $(TOOLS)/node_modules/bats/bin/bats
STAMP   := $(VENV)/.installed
TSTAMP  := $(VENV)/.installed-test

.PHONY: install install-test accel bashes demo test pytest bats bats-bashes bench lint dist clean spec

SHELL_SOURCES := bash/gwtrace.sh bash/gwtrace-auto*.sh shim/gwtrace_setup.sh examples/*.sh \
                 examples/glidein/*.sh examples/glidein/*/*.sh bench/overhead bench/escaping .ci/run .ci/build-bash .ci/bats-bashes
POSIX_SOURCES := shim/gwtrace-ship-spool shim/gwtrace-job-wrapper

# install: what `make demo` needs; install-test: what `make test` needs.
install: $(STAMP) accel

install-test: $(TSTAMP) $(BATS) $(TOOLS)/.debian

# Debian packages: headless Chromium for the web UI tests, shellcheck for
# `make lint`, strace for the zero-fork tests, busybox and dash for the POSIX
# sh job wrapper tests (CI runs as root).
$(TOOLS)/.debian:
	mkdir -p $(TOOLS)
	command -v chromium >/dev/null && command -v chromedriver >/dev/null && \
	  command -v shellcheck >/dev/null && command -v strace >/dev/null && \
	  command -v busybox >/dev/null && command -v dash >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium chromium-driver shellcheck strace busybox dash >/dev/null; }
	touch $@

# bash/gwtrace-accel.so: the DEBUG traps' common slow paths (functions and
# scripts levels) as bash loadable builtins (docs/shim.md, "The accelerator").
# Optional: without a C compiler the shell code does the same work, slower.
# -std=gnu99: a newer default standard (gcc >= 14 with glibc >= 2.38) binds
# strtol and friends to __isoc23_*@GLIBC_2.38, which EL7-EL9 cannot load;
# -z now: a symbol this bash lacks fails `enable -f` in the load check's child
# bash, never a call in a traced script. ACCEL_EXTRA: tests build variants.
ACCEL := bash/gwtrace-accel.so
ACCEL_SRC := $(wildcard bash/accel/*.c)
ACCEL_CFLAGS := -std=gnu99 -O2 -Wall -Wextra -shared -fPIC -fvisibility=hidden -Wl,-z,now $(ACCEL_EXTRA)
accel: $(ACCEL)

# spec/: the event line and the accelerator's shared names, described once (docs/protocol.md,
# "The description"); the C code's name macros are generated from spec/accel-state.json, and
# tests/test_spec.py checks the producers and the conformance tables against spec/event-line.json.
spec: bash/accel/state_names.h

bash/accel/state_names.h: spec/accel-state.json spec/gen_state_names.py
	$(PYTHON) spec/gen_state_names.py

$(ACCEL): $(ACCEL_SRC) $(wildcard bash/accel/*.h)
	@if command -v $(CC) >/dev/null 2>&1; then \
	  echo "$(CC) $(ACCEL_CFLAGS) -o $@ $(ACCEL_SRC)"; $(CC) $(ACCEL_CFLAGS) -o $@ $(ACCEL_SRC); \
	else echo "no C compiler ($(CC)): gwtrace's auto layer runs without its accelerator"; fi

# The bash versions worker nodes run (EL7 4.2, EL8 4.4, EL9 5.1, Debian 13 5.2, GNU 5.3), built
# once from GNU's sources into .tools/bash-VERSION/bin/bash (`make bashes`, under a minute each on
# 2 cores; .ci/build-bash), and a 5.2 whose `struct variable` has one more field (SKEW_BASH): the
# accelerator's comparison (tests/test_accel.py) and the bats suite run against each
# (GWTRACE_TEST_BASHES); the load check must refuse the skewed one. Without the sources,
# `make bashes` says so in one line.
BASH_SRC ?= ../shared/bash-src
BASH_VERSIONS := $(patsubst $(BASH_SRC)/bash-%.tar.gz,%,$(wildcard $(BASH_SRC)/bash-*.tar.gz))
TEST_BASHES := $(foreach v,$(BASH_VERSIONS),$(CURDIR)/$(TOOLS)/bash-$(v)/bin/bash)
SKEW_BASH := $(if $(filter 5.2.37,$(BASH_VERSIONS)),$(CURDIR)/$(TOOLS)/bash-5.2.37-skew/bin/bash)
bashes: $(TEST_BASHES) $(SKEW_BASH)
	@[ -n "$(TEST_BASHES)" ] || echo "no bash sources in $(BASH_SRC) (bash-VERSION.tar.gz): other bash versions are not tested"

$(CURDIR)/$(TOOLS)/bash-%-skew/bin/bash: $(BASH_SRC)/bash-%.tar.gz .ci/build-bash
	@echo "building bash $* with a skewed struct variable into $(TOOLS)/bash-$*-skew"
	@.ci/build-bash $< $(TOOLS)/bash-$*-skew skew

$(CURDIR)/$(TOOLS)/bash-%/bin/bash: $(BASH_SRC)/bash-%.tar.gz .ci/build-bash
	@echo "building bash $* into $(TOOLS)/bash-$*"
	@.ci/build-bash $< $(TOOLS)/bash-$*

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	touch $@

$(TSTAMP): $(STAMP)
	$(PIP) install --quiet -e '.[test]'
	touch $@

$(BATS):
	mkdir -p $(TOOLS)
	npm install --silent --no-audit --no-fund --prefix $(TOOLS) bats@1.13.0 bats-support@0.3.0 bats-assert@2.2.4 >/dev/null

# the demo's second half reads a factory's Condor-G logs (HTCondor's bindings) and
# draws the accounting picture (matplotlib): the [factory] extra.
$(VENV)/.installed-factory: $(STAMP)
	$(PIP) install --quiet -e '.[factory]'
	touch $@

demo: install $(VENV)/.installed-factory
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash examples/demo.sh

test: install-test bashes lint pytest bats bats-bashes

# GWTRACE_TEST_BASHES: the bash builds tests/test_accel.py (and the tests that read it) check
# against, by default the ones `make bashes` built.
pytest: $(TSTAMP) $(TOOLS)/.debian accel
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" GWTRACE_TEST_BASHES="$${GWTRACE_TEST_BASHES-$(wildcard $(TEST_BASHES))}" \
	  GWTRACE_TEST_SKEW_BASH="$${GWTRACE_TEST_SKEW_BASH-$(wildcard $(SKEW_BASH))}" $(PY) -m pytest -q tests

# twice: with the accelerator (when built; its load check first, as `gwtrace run` does it) and
# with the shell code alone
bats: $(STAMP) $(BATS) accel
	-$(PY) -m gwtrace.shim.accel
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(BATS) bats
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" GWTRACE_ACCEL=0 $(BATS) bats

# once more with each bash version `make bashes` built; bats/known-failures.txt lists what fails
# with some of them today, and why (.ci/bats-bashes)
bats-bashes: $(STAMP) $(BATS) accel bashes
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" .ci/bats-bashes $(BATS) bats/known-failures.txt $(PY) $(wildcard $(TEST_BASHES))

bench: install-test
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash bench/overhead
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash bench/escaping $(wildcard $(TEST_BASHES))
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/throughput
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/serve
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/controller-node
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/faults
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/shim
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/glidein-deployed
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/snapshot
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/controller
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/backfill

# lint-imports: the layers and no cycles (.importlinter, docs/design.md "Layers"); import-linter
# needs Python >= 3.11 (setup.cfg): with an older one the rules are not checked, and it says so.
lint: $(TOOLS)/.debian $(TSTAMP)
	@if [ -x $(VENV)/bin/lint-imports ]; then $(VENV)/bin/lint-imports --no-cache; \
	else echo "lint: import-linter needs Python >= 3.11: the import layers (.importlinter) are not checked with $$($(PY) -V)"; fi
	shellcheck -x $(SHELL_SOURCES)
	shellcheck -s sh $(POSIX_SOURCES)
	shellcheck -s bash bats/*.bats bats/test_helper.bash

# dist/gwtrace-sidecar.pyz: the sidecar as one file for the glidein's file list.
dist: $(STAMP) accel
	$(PY) shim/build_pyz.py

clean:
	rm -rf $(VENV) $(TOOLS) build dist *.egg-info $(ACCEL) bash/gwtrace-accel.d
