# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LANCEDB_LOG := error

.PHONY: demo test test-fast lint install check-install clean autogluon sandbox browser debian bytecode

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned first to the CPU build so that resolving `torch>=2.13` never pulls CUDA wheels.
# For a GPU: `rm -rf .venv && make install TORCH="torch==2.14.1 torchvision==0.29.1"` (PyPI's CUDA builds).
TORCH ?= torch==2.13.0
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e ".[test,ray,hebo]"
	# hebo 0.3.6 declares numpy<1.25 and GPy, which makes pip backtrack for many minutes; it runs
	# with today's numpy when installed without its declared dependencies beside the `hebo` extra's
	# pins. An extra cannot say "without its dependencies", hence this separate step.
	$(BIN)/pip install -q --no-deps "hebo==0.3.6"
	touch $(STAMP)

# Generated code runs inside bubblewrap (agentk/core/sandbox/isolation.py): Debian's package, installed here when
# we may (root with apt); otherwise the run says, loudly, that it has no sandbox.
sandbox:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } \
		|| echo "warning: bubblewrap is not installed (apt-get install bubblewrap); generated code will run without a sandbox"

# The HTML reports are checked in a real browser (tests/browser.py): Debian's chromium, installed
# here when we may; without it those tests fail, saying how to install it.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "warning: chromium is not installed (apt-get install chromium); the report browser tests will fail"

# What the tests need from Debian, with one `apt-get update`. bubblewrap is installed at once (every
# run's sandbox needs it); chromium, which only the report browser tests use, installs in the
# background while the suite runs (CI's minute and a half of apt): tests/browser.py waits for an
# install still running ($(CHROMIUM_PID)), and its log is $(VENV)/chromium-install.log.
CHROMIUM_PID := $(VENV)/chromium-install.pid
debian:
	@missing=""; command -v bwrap >/dev/null || missing="bubblewrap"; command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq; then \
		command -v bwrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null || true; \
		if ! command -v chromium >/dev/null; then \
			mkdir -p $(VENV); \
			nohup sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium' \
				>$(VENV)/chromium-install.log 2>&1 </dev/null & echo $$! >$(CHROMIUM_PID); \
			echo "chromium: installing in the background (log: $(VENV)/chromium-install.log)"; \
		fi; \
	fi
	@$(MAKE) -s --no-print-directory sandbox
	@command -v chromium >/dev/null || [ -s $(CHROMIUM_PID) ] \
		|| echo "warning: chromium is not installed (apt-get install chromium); the report browser tests will fail"

# Our packages' bytecode, written once here: the sandbox mounts the code read-only and sets
# PYTHONDONTWRITEBYTECODE, so without it every stage, probe and solver process of every run compiles
# the modules it imports again (~0.5 s a process).
PACKAGES := agentk setup_pipeline unit_tests_setup solve_pipeline curriculum
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 $(PACKAGES) >/dev/null

install: $(STAMP) sandbox bytecode

# `pip install .` alone (not editable, no extras, so no HEBO) gives a working agentk: a throwaway
# venv gets the CPU torch pin first, as `make install` does, then the package, then solves the demo.
# It installs from a copy of the tree git sees: setuptools builds in the source folder, leaving
# build/ behind and reusing it next time (a file deleted here would still be installed from it).
# --no-compile: byte-compiling all 1.8 GB up front costs minutes; the demo compiles what it imports.
check-install:
	@set -e; dir=$$(mktemp -d /tmp/agentk-check-install.XXXXXX); trap 'rm -rf "$$dir"' EXIT; \
	mkdir "$$dir/src"; git ls-files -z -co --exclude-standard \
		| tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$$dir/src"; \
	$(PY) -m venv "$$dir/venv"; \
	"$$dir/venv/bin/pip" install -q --no-compile $(TORCH); \
	(cd "$$dir/src" && ../venv/bin/pip install -q --no-compile .); \
	(cd "$$dir" && venv/bin/agentk demo --workspace-root workspaces --time-budget 10); \
	test -s "$$dir"/workspaces/*/submissions/submission.csv; \
	grep -h '"tuning_skipped"' "$$dir"/workspaces/*/logs/events.jsonl || true; \
	echo "check-install: a plain pip install solved the demo"

demo: $(STAMP) sandbox bytecode
	$(BIN)/agentk demo

# The floors (.importlinter) and ruff's checks (pyproject.toml) hold before any test runs.
lint: $(STAMP)
	$(BIN)/python -m ruff check -q .
	$(BIN)/lint-imports --no-cache > $(VENV)/lint-imports.log || { cat $(VENV)/lint-imports.log; exit 1; }

# Everything, as CI runs it: two workers (one test module each at a time), then the `solo` tests,
# whose assertions need a core each for their time budget: two modules at a time, with nothing else
# beside them (their solvers run single-threaded BLAS, so one alone left the second core half idle).
# Both parts always run; pytest's 5 (nothing selected, e.g. PYTEST_ARGS naming one file) is a pass.
test: lint debian bytecode
	@status=0; rm -f $(VENV)/test-times.jsonl; export AGENTK_TEST_TIMES=$(CURDIR)/$(VENV)/test-times.jsonl; \
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not solo" --durations=60 $(PYTEST_ARGS) || status=$$?; \
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m solo --durations=10 $(PYTEST_ARGS) || { rc=$$?; [ $$rc = 5 ] || status=$$rc; }; \
	$(BIN)/python tests/times_summary.py $(VENV)/test-times.jsonl; \
	[ $$status = 5 ] && status=0; exit $$status

# Unit tests only (a couple of minutes): no solver, run or bench end to end.
test-fast: lint debian bytecode
	$(BIN)/python -m pytest -q -m "not integration" $(PYTEST_ARGS)

# `agentk bench` rival: AutoGluon in its own venv, because its numpy/pandas/scikit-learn pins clash
# with ours. The local CPU torch goes in first so that no extra pulls CUDA wheels. No fastai extra:
# it pulls torchvision (no CPU build here) and spacy; AutoGluon's NeuralNetTorch covers neural nets.
AG_VENV := .venv-autogluon
autogluon: $(AG_VENV)/.installed

$(AG_VENV)/.installed:
	$(PY) -m venv $(AG_VENV)
	echo '*' > $(AG_VENV)/.gitignore  # keeps the venv out of git without touching .gitignore
	$(AG_VENV)/bin/pip install -q --upgrade pip
	$(AG_VENV)/bin/pip install -q "torch==2.13.0"
	$(AG_VENV)/bin/pip install -q "autogluon.tabular[lightgbm,catboost,xgboost]==1.6.*"
	touch $(AG_VENV)/.installed

clean:
	rm -rf $(VENV) workspaces/*/
