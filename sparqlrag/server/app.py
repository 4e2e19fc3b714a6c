"""The starlette application: routes, middleware, and the store's lifetime."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sparqlrag import __version__
from sparqlrag.config import Settings
from sparqlrag.operations.access import check_grants
from sparqlrag.operations.failures import Refused
from sparqlrag.server import (
    answers,
    collections,
    documents,
    entities,
    linked_data,
    nl_query,
    ontologies,
    originals,
    pages,
    token_info,
)
from sparqlrag.server.errors import EXCEPTION_HANDLERS, UnexpectedErrors
from sparqlrag.server.graph_store import graph_store
from sparqlrag.server.mcp_endpoint import McpEndpoint
from sparqlrag.server.metrics import Metrics, MetricsMiddleware, metrics_endpoint
from sparqlrag.server.openapi import openapi
from sparqlrag.server.origins import Cors, HostCheck, allowed_hosts
from sparqlrag.server.query_admission import QueryAdmission
from sparqlrag.server.rate_limit import AnswerRateLimit
from sparqlrag.server.request_guard import RequestGuard
from sparqlrag.server.running import running
from sparqlrag.server.security_headers import SecurityHeaders
from sparqlrag.server.sparql import sparql_endpoint
from sparqlrag.server.state import ServerState, app_state, state_of
from sparqlrag.services import Models
from sparqlrag.store.data_dir import scratch_dir
from sparqlrag.threads import off_loop

GSP_METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE"]
WRITES = ["PUT", "DELETE"]


async def healthz(request: Request) -> Response:
    """Liveness: answered without waiting behind running queries (QuadStore.healthy)."""
    if not await off_loop(state_of(request).store.healthy):
        raise Refused(503, "store_unavailable", "the store cannot serve now; see the server log")
    return JSONResponse({"status": "ok", "version": __version__})


def create_app(settings: Settings, models: Models | None = None) -> Starlette:
    """The app; it runs a WorkerStore on settings.data_dir for its lifetime, or speaks to the
    store at settings.store_url. `models` are loaded at startup when not given."""
    check_grants(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with running(settings, models) as services, assistant.lifespan():
            app_state(app).opened = services
            yield

    assistant = McpEndpoint(settings, lambda: app_state(app).services)

    app = Starlette(
        routes=[  # the protocol routes first: the router tries each route in turn
            Route("/sparql", sparql_endpoint, methods=["GET", "POST"]),
            Route("/store", graph_store, methods=GSP_METHODS),
            Route("/store/{path:path}", graph_store, methods=GSP_METHODS),
            Route("/", pages.sparql_editor, methods=["GET", "HEAD"]),
            Route("/ask", pages.ask_page, methods=["GET", "HEAD"]),
            Route("/library", pages.library_page, methods=["GET", "HEAD"]),
            Mount("/static", StaticFiles(directory=pages.STATIC), name="static"),
            Route("/id/{path:path}", linked_data.resource, methods=["GET", "HEAD"]),
            Route("/rel/{path:path}", linked_data.resource, methods=["GET", "HEAD"]),
            Route("/doc/{path:path}", linked_data.resource, methods=["GET", "HEAD"]),
            Route("/stmt/{path:path}", linked_data.resource, methods=["GET", "HEAD"]),
            Route("/trace/{collection}/{id}", answers.trace_resource, methods=["GET", "HEAD"]),
            Route("/page/trace/{collection}/{id}", answers.trace_page, methods=["GET", "HEAD"]),
            Route("/page/{path:path}", linked_data.page, methods=["GET", "HEAD"]),
            Route("/data/{path:path}", linked_data.data, methods=["GET", "HEAD"]),
            Route("/file/{path:path}", originals.original, methods=["GET", "HEAD"]),
            Route("/mcp", assistant, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/api/v1/documents", documents.upload, methods=["POST"]),
            Route("/api/v1/documents", documents.list_documents, methods=["GET"]),
            Route("/api/v1/documents/{id:path}/reingest", documents.reingest, methods=["POST"]),
            Route("/api/v1/documents/{id:path}", documents.get_document, methods=["GET"]),
            Route("/api/v1/documents/{id:path}", documents.delete_document, methods=["DELETE"]),
            Route("/api/v1/document-rag", documents.document_rag, methods=["POST"]),
            Route("/api/v1/graph-rag", answers.graph_rag, methods=["POST"]),
            Route("/api/v1/traces", answers.traces, methods=["GET"]),
            Route("/api/v1/traces/{id}", answers.trace, methods=["GET"]),
            Route("/api/v1/access", token_info.access, methods=["GET"]),
            Route("/api/v1/collections", collections.list_collections, methods=["GET"]),
            Route("/api/v1/collections", collections.create_collection, methods=["POST"]),
            Route("/api/v1/collections/{name}", collections.get_collection, methods=["GET"]),
            Route("/api/v1/collections/{name}", collections.delete_collection, methods=["DELETE"]),
            Route("/api/v1/collections/{name}/core", collections.export_core, methods=["GET"]),
            Route("/api/v1/collections/{name}/core", collections.import_core, methods=["POST"]),
            Route("/api/v1/collections/{name}/entities/aliases", entities.aliases, methods=["GET"]),
            Route("/api/v1/collections/{name}/entities/merge", entities.merge, methods=["POST"]),
            Route("/api/v1/collections/{name}/entities/split", entities.split, methods=["POST"]),
            Route("/api/v1/nl-query", nl_query.nl_query, methods=["POST"]),
            Route("/api/v1/ontologies", ontologies.list_ontologies, methods=["GET"]),
            Route("/api/v1/ontologies", ontologies.upload, methods=["POST"]),
            Route("/api/v1/ontologies/{name}", ontologies.get_ontology, methods=["GET"]),
            Route("/api/v1/ontologies/{name}", ontologies.put, methods=["PUT"]),
            Route("/api/v1/ontologies/{name}", ontologies.delete_ontology, methods=["DELETE"]),
        ],
        middleware=[
            Middleware(MetricsMiddleware),
            Middleware(SecurityHeaders, script_origins=pages.script_origins()),
            Middleware(RequestGuard, body_timeout=settings.body_timeout, send_timeout=settings.send_timeout),
            Middleware(HostCheck, hosts=allowed_hosts(settings)),
            Middleware(
                Cors,
                allow_origins=settings.cors_origins,
                # any site may read; a site may write (PUT, DELETE) only when named in cors_origins
                allow_methods=["GET", "HEAD", "POST", "OPTIONS"] + ([] if "*" in settings.cors_origins else WRITES),
                allow_headers=["*"],
                expose_headers=["Location", "Content-Type"],
            ),
            Middleware(UnexpectedErrors),
        ],
        exception_handlers={**EXCEPTION_HANDLERS, 404: ontologies.published_or_not_found},
        lifespan=lifespan,
    )
    app.state.server = ServerState(
        settings,
        Metrics(app),
        AnswerRateLimit(settings.answer_rate),
        QueryAdmission(settings.max_concurrent_queries, settings.query_crash_budget),
        QueryAdmission(settings.max_concurrent_uploads, 0, "uploads", "max_concurrent_uploads"),
        scratch_dir(settings.data_dir),
    )
    return app
