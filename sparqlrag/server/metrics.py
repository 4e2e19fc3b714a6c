"""`/metrics` in the Prometheus text format: requests, latencies, SPARQL operations, ingest
progress, LLM calls and tokens.

Each app has its own registry (tests run several apps in one process). Requests are counted
by a pure ASGI middleware, labelled by route template rather than URL, so the number of
series stays bounded. The lower layers keep plain counters (the pipeline's IngestStats, the
LLM's Usage) and know nothing of Prometheus: a collector reads them at each scrape.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from sparqlrag.server.middleware import HttpMiddleware
from sparqlrag.server.state import app_state, state_of

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class _ServicesCollector(Collector):
    """What the running services counted: ingest progress, and LLM calls and tokens."""

    def __init__(self, app: Starlette) -> None:
        self.app = app

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        services = app_state(self.app).opened
        if services is None:  # before startup
            return
        stats = services.pipeline.stats
        documents = CounterMetricFamily(
            "sparqlrag_ingest_documents", "Documents ingested, by outcome", labels=["outcome"]
        )
        for outcome, count in sorted(stats.documents.items()):
            documents.add_metric([outcome], count)
        yield documents
        yield CounterMetricFamily(
            "sparqlrag_ingest_chunks_extracted", "Chunks read by an extractor", value=stats.chunks_extracted
        )
        yield GaugeMetricFamily(
            "sparqlrag_ingest_chunks_pending", "Chunks of running ingests not extracted yet", value=stats.pending
        )
        if services.llm is not None:
            usage, model = services.llm.usage, [services.llm.name]
            tokens = CounterMetricFamily(
                "sparqlrag_llm_tokens", "LLM tokens, by direction", labels=["model", "direction"]
            )
            tokens.add_metric([*model, "input"], usage.input_tokens)
            tokens.add_metric([*model, "output"], usage.output_tokens)
            yield tokens
            calls = CounterMetricFamily("sparqlrag_llm_calls", "LLM calls, by outcome", labels=["model", "outcome"])
            for outcome, count in (("answered", usage.calls), ("cached", usage.cache_hits), ("retried", usage.retries)):
                calls.add_metric([*model, outcome], count)
            yield calls


class Metrics:
    def __init__(self, app: Starlette) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sparqlrag_http_requests",
            "HTTP requests, by route and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "sparqlrag_http_request_duration_seconds",
            "Time to the end of the response",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.sparql_operations = Counter(
            "sparqlrag_sparql_operations",
            "SPARQL queries and updates, by outcome",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.sparql_latency = Histogram(
            "sparqlrag_sparql_duration_seconds",
            "SPARQL evaluation time",
            ["kind"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_ServicesCollector(app))

    @contextmanager
    def sparql(self, kind: str) -> Iterator[None]:
        """Count and time one SPARQL operation ("error" when it raises)."""
        started = time.perf_counter()
        outcome = "error"
        try:
            yield
            outcome = "ok"
        finally:
            self.sparql_operations.labels(kind, outcome).inc()
            self.sparql_latency.labels(kind).observe(time.perf_counter() - started)


class MetricsMiddleware(HttpMiddleware):
    """Counts and times every HTTP request (to the last byte of a streamed answer)."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started, status = time.perf_counter(), 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            metrics, route = app_state(scope["app"]).metrics, getattr(scope.get("route"), "path", None) or "unmatched"
            metrics.requests.labels(scope["method"], route, str(status)).inc()
            metrics.latency.labels(scope["method"], route).observe(time.perf_counter() - started)


async def metrics_endpoint(request: Request) -> Response:
    return Response(generate_latest(state_of(request).metrics.registry), media_type=CONTENT_TYPE_LATEST)
