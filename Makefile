# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LANCEDB_LOG := error

.PHONY: demo test install clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned first to the CPU build so that resolving `torch>=2.13` never pulls CUDA wheels.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -e ".[test]"
	# hebo 0.3.6 declares numpy<1.25 and GPy, which makes pip backtrack for many minutes; it runs
	# with today's numpy when installed without its declared dependencies beside these.
	$(BIN)/pip install -q "gpytorch==1.15.2" "linear_operator==0.6.1" "pymoo==0.6.0" "disjoint-set==0.9.0"
	$(BIN)/pip install -q --no-deps "hebo==0.3.6"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/agentk demo

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) workspaces/*/
