# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LANCEDB_LOG := error

.PHONY: demo test test-fast lint install clean autogluon sandbox browser

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned first to the CPU build so that resolving `torch>=2.13` never pulls CUDA wheels.
# For a GPU: `rm -rf .venv && make install TORCH="torch==2.14.1 torchvision==0.29.1"` (PyPI's CUDA builds).
TORCH ?= torch==2.13.0
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e ".[test,ray]"
	# hebo 0.3.6 declares numpy<1.25 and GPy, which makes pip backtrack for many minutes; it runs
	# with today's numpy when installed without its declared dependencies beside these.
	$(BIN)/pip install -q "gpytorch==1.15.2" "linear_operator==0.6.1" "pymoo==0.6.0" "disjoint-set==0.9.0"
	$(BIN)/pip install -q --no-deps "hebo==0.3.6"
	touch $(STAMP)

# Generated code runs inside bubblewrap (agentk/core/isolation.py): Debian's package, installed here when
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

install: $(STAMP) sandbox

demo: $(STAMP) sandbox
	$(BIN)/agentk demo

# The floors (.importlinter) and ruff's checks (pyproject.toml) hold before any test runs.
lint: $(STAMP)
	$(BIN)/python -m ruff check -q .
	$(BIN)/lint-imports --no-cache > $(VENV)/lint-imports.log || { cat $(VENV)/lint-imports.log; exit 1; }

# Everything, as CI runs it.
test: lint sandbox browser
	$(BIN)/python -m pytest -q --durations=25 $(PYTEST_ARGS)

# Unit tests only (a couple of minutes): no solver, run or bench end to end.
test-fast: lint sandbox browser
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
